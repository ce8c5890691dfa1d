"""The e-CRLV service against the emulator: validation first, typed failures, fresh links."""

from __future__ import annotations

import uuid

import pytest
import requests

from fleet.services.crlv import (
    CrlvProblem,
    CrlvUnavailable,
    Outcome,
    crlv_download_url,
    crlv_request_get,
    vehicle_crlv_download_url,
    vehicle_crlv_get,
)

REQUEST_ROUTE = "/v2/crlv/requests/{requestId}"
VEHICLE_ROUTE = "/v2/crlv/vehicles/{carPlate}"

# The service notes which vehicle each request it sees is for (scoped request pages).
pytestmark = pytest.mark.django_db


@pytest.fixture
def seeded(emulator, fleet_settings):
    """The emulator's seeded requests by status: {"requestId", "carPlate", "status"}."""
    return {r["status"]: r for r in emulator.control("GET", "crlv/requests")}


def loosely_typed(plate: str) -> str:
    """`plate` as a person might type it: lower case, with a hyphen after the letters."""
    return f"{plate[:3]}-{plate[3:]}".lower()


def outcome_of(call) -> CrlvUnavailable:
    with pytest.raises(CrlvUnavailable) as raised:
        call()
    return raised.value


def test_a_loosely_typed_plate_is_asked_for_in_its_canonical_form(emulator, seeded):
    plate = seeded["completed"]["carPlate"]

    view = vehicle_crlv_get(plate=loosely_typed(plate))

    assert view.latest is not None
    assert view.latest.status == "completed"
    assert [r["path"] for r in emulator.requests()] == [f"/v2/crlv/vehicles/{plate}"]


@pytest.mark.parametrize(
    "plate", ["", "ABC123", "ABC12345", "1234ABC", "AB1C234", "ABC/1234", "../key/generator"]
)
def test_an_invalid_plate_is_refused_without_an_upstream_call(emulator, fleet_settings, plate):
    for call in (
        lambda: vehicle_crlv_get(plate=plate),
        lambda: vehicle_crlv_download_url(plate=plate),
    ):
        assert outcome_of(call).outcome is CrlvProblem.INVALID
    assert emulator.requests() == []


@pytest.mark.parametrize(
    "request_id",
    [
        "",
        "{" + str(uuid.uuid4()) + "}",
        "../../key/generator",
        "..",
        "a/b",
        "a b",
        "-leading-hyphen",
        "x" * 101,
        "%2e%2e",
    ],
)
def test_a_request_id_that_cannot_be_one_is_refused_without_an_upstream_call(
    emulator, fleet_settings, request_id
):
    for call in (
        lambda: crlv_request_get(request_id=request_id),
        lambda: crlv_download_url(request_id=request_id),
    ):
        assert outcome_of(call).outcome is CrlvProblem.INVALID
    assert emulator.requests() == []


@pytest.mark.parametrize("request_id", ["123456", "REQ-2026-0001", "a1B2.c3_d4~e5"])
def test_a_request_id_need_not_be_a_uuid_and_is_asked_for_as_given(
    emulator, fleet_settings, request_id
):
    # The spec does not fix an id's format (4.3): a vendor's numeric or prefixed id is
    # sent as it is, its case kept (this emulator knows only UUIDs: it answers 404).
    failure = outcome_of(lambda: crlv_request_get(request_id=request_id))

    assert failure.outcome is Outcome.NOT_FOUND
    assert [r["path"] for r in emulator.requests()] == [f"/v2/crlv/requests/{request_id}"]


def test_an_upper_case_request_id_is_asked_for_in_lower_case(emulator, seeded):
    request_id = seeded["failed"]["requestId"]

    request = crlv_request_get(request_id=request_id.upper())

    assert request.status == "failed"
    assert [r["path"] for r in emulator.requests()] == [f"/v2/crlv/requests/{request_id}"]


def test_an_unknown_request_is_not_found(emulator, fleet_settings):
    failure = outcome_of(lambda: crlv_request_get(request_id=str(uuid.uuid4())))

    assert failure.outcome is Outcome.NOT_FOUND
    assert emulator.calls(f"GET {REQUEST_ROUTE}") == 1


def test_a_plate_outside_the_fleet_is_not_found(emulator, fleet_settings):
    plates_in_fleet = {v["car_plate"] for v in emulator.vehicles()}
    assert "ZZZ9Z99" not in plates_in_fleet

    assert outcome_of(lambda: vehicle_crlv_get(plate="ZZZ9Z99")).outcome is Outcome.NOT_FOUND


def test_every_download_gets_a_new_url_that_serves_the_pdf(emulator, seeded):
    request_id = seeded["completed"]["requestId"]

    first = crlv_download_url(request_id=request_id)
    second = crlv_download_url(request_id=request_id)

    assert first != second
    assert emulator.calls(f"GET {REQUEST_ROUTE}") == 2
    for url in (first, second):
        pdf = requests.get(url, timeout=5)
        assert pdf.headers["Content-Type"] == "application/pdf"
        assert pdf.content.startswith(b"%PDF-")


def test_a_vehicle_download_gets_a_new_url_of_its_latest_document(emulator, seeded):
    plate = seeded["completed"]["carPlate"]

    first = vehicle_crlv_download_url(plate=plate)
    second = vehicle_crlv_download_url(plate=loosely_typed(plate))

    assert first != second
    assert emulator.calls(f"GET {VEHICLE_ROUTE}") == 2
    pdf = requests.get(second, timeout=5)
    assert pdf.content.startswith(b"%PDF-")
    assert plate.encode() in pdf.content


@pytest.mark.parametrize("status", ["pending", "in_progress", "failed"])
def test_a_request_without_a_document_is_not_ready(emulator, seeded, status):
    failure = outcome_of(lambda: crlv_download_url(request_id=seeded[status]["requestId"]))

    assert failure.outcome is CrlvProblem.NOT_READY


def test_a_vehicle_without_an_issued_document_is_not_ready(emulator, seeded):
    plate = seeded["pending"]["carPlate"]  # a request in progress, nothing issued

    assert vehicle_crlv_get(plate=plate).latest is None
    assert outcome_of(lambda: vehicle_crlv_download_url(plate=plate)).outcome is (
        CrlvProblem.NOT_READY
    )


def test_a_document_link_that_is_not_a_web_address_is_never_handed_out(emulator, seeded):
    emulator.fault(
        REQUEST_ROUTE,
        body={"status": "completed", "document": {"downloadUrl": "javascript:alert(1)"}},
    )

    failure = outcome_of(lambda: crlv_download_url(request_id=seeded["completed"]["requestId"]))

    assert failure.outcome is CrlvProblem.NO_LINK  # not a web link: not a link at all


@pytest.mark.parametrize("environment", ["production", "sandbox"])
def test_a_plain_http_pdf_link_is_refused_outside_the_emulator_and_logged(
    emulator, seeded, settings, log_records, environment
):
    settings.FLEET_ENVIRONMENT = environment  # the emulator hands out http:// links

    failure = outcome_of(lambda: crlv_download_url(request_id=seeded["completed"]["requestId"]))

    assert failure.outcome is CrlvProblem.INSECURE_LINK
    refused = [r for r in log_records.of("fleet.services.crlv") if "http://" in r.getMessage()]
    assert len(refused) == 1
    assert "127.0.0.1" in refused[0].getMessage()
    assert "/files/crlv/" not in "\n".join(log_records.lines)  # never the link itself


def test_a_plain_http_pdf_link_is_handed_out_on_the_emulator(emulator, seeded, settings):
    settings.FLEET_ENVIRONMENT = "emulator"

    url = crlv_download_url(request_id=seeded["completed"]["requestId"])

    assert url.startswith(f"{emulator.url}/files/crlv/")


def test_an_https_pdf_link_is_handed_out_in_production(emulator, seeded, settings):
    settings.FLEET_ENVIRONMENT = "production"
    settings.FLEET_DOWNLOAD_HOSTS = ["docs.example.com"]  # the vendor's document host
    link = "https://docs.example.com/crlv/1.pdf?sig=abc"
    emulator.fault(REQUEST_ROUTE, body={"status": "completed", "document": {"pdfUrl": link}})

    assert crlv_download_url(request_id=seeded["completed"]["requestId"]) == link


@pytest.mark.parametrize(
    ("fault", "outcome", "retry_after"),
    [
        ({"status": 429, "retry_after": 37}, Outcome.RATE_LIMITED, 37),
        ({"status": 503, "count": 5}, Outcome.UNAVAILABLE, None),
        ({"drop": True, "count": 5}, Outcome.UNAVAILABLE, None),
        ({"status": 504, "retry_after": 40}, Outcome.UNAVAILABLE, 40),
        ({"status": 401}, Outcome.CREDENTIALS_REJECTED, None),
        ({"status": 403}, Outcome.PERMISSION_DENIED, None),
        ({"malformed": True}, Outcome.ERROR, None),
    ],
    ids=["429", "503", "dropped", "504", "401", "403", "malformed"],
)
def test_each_api_failure_becomes_its_outcome(emulator, seeded, fault, outcome, retry_after):
    emulator.fault(REQUEST_ROUTE, **fault)

    failure = outcome_of(lambda: crlv_request_get(request_id=seeded["completed"]["requestId"]))

    assert failure.outcome is outcome
    assert failure.retry_after == retry_after


def test_rejected_credentials_are_reported_as_such(emulator, fleet_settings):
    fleet_settings.FLEET_ACCESS_TOKEN = "other-env-access-token"
    fleet_settings.FLEET_SECRET_KEY = "other-env-secret-key"

    failure = outcome_of(lambda: vehicle_crlv_get(plate="ABC1234"))

    assert failure.outcome is Outcome.CREDENTIALS_REJECTED
