"""e-CRLV requests and a vehicle's e-CRLV view (spec 4.3, 4.4)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import requests

from fleet.api.client import FleetClient
from fleet.api.errors import InvalidResponse, NotFound
from fleet.api.resources import CrlvStatus
from tests.api.conftest import seeded_crlv_requests
from tests.conftest import Emulator

ROUTE = "/v2/crlv/requests/{requestId}"


def _seeded(emulator: Emulator) -> dict[str, dict[str, str]]:
    """The emulator's seeded requests, one per status."""
    return {r["status"]: r for r in seeded_crlv_requests(emulator)}


@pytest.mark.emulator_mode("normal")  # ids, dates and the link's expiry are not promised (2.4)
def test_a_completed_request_has_a_fresh_downloadable_document(
    emulator: Emulator, client: FleetClient
) -> None:
    seeded = _seeded(emulator)["completed"]
    result = client.get_crlv_request(seeded["id"])
    assert result.status is CrlvStatus.COMPLETED
    assert (result.request_id, result.plate) == (seeded["id"], seeded["plate"])
    assert result.failure is None
    assert result.document is not None
    assert result.document.expires_at is not None
    assert result.document.expires_at.tzinfo is not None
    assert result.updated_at is not None
    assert result.created_at is not None
    # A fresh link on every call: one hour from the emulator's now, not from completion.
    now = datetime.fromisoformat(emulator.control("GET", "clock")["now"])
    assert abs(result.document.expires_at - (now + timedelta(hours=1))) < timedelta(seconds=5)
    assert result.document.download_url is not None
    pdf = requests.get(result.document.download_url, timeout=5)
    assert pdf.status_code == 200
    assert pdf.content.startswith(b"%PDF-")


def test_every_call_returns_a_new_download_url(emulator: Emulator, client: FleetClient) -> None:
    request_id = _seeded(emulator)["completed"]["id"]
    first = client.get_crlv_request(request_id).document
    second = client.get_crlv_request(request_id).document
    assert first is not None
    assert second is not None
    assert first.download_url != second.download_url


def test_the_download_url_stays_out_of_the_repr(emulator: Emulator, client: FleetClient) -> None:
    result = client.get_crlv_request(_seeded(emulator)["completed"]["id"])
    assert result.document is not None
    assert result.document.download_url is not None
    assert result.document.download_url not in repr(result)


def test_a_failed_request_has_a_public_failure(emulator: Emulator, client: FleetClient) -> None:
    result = client.get_crlv_request(_seeded(emulator)["failed"]["id"])
    assert result.status is CrlvStatus.FAILED
    assert result.document is None
    assert result.failure is not None
    assert result.failure.code == "DETRAN_UNAVAILABLE"
    assert result.failure.message


@pytest.mark.parametrize("status", ["pending", "in_progress"])
def test_an_unfinished_request_has_neither_document_nor_failure(
    emulator: Emulator, client: FleetClient, status: str
) -> None:
    result = client.get_crlv_request(_seeded(emulator)[status]["id"])
    assert result.status == status
    assert not result.status.is_final
    assert (result.document, result.failure) == (None, None)


def test_a_request_moves_with_the_emulator_clock(emulator: Emulator, client: FleetClient) -> None:
    plate = emulator.vehicles()[5]["car_plate"]
    # A minute each: the emulator's clock ticks, and a slow machine must not skip a state.
    created = emulator.create_crlv_request(plate, pending_seconds=60, in_progress_seconds=60)
    request_id = created["requestId"]
    assert client.get_crlv_request(request_id).status is CrlvStatus.PENDING
    emulator.advance(61)
    assert client.get_crlv_request(request_id).status is CrlvStatus.IN_PROGRESS
    emulator.advance(60)
    done = client.get_crlv_request(request_id)
    assert done.status is CrlvStatus.COMPLETED
    assert done.status.is_final
    assert done.document is not None


def test_a_created_request_can_fail(emulator: Emulator, client: FleetClient) -> None:
    plate = emulator.vehicles()[6]["car_plate"]
    created = emulator.create_crlv_request(
        plate, outcome="failed", pending_seconds=0, in_progress_seconds=0
    )
    result = client.get_crlv_request(created["requestId"])
    assert result.status is CrlvStatus.FAILED
    assert result.failure is not None


def test_document_members_are_read_under_either_name(
    emulator: Emulator, client: FleetClient
) -> None:
    emulator.fault(
        ROUTE,
        body={
            "requestId": "r-1",
            "carPlate": "ABC1D23",
            "status": "completed",
            "document": {"url": "https://files.example/x.pdf", "expiresAt": "2026-11-22T11:00:30Z"},
            "somethingNew": True,
        },
    )
    result = client.get_crlv_request("r-1")
    assert result.document is not None
    assert result.document.download_url == "https://files.example/x.pdf"
    assert result.document.expires_at == datetime(2026, 11, 22, 11, 0, 30, tzinfo=UTC)


def test_missing_ids_are_filled_from_the_call(emulator: Emulator, client: FleetClient) -> None:
    emulator.fault(ROUTE, body={"status": "pending", "carPlate": "ABC1D23"})
    assert client.get_crlv_request("asked-id").request_id == "asked-id"


@pytest.mark.parametrize(
    "body",
    [
        {"requestId": "r", "carPlate": "P", "status": "archived"},
        {"requestId": "r", "carPlate": "P"},
        {"requestId": "r", "carPlate": "P", "status": "completed", "document": "x.pdf"},
        {"status": "failed", "failure": ["DETRAN"]},
        {"status": "pending", "document": 7},
    ],
    ids=[
        "unknown status",
        "no status",
        "document neither an object nor a link",
        "failure neither an object nor text",
        "document a number",
    ],
)
def test_a_malformed_crlv_request_is_an_invalid_response(
    emulator: Emulator, client: FleetClient, body: dict[str, Any]
) -> None:
    emulator.fault(ROUTE, body=body)
    with pytest.raises(InvalidResponse) as raised:
        client.get_crlv_request("r")
    assert raised.value.route == ROUTE


def test_malformed_crlv_answer_is_an_invalid_response(
    emulator: Emulator, client: FleetClient
) -> None:
    emulator.fault(ROUTE, malformed=True)
    with pytest.raises(InvalidResponse):
        client.get_crlv_request(_seeded(emulator)["pending"]["id"])


# --- The vehicle view -------------------------------------------------------------


def test_vehicle_view_has_latest_and_in_progress_when_they_exist(
    emulator: Emulator, client: FleetClient
) -> None:
    plate = emulator.vehicles()[7]["car_plate"]
    emulator.create_crlv_request(plate, pending_seconds=0, in_progress_seconds=0)
    emulator.create_crlv_request(plate, pending_seconds=60)
    view = client.get_vehicle_crlv(plate)
    assert view.plate == plate
    assert view.latest is not None
    assert view.latest.status is CrlvStatus.COMPLETED
    assert view.latest.document is not None
    assert view.in_progress is not None
    assert view.in_progress.status is CrlvStatus.PENDING


def test_vehicle_without_crlv_has_neither(emulator: Emulator, client: FleetClient) -> None:
    known = {r["plate"] for r in seeded_crlv_requests(emulator)}
    plate = next(v["car_plate"] for v in emulator.vehicles() if v["car_plate"] not in known)
    view = client.get_vehicle_crlv(plate)
    assert (view.plate, view.latest, view.in_progress) == (plate, None, None)


def test_plate_is_matched_ignoring_case_and_hyphen(emulator: Emulator, client: FleetClient) -> None:
    plate = emulator.vehicles()[0]["car_plate"]
    asked = f"{plate[:3].lower()}-{plate[3:]}"
    view = client.get_vehicle_crlv(asked)  # found: not a NotFound
    # The plate in the answer is not promised (2.5): without it, the one asked for.
    assert view.plate == (asked if emulator.minimal else plate)


def test_plate_not_in_the_fleet_is_not_found(client: FleetClient) -> None:
    with pytest.raises(NotFound):
        client.get_vehicle_crlv("ZZZ0Z00")


def test_vehicle_view_in_snake_case_is_read_too(emulator: Emulator, client: FleetClient) -> None:
    emulator.fault(
        "/v2/crlv/vehicles/{carPlate}",
        body={"plate": "ABC1D23", "in_progress": {"request_id": "r-2", "status": "in_progress"}},
    )
    view = client.get_vehicle_crlv("ABC1D23")
    assert view.latest is None
    assert view.in_progress is not None
    assert (view.in_progress.request_id, view.in_progress.plate) == ("r-2", "ABC1D23")
