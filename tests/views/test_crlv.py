"""The e-CRLV pages through Django's test client, against the emulator."""

from __future__ import annotations

import re
import uuid
from datetime import datetime, timedelta

import pytest
import requests

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}
ENGLISH = {"Accept-Language": "en"}
REQUEST_ROUTE = "/v2/crlv/requests/{requestId}"
VEHICLE_ROUTE = "/v2/crlv/vehicles/{carPlate}"
TRIGGER = re.compile(r'hx-trigger="load delay:(\d+)ms"')
POLL_URL = re.compile(r'hx-get="/crlv/requests/[0-9a-f-]+/\?poll=(\d+)"')


@pytest.fixture
def seeded(emulator):
    """The emulator's seeded requests by status: {"requestId", "carPlate", "status"}."""
    return {r["status"]: r for r in emulator.control("GET", "crlv/requests")}


def status_page(client, request_id, **headers):
    return client.get(f"/crlv/requests/{request_id}/", headers=ENGLISH | headers)


def poll(client, request_id, wait_ms):
    return client.get(f"/crlv/requests/{request_id}/?poll={wait_ms}", headers=ENGLISH | HTMX)


def upstream_calls(emulator) -> list[str]:
    return [f"{r['method']} {r['path']}" for r in emulator.requests()]


def forget_calls(emulator) -> None:
    """Zero the emulator's record: the test's own set-up calls are not the portal's."""
    emulator.control("DELETE", "stats")


# --- The status page ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "words"),
    [
        ("pending", "The fleet service has received the request and will start issuing"),
        ("in_progress", "The fleet service is issuing the document with the DETRAN."),
        ("completed", "The e-CRLV is issued."),
        ("failed", "The fleet service could not issue the e-CRLV."),
    ],
)
def test_each_state_is_shown_in_words(manager_client, seeded, status, words):
    response = status_page(manager_client, seeded[status]["requestId"])

    assert response.status_code == 200
    assert f'data-status="{status}"' in response.text
    assert words in response.text


@pytest.mark.emulator_mode("normal")  # the plate is not promised by the spec (2.4)
def test_the_status_page_links_the_vehicle_when_the_answer_names_it(manager_client, seeded):
    response = status_page(manager_client, seeded["pending"]["requestId"])

    assert f'href="/vehicles/{seeded["pending"]["carPlate"]}/"' in response.text


@pytest.mark.parametrize("status", ["pending", "in_progress"])
def test_an_unfinished_request_polls_from_2_s_and_offers_a_refresh_link(
    manager_client, seeded, status
):
    request_id = seeded[status]["requestId"]

    response = status_page(manager_client, request_id)

    assert TRIGGER.findall(response.text) == ["2000"]
    assert POLL_URL.findall(response.text) == ["3000"]
    assert f'href="/crlv/requests/{request_id}/" data-testid="crlv-refresh"' in response.text
    assert "no-store" in response["Cache-Control"]


@pytest.mark.parametrize("status", ["completed", "failed"])
def test_a_final_request_does_not_poll(manager_client, seeded, status):
    for response in (
        status_page(manager_client, seeded[status]["requestId"]),
        poll(manager_client, seeded[status]["requestId"], 4500),
    ):
        assert response.status_code == 200
        assert "hx-trigger" not in response.text
        assert "hx-get" not in response.text
        assert 'data-testid="crlv-refresh"' not in response.text


def test_each_poll_waits_half_as_long_again_up_to_15_s(manager_client, seeded):
    request_id = seeded["pending"]["requestId"]
    waits, asked = [], 2000
    for _ in range(8):
        fragment = poll(manager_client, request_id, asked)
        waits.append(int(TRIGGER.search(fragment.text).group(1)))
        asked = int(POLL_URL.search(fragment.text).group(1))

    assert waits == [2000, 3000, 4500, 6750, 10125, 15000, 15000, 15000]


@pytest.mark.parametrize("asked", ["0", "-5", "999999", "soon", ""])
def test_a_poll_delay_out_of_bounds_is_brought_back_within_them(manager_client, seeded, asked):
    fragment = poll(manager_client, seeded["pending"]["requestId"], asked)

    assert 2000 <= int(TRIGGER.search(fragment.text).group(1)) <= 15000


def test_a_poll_gets_the_status_fragment_only(manager_client, seeded):
    fragment = poll(manager_client, seeded["in_progress"]["requestId"], 3000)

    assert fragment.status_code == 200
    assert fragment.text.lstrip().startswith('<section id="crlv-status"')
    assert "<html" not in fragment.text


def test_polling_stops_with_a_download_button_once_the_request_completes(manager_client, emulator):
    plate = emulator.vehicles()[10]["car_plate"]
    # A minute each: the emulator's clock ticks, and a slow machine must not skip a state.
    request_id = emulator.create_crlv_request(plate, pending_seconds=60, in_progress_seconds=60)[
        "requestId"
    ]
    assert 'data-status="pending"' in status_page(manager_client, request_id).text

    emulator.advance(61)
    assert 'data-status="in_progress"' in poll(manager_client, request_id, 3000).text
    emulator.advance(60)
    done = poll(manager_client, request_id, 4500)

    assert 'data-status="completed"' in done.text
    assert "hx-trigger" not in done.text
    assert f'href="/crlv/requests/{request_id}/download"' in done.text


def test_a_failed_request_shows_its_public_code_and_message(manager_client, emulator):
    plate = emulator.vehicles()[11]["car_plate"]
    created = emulator.create_crlv_request(
        plate, outcome="failed", pending_seconds=0, in_progress_seconds=0
    )

    response = status_page(manager_client, created["requestId"])

    assert 'data-status="failed"' in response.text
    assert '<code data-testid="crlv-failure-code">DETRAN_UNAVAILABLE</code>' in response.text
    assert "O DETRAN não respondeu à emissão do CRLV-e." in response.text
    assert "/download" not in response.text


@pytest.mark.emulator_mode("normal")  # dates are not promised by the spec (2.4)
def test_dates_are_written_as_a_brazilian_reads_them_in_sao_paulo_time(manager_client, emulator):
    plate = emulator.vehicles()[12]["car_plate"]
    created = emulator.create_crlv_request(plate)
    utc = datetime.fromisoformat(created["createdAt"].replace("Z", "+00:00"))
    local = utc - timedelta(hours=3)  # America/Sao_Paulo has no daylight saving time
    months = "janeiro fevereiro março abril maio junho julho agosto setembro outubro "
    month = (months + "novembro dezembro").split()[local.month - 1]

    response = manager_client.get(f"/crlv/requests/{created['requestId']}/")

    assert f"{local.day} de {month} de {local.year} às {local:%H:%M}" in response.text
    assert f'datetime="{local:%Y-%m-%dT%H:%M:%S}-03:00"' in response.text


def test_no_page_ever_shows_a_pdf_link(manager_client, seeded):
    completed = seeded["completed"]
    pages = [
        status_page(manager_client, completed["requestId"]),
        manager_client.get(f"/vehicles/{completed['carPlate']}/"),
    ]

    for page in pages:
        assert page.status_code == 200
        assert "/files/crlv/" not in page.text


# --- Downloads -----------------------------------------------------------------------


@pytest.mark.parametrize("route", ["request", "vehicle"])
def test_every_download_redirects_to_a_new_pdf_link_that_is_never_stored(
    manager_client, emulator, seeded, route
):
    completed = seeded["completed"]
    path = (
        f"/crlv/requests/{completed['requestId']}/download"
        if route == "request"
        else f"/vehicles/{completed['carPlate']}/crlv/download"
    )

    first, second = manager_client.get(path), manager_client.get(path)

    assert (first.status_code, second.status_code) == (302, 302)
    assert first["Location"] != second["Location"]
    for response in (first, second):
        assert response["Location"].startswith(f"{emulator.url}/files/crlv/")
        assert "no-store" in response["Cache-Control"]
        pdf = requests.get(response["Location"], timeout=5)
        assert pdf.headers["Content-Type"] == "application/pdf"
        assert pdf.content.startswith(b"%PDF-")


@pytest.mark.parametrize("status", ["pending", "in_progress", "failed"])
def test_downloading_an_unissued_request_goes_back_to_its_status_with_a_message(
    manager_client, seeded, status
):
    request_id = seeded[status]["requestId"]

    response = manager_client.get(
        f"/crlv/requests/{request_id}/download", headers=ENGLISH, follow=True
    )

    assert response.redirect_chain == [(f"/crlv/requests/{request_id}/", 302)]
    assert "The e-CRLV is not issued yet: there is nothing to download." in response.text


def test_downloading_for_a_vehicle_without_an_issued_document_goes_back_with_a_message(
    manager_client, seeded
):
    plate = seeded["pending"]["carPlate"]

    response = manager_client.get(f"/vehicles/{plate}/crlv/download", headers=ENGLISH, follow=True)

    assert response.redirect_chain == [(f"/vehicles/{plate}/", 302)]
    assert "This vehicle has no issued e-CRLV to download yet." in response.text


# --- The vehicle page ----------------------------------------------------------------


def test_the_vehicle_page_shows_the_latest_document_and_the_request_in_progress(
    manager_client, emulator, seeded
):
    plate = seeded["completed"]["carPlate"]
    new = emulator.create_crlv_request(plate, pending_seconds=600)["requestId"]

    response = manager_client.get(f"/vehicles/{plate}/", headers=ENGLISH)

    assert response.status_code == 200
    assert 'data-testid="crlv-latest"' in response.text
    assert f'href="/vehicles/{plate}/crlv/download"' in response.text
    assert 'data-testid="crlv-in-progress"' in response.text
    assert "Waiting to start" in response.text
    assert 'data-testid="crlv-none"' not in response.text
    if emulator.minimal:  # no id and no date promised (2.4, 2.5)
        assert 'data-testid="crlv-in-progress-link"' not in response.text
        assert "Issued on" not in response.text
    else:
        assert f'href="/crlv/requests/{new}/"' in response.text
        assert "Issued on" in response.text


def test_the_vehicle_page_shows_a_request_in_progress_alone(manager_client, emulator, seeded):
    in_progress = seeded["in_progress"]

    response = manager_client.get(f"/vehicles/{in_progress['carPlate']}/", headers=ENGLISH)

    assert 'data-testid="crlv-latest"' not in response.text
    assert "Being issued" in response.text
    follow = f'href="/crlv/requests/{in_progress["requestId"]}/"'
    assert (follow in response.text) is not emulator.minimal


def test_the_vehicle_page_says_when_there_is_no_document_and_no_request(manager_client, emulator):
    plate = emulator.vehicles()[20]["car_plate"]

    response = manager_client.get(f"/vehicles/{plate}/", headers=ENGLISH)

    assert response.status_code == 200
    assert "This vehicle has no e-CRLV issued yet and no request in progress." in response.text
    assert 'data-testid="crlv-latest"' not in response.text
    assert 'data-testid="crlv-in-progress"' not in response.text
    # The API cannot request an issuance: the page sends the manager to the fleet app,
    # signed in, and back to this vehicle if that fails.
    assert (
        '<button type="submit" form="app-open" name="next" '
        f'value="/vehicles/{plate.replace("-", "")}/" class="link-button" '
        'data-testid="crlv-request-in-app">Request it in the fleet app</button>'
    ) in response.text


def test_the_vehicle_page_shows_the_vehicle_fields(manager_client, emulator):
    vehicle = emulator.vehicles()[20]

    response = manager_client.get(f"/vehicles/{vehicle['car_plate']}/", headers=ENGLISH)

    assert f'<dd data-testid="vehicle-model">{vehicle["model"]}</dd>' in response.text


def test_the_vehicle_page_shows_the_e_crlv_when_the_vehicle_list_is_unavailable(
    manager_client, emulator, fleet_settings, seeded
):
    # The same emulator under another address: a portal that has never held its
    # vehicle list (this process keeps one per API address and account).
    fleet_settings.FLEET_BASE_URL = emulator.url.replace("127.0.0.1", "localhost")
    emulator.fault("/key/list-cars", status=503, count=5)
    plate = seeded["completed"]["carPlate"]

    response = manager_client.get(f"/vehicles/{plate}/", headers=ENGLISH)

    assert response.status_code == 200
    assert "The vehicle's details could not be loaded from the fleet service" in response.text
    assert 'data-testid="crlv-latest"' in response.text


def test_a_plate_missing_from_the_vehicle_list_still_shows_its_e_crlv(manager_client, emulator):
    # The e-CRLV route knows a vehicle the cached list does not (yet).
    emulator.fault(VEHICLE_ROUTE, body={"carPlate": "ZZZ9Z99"})

    response = manager_client.get("/vehicles/ZZZ9Z99/", headers=ENGLISH)

    assert response.status_code == 200
    assert '<span class="plate" data-testid="vehicle-plate">ZZZ9Z99</span>' in response.text
    assert "This plate is not in the portal's copy of the vehicle list yet." in response.text
    assert "This vehicle has no e-CRLV issued yet and no request in progress." in response.text


@pytest.mark.parametrize("mercosul", [False, True], ids=["old format", "Mercosul"])
def test_a_loosely_typed_plate_redirects_to_the_canonical_page(manager_client, emulator, mercosul):
    pattern = re.compile(r"[A-Z]{3}[0-9][A-Z][0-9]{2}" if mercosul else r"[A-Z]{3}[0-9]{4}")
    plate = next(v["car_plate"] for v in emulator.vehicles() if pattern.fullmatch(v["car_plate"]))
    forget_calls(emulator)

    for typed in (f"{plate[:3]}-{plate[3:]}".lower(), plate.lower(), f"{plate[:3]} {plate[3:]}"):
        response = manager_client.get(f"/vehicles/{typed}/")
        assert response.status_code == 302
        assert response["Location"] == f"/vehicles/{plate}/"
    assert upstream_calls(emulator) == []


@pytest.mark.parametrize("plate", ["ABC123", "ABC12345", "1234ABC", "hello", "AB1C234"])
def test_an_invalid_plate_is_a_404_page_without_an_upstream_call(manager_client, emulator, plate):
    for path in (f"/vehicles/{plate}/", f"/vehicles/{plate}/crlv/download"):
        response = manager_client.get(path, headers=ENGLISH)
        assert response.status_code == 404
        assert "is not a licence plate" in response.text
    assert upstream_calls(emulator) == []


def test_a_plate_outside_the_fleet_is_a_404_page_saying_so(manager_client, emulator):
    assert "ZZZ9Z99" not in {v["car_plate"] for v in emulator.vehicles()}

    response = manager_client.get("/vehicles/ZZZ9Z99/", headers=ENGLISH)

    assert response.status_code == 404
    assert "The fleet service has no vehicle with plate ZZZ9Z99 in your fleet." in response.text


@pytest.mark.parametrize("request_id", ["..", "%2e%2e", "a%20b", "-x", "x" * 101, "%7Bid%7D"])
def test_an_invalid_request_id_is_a_404_page_without_an_upstream_call(
    manager_client, emulator, request_id
):
    for path in (f"/crlv/requests/{request_id}/", f"/crlv/requests/{request_id}/download"):
        response = manager_client.get(path, headers=ENGLISH)
        assert response.status_code == 404
        assert "This address does not point to an e-CRLV request" in response.text
    assert upstream_calls(emulator) == []


def test_an_unknown_request_is_a_404_page_saying_so(manager_client, emulator):
    request_id = str(uuid.uuid4())

    for path in (f"/crlv/requests/{request_id}/", f"/crlv/requests/{request_id}/download"):
        response = manager_client.get(path, headers=ENGLISH)
        assert response.status_code == 404
        assert "The fleet service does not know this e-CRLV request." in response.text
    assert emulator.calls(f"GET {REQUEST_ROUTE}") == 2


# --- When the fleet service fails ----------------------------------------------------


@pytest.mark.parametrize("route", [REQUEST_ROUTE, VEHICLE_ROUTE])
def test_a_rate_limit_says_how_long_to_wait_and_retries_by_itself(
    manager_client, emulator, seeded, route, held_clock
):
    # The clock held: the 30 s still 30 s on a slow day.
    emulator.fault(route, status=429, retry_after=30)
    path = (
        f"/crlv/requests/{seeded['pending']['requestId']}/"
        if route == REQUEST_ROUTE
        else f"/vehicles/{seeded['pending']['carPlate']}/"
    )

    response = manager_client.get(path, headers=ENGLISH)

    assert response.status_code == 429
    assert response["Retry-After"] == "30"
    assert "The fleet service asked us to wait 30 s." in response.text
    assert TRIGGER.findall(response.text) == ["30000"]
    # The route now cools down: asking again says so without calling the API.
    again = manager_client.get(path, headers=ENGLISH | HTMX)
    assert again.status_code == 200
    assert "asked us to wait 30 s" in again.text
    assert emulator.calls(f"GET {route}") == 1


def test_a_rate_limited_poll_keeps_polling_after_the_wait(manager_client, emulator, seeded):
    emulator.fault(REQUEST_ROUTE, status=429, retry_after=12)

    fragment = poll(manager_client, seeded["pending"]["requestId"], 4500)

    assert fragment.status_code == 200
    assert "The fleet service asked us to wait 12 s." in fragment.text
    assert TRIGGER.findall(fragment.text) == ["12000"]
    assert POLL_URL.findall(fragment.text) == ["6750"]


@pytest.mark.parametrize(
    "fault",
    [{"status": 503, "count": 5}, {"drop": True, "count": 5}],
    ids=["503", "connection dropped"],
)
@pytest.mark.parametrize("route", [REQUEST_ROUTE, VEHICLE_ROUTE])
def test_an_unavailable_fleet_service_is_a_clear_message_not_a_500(
    manager_client, emulator, seeded, fault, route
):
    emulator.fault(route, **fault)
    path = (
        f"/crlv/requests/{seeded['completed']['requestId']}/"
        if route == REQUEST_ROUTE
        else f"/vehicles/{seeded['completed']['carPlate']}/"
    )

    response = manager_client.get(path, headers=ENGLISH)

    assert response.status_code == 503
    assert "The fleet service did not answer in time. Try again in a moment." in response.text
    assert f'href="{path}"' in response.text


def test_a_download_when_the_fleet_service_is_down_says_so(manager_client, emulator, seeded):
    emulator.fault(REQUEST_ROUTE, status=503, count=5)

    response = manager_client.get(
        f"/crlv/requests/{seeded['completed']['requestId']}/download", headers=ENGLISH
    )

    assert response.status_code == 503
    assert "The fleet service did not answer in time." in response.text
    assert "no-store" in response["Cache-Control"]


def test_rejected_api_credentials_point_the_administrator_to_fleet_doctor(
    manager_client, fleet_settings, seeded
):
    fleet_settings.FLEET_ACCESS_TOKEN = "other-env-access-token"
    fleet_settings.FLEET_SECRET_KEY = "other-env-secret-key"

    response = status_page(manager_client, seeded["pending"]["requestId"])

    assert response.status_code == 502
    assert "an administrator should run <code>manage.py fleet_doctor</code>" in response.text
    assert "hx-trigger" not in response.text


def test_anonymous_visitors_are_sent_to_log_in_without_an_upstream_call(client, emulator, seeded):
    completed = seeded["completed"]
    for path in (
        f"/vehicles/{completed['carPlate']}/",
        f"/vehicles/{completed['carPlate']}/crlv/download",
        f"/crlv/requests/{completed['requestId']}/",
        f"/crlv/requests/{completed['requestId']}/download",
    ):
        response = client.get(path, headers=HTMX)
        assert response.status_code == 302
        assert response["Location"].startswith("/accounts/login/")
    assert upstream_calls(emulator) == []


# --- Answers with only what the spec promises (2.4, 2.5) ------------------------------


def test_a_request_in_progress_without_an_id_shows_its_status_without_a_follow_link(
    manager_client, emulator
):
    plate = emulator.vehicles()[21]["car_plate"]
    emulator.fault(VEHICLE_ROUTE, body={"pending": {"status": "pending"}})

    response = manager_client.get(f"/vehicles/{plate}/", headers=ENGLISH)

    assert response.status_code == 200
    assert 'data-testid="crlv-in-progress"' in response.text
    assert "Waiting to start" in response.text
    assert 'data-testid="crlv-in-progress-link"' not in response.text
    assert "Reload this page later to see whether it is issued." in response.text
    assert "requested on" not in response.text  # no date came: none is shown


def test_a_latest_document_without_id_or_date_still_offers_the_download(manager_client, emulator):
    plate = emulator.vehicles()[22]["car_plate"]
    document = {"href": "http://127.0.0.1:1/x.pdf"}
    emulator.fault(
        VEHICLE_ROUTE, body={"lastIssued": {"status": "completed", "document": document}}
    )

    response = manager_client.get(f"/vehicles/{plate}/", headers=ENGLISH)

    assert 'data-testid="crlv-latest"' in response.text
    assert f'href="/vehicles/{plate}/crlv/download"' in response.text
    assert "Issued on" not in response.text


def test_an_unrecognised_view_says_there_is_no_information_and_logs_its_names_once(
    manager_client, emulator, log_records
):
    plate = emulator.vehicles()[23]["car_plate"]
    body = {"ultimoCrlv": {"status": "completed", "numero": "123456"}, "revisao": 2}
    emulator.fault(VEHICLE_ROUTE, body=body, count=2)

    first = manager_client.get(f"/vehicles/{plate}/", headers=ENGLISH)
    second = manager_client.get(f"/vehicles/{plate}/", headers=ENGLISH)

    for response in (first, second):
        assert response.status_code == 200  # not an error: the page still serves the vehicle
        assert 'data-testid="crlv-unreadable"' in response.text
        assert "No e-CRLV information" in response.text
        assert 'data-testid="crlv-none"' not in response.text  # not "none issued": unknown
    reports = [r.getMessage() for r in log_records.of("fleet.services.crlv")]
    assert len(reports) == 1  # once per process
    assert "'revisao', 'ultimoCrlv'" in reports[0]
    assert "123456" not in "\n".join(log_records.lines)  # names, never values


def test_a_failure_without_a_code_shows_its_message_alone(manager_client, emulator, seeded):
    emulator.fault(
        REQUEST_ROUTE, body={"status": "failed", "failure": {"description": "DETRAN fora do ar"}}
    )

    response = status_page(manager_client, seeded["failed"]["requestId"])

    assert "The fleet service could not issue the e-CRLV." in response.text
    assert 'data-testid="crlv-failure-code"' not in response.text
    assert '<dd data-testid="crlv-failure-message">DETRAN fora do ar</dd>' in response.text


def test_a_request_without_plate_or_dates_shows_its_status_alone(manager_client, emulator, seeded):
    emulator.fault(REQUEST_ROUTE, body={"status": "in_progress", "etag": "x"})

    response = status_page(manager_client, seeded["pending"]["requestId"])

    assert response.status_code == 200
    assert "Being issued" in response.text
    assert 'data-testid="crlv-vehicle"' not in response.text
    assert "Requested" not in response.text
    assert "Last change" not in response.text


def test_a_plain_http_pdf_link_is_refused_in_production_with_a_clear_message(
    manager_client, fleet_settings, seeded
):
    fleet_settings.FLEET_ENVIRONMENT = "production"

    response = manager_client.get(
        f"/crlv/requests/{seeded['completed']['requestId']}/download", headers=ENGLISH
    )

    assert response.status_code == 502
    assert "not encrypted (http://), so the portal did not open it" in response.text
    assert "Location" not in response
