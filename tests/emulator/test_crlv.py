"""e-CRLV routes: request status (spec 4.3, 2.4), vehicle view (4.4, 2.5), PDF links (8)."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

import pytest
import requests

from tests.conftest import Emulator
from tests.emulator.support import UUID_PATTERN, Api, auth_headers

STATES = ("pending", "in_progress", "completed", "failed")


def seeded(emulator: Emulator) -> dict[str, dict[str, Any]]:
    """The seeded request in each state, by state."""
    return {request["status"]: request for request in emulator.control("GET", "crlv/requests")}


def status_of(api: Api, request_id: str) -> dict[str, Any]:
    response = api.get(f"/v2/crlv/requests/{request_id}")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def pdf_url(api: Api, request_id: str) -> str:
    url: str = status_of(api, request_id)["document"]["downloadUrl"]
    return url


def test_one_seeded_request_in_each_state(emulator: Emulator) -> None:
    requests_by_state = seeded(emulator)

    assert set(requests_by_state) == set(STATES)
    for request in requests_by_state.values():
        assert re.fullmatch(UUID_PATTERN, request["requestId"])


def test_seeded_states_hold_for_an_hour(api: Api, emulator: Emulator) -> None:
    emulator.advance(3600)

    for state, request in seeded(emulator).items():
        assert status_of(api, request["requestId"])["status"] == state


@pytest.mark.parametrize("state", STATES)
def test_status_answers_the_request_in_its_state(api: Api, emulator: Emulator, state: str) -> None:
    request = seeded(emulator)[state]

    body = status_of(api, request["requestId"])

    assert body["status"] == state
    assert body["requestId"] == request["requestId"]
    assert body["carPlate"] == request["carPlate"]


@pytest.mark.parametrize("state", STATES)
def test_document_only_when_completed_and_failure_only_when_failed(
    api: Api, emulator: Emulator, state: str
) -> None:
    body = status_of(api, seeded(emulator)[state]["requestId"])

    assert ("document" in body) == (state == "completed")
    assert ("failure" in body) == (state == "failed")


def test_a_completed_request_carries_an_absolute_pdf_url(api: Api, emulator: Emulator) -> None:
    document = status_of(api, seeded(emulator)["completed"]["requestId"])["document"]

    url = urlsplit(document["downloadUrl"])
    assert url.scheme == "http"
    assert f"http://{url.netloc}" == emulator.url
    assert url.path.endswith(".pdf")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", document["expiresAt"])


def test_the_pdf_url_follows_the_host_the_client_used(api: Api, emulator: Emulator) -> None:
    request_id = seeded(emulator)["completed"]["requestId"]
    headers = {**auth_headers(), "Host": "fleet.example.test:8443"}

    body = api.get(f"/v2/crlv/requests/{request_id}", headers=headers).json()

    assert body["document"]["downloadUrl"].startswith("http://fleet.example.test:8443/files/crlv/")


def test_a_failed_request_carries_a_public_code_and_message(api: Api, emulator: Emulator) -> None:
    failure = status_of(api, seeded(emulator)["failed"]["requestId"])["failure"]

    assert isinstance(failure["code"], str)
    assert failure["code"]
    assert isinstance(failure["message"], str)
    assert failure["message"]


def test_status_moves_with_the_clock(api: Api, emulator: Emulator) -> None:
    plate = emulator.vehicles()[10]["car_plate"]
    # A minute each: the emulator's clock ticks, and a slow machine must not skip a state.
    created = emulator.create_crlv_request(plate, pending_seconds=60, in_progress_seconds=60)
    seen = [status_of(api, created["requestId"])["status"]]
    for seconds in (60, 60):
        emulator.advance(seconds)
        seen.append(status_of(api, created["requestId"])["status"])

    assert seen == ["pending", "in_progress", "completed"]


def test_a_request_can_end_failed(api: Api, emulator: Emulator) -> None:
    plate = emulator.vehicles()[10]["car_plate"]
    created = emulator.create_crlv_request(plate, outcome="failed")

    emulator.advance(16)

    body = status_of(api, created["requestId"])
    assert body["status"] == "failed"
    assert "failure" in body
    assert "document" not in body


def test_updated_at_follows_the_transitions(api: Api, emulator: Emulator) -> None:
    plate = emulator.vehicles()[10]["car_plate"]
    created = emulator.create_crlv_request(plate)
    emulator.advance(6)

    body = status_of(api, created["requestId"])

    assert body["status"] == "in_progress"
    assert body["updatedAt"] > body["createdAt"]


@pytest.mark.parametrize(
    "request_id",
    ["3f2a0c1e-0000-4000-8000-000000000000", "not-a-uuid", "..%2F..%2Fkey%2Flist-cars"],
)
def test_an_unknown_request_is_not_found(api: Api, request_id: str) -> None:
    response = api.get(f"/v2/crlv/requests/{request_id}")

    assert response.status_code == 404
    assert response.json()["type"] == "urn:fleet-api-v2:error:not-found"


def test_the_request_id_is_matched_in_any_case(api: Api, emulator: Emulator) -> None:
    request_id = seeded(emulator)["pending"]["requestId"]

    assert status_of(api, request_id.upper())["requestId"] == request_id


# Vehicle view (4.4, 2.5)


def view(api: Api, plate: str) -> dict[str, Any]:
    response = api.get(f"/v2/crlv/vehicles/{plate}")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def test_view_with_neither_latest_nor_in_progress(api: Api, emulator: Emulator) -> None:
    plate = emulator.vehicles()[10]["car_plate"]

    body = view(api, plate)

    assert body["carPlate"] == plate
    assert "latest" not in body
    assert "inProgress" not in body


def test_view_with_only_the_latest_issued(api: Api, emulator: Emulator) -> None:
    body = view(api, seeded(emulator)["completed"]["carPlate"])

    assert body["latest"]["status"] == "completed"
    assert body["latest"]["document"]["downloadUrl"].endswith(".pdf")
    assert "inProgress" not in body


@pytest.mark.parametrize("state", ["pending", "in_progress"])
def test_view_with_only_a_request_in_progress(api: Api, emulator: Emulator, state: str) -> None:
    body = view(api, seeded(emulator)[state]["carPlate"])

    assert body["inProgress"]["status"] == state
    assert "latest" not in body


def test_a_failed_request_is_neither_latest_nor_in_progress(api: Api, emulator: Emulator) -> None:
    body = view(api, seeded(emulator)["failed"]["carPlate"])

    assert "latest" not in body
    assert "inProgress" not in body


def test_view_with_both(api: Api, emulator: Emulator) -> None:
    plate = seeded(emulator)["completed"]["carPlate"]
    newer = emulator.create_crlv_request(plate)

    body = view(api, plate)

    assert body["latest"]["requestId"] == seeded(emulator)["completed"]["requestId"]
    assert body["inProgress"]["requestId"] == newer["requestId"]


def test_latest_is_the_most_recently_issued(api: Api, emulator: Emulator) -> None:
    plate = seeded(emulator)["completed"]["carPlate"]
    newer = emulator.create_crlv_request(plate)
    emulator.advance(16)

    body = view(api, plate)

    assert body["latest"]["requestId"] == newer["requestId"]
    assert "inProgress" not in body


def test_the_plate_is_matched_ignoring_case_space_and_hyphen(api: Api, emulator: Emulator) -> None:
    plate = emulator.vehicles()[0]["car_plate"]
    written = f"{plate[:3].lower()}-{plate[3:]}"

    assert view(api, written)["carPlate"] == plate
    assert view(api, f"{plate[:3]}%20{plate[3:]}")["carPlate"] == plate


def test_a_plate_outside_the_fleet_is_not_found(api: Api) -> None:
    response = api.get("/v2/crlv/vehicles/ZZZ0000")

    assert response.status_code == 404
    assert response.json()["type"] == "urn:fleet-api-v2:error:not-found"


# PDF links (2.4, 8)


def test_the_pdf_url_serves_a_real_pdf(api: Api, emulator: Emulator) -> None:
    completed = seeded(emulator)["completed"]

    response = requests.get(pdf_url(api, completed["requestId"]), timeout=10)

    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/pdf"
    assert_valid_pdf(response.content)
    assert b"CRLV-e" in response.content
    assert completed["carPlate"].encode() in response.content


def test_the_pdf_url_is_valid_for_one_hour_then_refused(api: Api, emulator: Emulator) -> None:
    url = pdf_url(api, seeded(emulator)["completed"]["requestId"])

    emulator.advance(3600 - 60)  # the emulator's clock ticks too: a minute to spare
    assert requests.get(url, timeout=10).status_code == 200
    emulator.advance(61)
    assert requests.get(url, timeout=10).status_code == 410


def test_each_status_call_mints_a_new_url(api: Api, emulator: Emulator) -> None:
    request_id = seeded(emulator)["completed"]["requestId"]
    first = pdf_url(api, request_id)
    emulator.advance(3000)
    second = pdf_url(api, request_id)

    assert first != second
    emulator.advance(1000)  # the first is past its hour, the second is not
    assert requests.get(first, timeout=10).status_code == 410
    assert requests.get(second, timeout=10).status_code == 200


def test_an_unknown_pdf_token_is_not_found(emulator: Emulator) -> None:
    response = requests.get(f"{emulator.url}/files/crlv/not-a-token.pdf", timeout=10)

    assert response.status_code == 404


def assert_valid_pdf(data: bytes) -> None:
    """Header, trailer and a cross-reference table whose offsets hit their objects."""
    assert data.startswith(b"%PDF-1.")
    trailer = re.search(rb"startxref\n(\d+)\n%%EOF\n$", data)
    assert trailer, "no startxref trailer"
    xref = data[int(trailer[1]) :]
    header = re.match(rb"xref\n0 (\d+)\n", xref)
    assert header, "startxref does not point at the xref table"
    entries = xref[header.end() :].split(b"\n")[: int(header[1])]
    assert entries[0] == b"0000000000 65535 f "
    for number, entry in enumerate(entries[1:], 1):
        assert len(entry) == 19
        assert entry.endswith(b" 00000 n ")
        assert data[int(entry[:10]) :].startswith(b"%d 0 obj" % number)
    stream = re.search(rb"/Length (\d+) >>\nstream\n", data)
    assert stream, "no content stream"
    assert data[stream.end() + int(stream[1]) :].startswith(b"\nendstream")
