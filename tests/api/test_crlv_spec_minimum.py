"""e-CRLV answers read as the spec promises them (2.4, 2.5), never more.

Only `status` is promised on a request, `document` (with a PDF link) when
completed and `failure` (a public code and message) when failed; every other
member, and the names inside `document` and `failure` and of the vehicle
view's two parts, are "not shown". Each answer here is served by the real
emulator (a fault with a body) and read by the real client.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from fleet.api.client import FleetClient
from fleet.api.resources import CrlvStatus
from tests.conftest import Emulator

REQUEST = "/v2/crlv/requests/{requestId}"
VIEW = "/v2/crlv/vehicles/{carPlate}"
LINK = "https://docs.example.com/crlv/abc.pdf?sig=1"


def read_request(emulator: Emulator, client: FleetClient, body: dict[str, Any]) -> Any:
    emulator.fault(REQUEST, body=body)
    return client.get_crlv_request("asked-id")


def read_view(emulator: Emulator, client: FleetClient, body: dict[str, Any]) -> Any:
    emulator.fault(VIEW, body=body)
    return client.get_vehicle_crlv("ABC1D23")


def test_a_status_alone_is_a_whole_request(emulator: Emulator, client: FleetClient) -> None:
    result = read_request(emulator, client, {"status": "pending"})

    assert result.status is CrlvStatus.PENDING
    assert result.request_id == "asked-id"  # the one the caller asked for
    assert (result.plate, result.created_at, result.updated_at) == (None, None, None)


@pytest.mark.parametrize(
    "name", ["downloadUrl", "url", "download_url", "pdfUrl", "pdf_url", "link", "href", "arquivo"]
)
def test_the_document_link_is_found_under_any_likely_name(
    emulator: Emulator, client: FleetClient, name: str
) -> None:
    # `arquivo`: a name nobody listed, found as the document's only web link.
    result = read_request(emulator, client, {"status": "completed", "document": {name: LINK}})

    assert result.document is not None
    assert result.document.download_url == LINK


def test_a_document_that_is_the_link_itself_is_read(
    emulator: Emulator, client: FleetClient
) -> None:
    result = read_request(emulator, client, {"status": "completed", "document": LINK})

    assert result.document is not None
    assert result.document.download_url == LINK


def test_a_document_without_a_readable_link_is_kept_without_one(
    emulator: Emulator, client: FleetClient
) -> None:
    body = {"status": "completed", "document": {"size": 1, "a": LINK, "b": LINK + "2"}}

    result = read_request(emulator, client, body)

    assert result.status is CrlvStatus.COMPLETED
    assert result.document is not None
    assert result.document.download_url is None  # two links: which is the PDF is a guess


@pytest.mark.parametrize(
    ("failure", "code", "message"),
    [
        ({"code": "D1", "message": "m"}, "D1", "m"),
        ({"publicCode": "D2", "publicMessage": "m2"}, "D2", "m2"),
        ({"errorCode": "D3", "description": "m3"}, "D3", "m3"),
        ({"message": "only a message"}, None, "only a message"),
        ({"errorCode": 42}, "42", None),
        ({}, None, None),
        ("O DETRAN não respondeu", None, "O DETRAN não respondeu"),
    ],
    ids=["code/message", "public*", "errorCode/description", "no code", "number", "empty", "text"],
)
def test_a_failure_is_read_under_any_likely_name_or_none(
    emulator: Emulator, client: FleetClient, failure: Any, code: Any, message: Any
) -> None:
    result = read_request(emulator, client, {"status": "failed", "failure": failure})

    assert result.failure is not None
    assert (result.failure.code, result.failure.message) == (code, message)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-11-22T10:00:30Z", datetime(2026, 11, 22, 10, 0, 30, tzinfo=UTC)),
        ("2026-11-22T07:00:30-03:00", datetime(2026, 11, 22, 10, 0, 30, tzinfo=UTC)),
        ("2026-11-22 10:00:30", datetime(2026, 11, 22, 10, 0, 30, tzinfo=UTC)),
        (1795341630, datetime(2026, 11, 22, 10, 0, 30, tzinfo=UTC)),
        (1795341630000, datetime(2026, 11, 22, 10, 0, 30, tzinfo=UTC)),
        # As a Brazilian writes it: Brasília time (UTC-3).
        ("22/11/2026 10:00", datetime(2026, 11, 22, 13, 0, tzinfo=UTC)),
        ("yesterday", None),
        (True, None),
        ({"at": 1}, None),
    ],
)
def test_dates_are_read_in_the_usual_spellings_or_left_out(
    emulator: Emulator, client: FleetClient, value: Any, expected: Any
) -> None:
    result = read_request(emulator, client, {"status": "pending", "createdAt": value})

    assert result.created_at == expected


# --- The vehicle view's two parts (2.5): names not shown ------------------------------


@pytest.mark.parametrize("latest", ["latest", "lastIssued", "latestIssued", "current"])
@pytest.mark.parametrize("in_progress", ["inProgress", "in_progress", "pending", "request"])
def test_the_two_parts_are_read_under_any_likely_name(
    emulator: Emulator, client: FleetClient, latest: str, in_progress: str
) -> None:
    body = {
        latest: {"status": "completed", "document": {"url": LINK}},
        in_progress: {"status": "in_progress"},
        "revision": 3,
    }

    view = read_view(emulator, client, body)

    assert view.latest is not None
    assert view.latest.status is CrlvStatus.COMPLETED
    assert view.in_progress is not None
    assert view.in_progress.status is CrlvStatus.IN_PROGRESS
    # No id, no plate, no date promised: the parts stand without them.
    assert view.in_progress.request_id is None
    assert view.plate == "ABC1D23"  # the plate asked for
    assert not view.is_unreadable


def test_parts_without_a_status_take_the_one_their_name_says(
    emulator: Emulator, client: FleetClient
) -> None:
    view = read_view(emulator, client, {"latest": {"document": {"url": LINK}}, "pending": {}})

    assert view.latest is not None
    assert view.latest.status is CrlvStatus.COMPLETED
    assert view.in_progress is not None
    assert view.in_progress.status is CrlvStatus.IN_PROGRESS


def test_a_view_with_only_unknown_scalar_members_means_none_exists(
    emulator: Emulator, client: FleetClient
) -> None:
    view = read_view(emulator, client, {"revision": 3, "links": ["a"], "meta": {"v": 1}})

    assert (view.latest, view.in_progress) == (None, None)
    assert not view.is_unreadable


def test_parts_under_unknown_names_are_named_not_lost(
    emulator: Emulator, client: FleetClient
) -> None:
    body = {"ultimoEmitido": {"status": "completed"}, "dados": {"latest": {}}, "revision": 1}

    view = read_view(emulator, client, body)

    assert (view.latest, view.in_progress) == (None, None)
    assert view.is_unreadable
    assert view.unrecognised == ("dados", "ultimoEmitido")
    assert view.members == ("dados", "revision", "ultimoEmitido")
