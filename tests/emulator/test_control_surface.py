"""The control surface `/_emulator/`: faults, clock, stats, requests, reset, rate limit."""

from __future__ import annotations

import json
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest
import requests

from tests.conftest import Emulator, wait_until
from tests.emulator.support import V2_ERROR, Api, auth_headers

# Faults


def test_a_status_fault_answers_the_route_error_body_with_retry_after(
    api: Api, emulator: Emulator
) -> None:
    emulator.fault("/key/list-cars", status=503, retry_after=30)

    response = api.get("/key/list-cars")

    assert response.status_code == 503
    assert response.headers["Retry-After"] == "30"
    assert response.json() == {
        "error": True,
        "code": "fbk_503",
        "message": "Service Unavailable",
    }


def test_a_status_fault_on_v2_is_a_problem(api: Api, emulator: Emulator) -> None:
    emulator.fault("/v2/crlv/vehicles/{carPlate}", status=504, retry_after=5)

    response = api.get("/v2/crlv/vehicles/ABC1234")

    assert response.status_code == 504
    assert response.headers["Retry-After"] == "5"
    assert response.headers["Content-Type"] == "application/problem+json"
    body = response.json()
    assert body["type"] == V2_ERROR + "gateway-timeout"
    assert body["instance"] == "/v2/crlv/vehicles/ABC1234"
    assert body["traceId"] == response.headers["X-Trace-Id"]


def test_a_status_fault_without_retry_after_sends_none(api: Api, emulator: Emulator) -> None:
    emulator.fault("/key/list-cars", status=500)

    response = api.get("/key/list-cars")

    assert response.status_code == 500
    assert "Retry-After" not in response.headers
    assert response.json()["code"] == "fbk_500"


def test_a_429_fault_looks_like_the_rate_limit(api: Api, emulator: Emulator) -> None:
    emulator.fault("/key/list-cars", status=429, retry_after=7)

    response = api.get("/key/list-cars")

    assert response.status_code == 429
    assert response.headers["Retry-After"] == "7"
    assert response.json()["code"] == "fbk_429"


def test_a_delay_fault_answers_late_but_truly(api: Api, emulator: Emulator) -> None:
    emulator.fault("/key/list-cars", delay=0.5)

    started = time.monotonic()
    response = api.get("/key/list-cars")

    assert time.monotonic() - started >= 0.5
    assert response.status_code == 200
    assert response.json()["code"] == "fbk_200"


def test_a_delay_combines_with_a_status(api: Api, emulator: Emulator) -> None:
    emulator.fault("/key/list-cars", delay=0.3, status=502)

    started = time.monotonic()
    response = api.get("/key/list-cars")

    assert time.monotonic() - started >= 0.3
    assert response.status_code == 502


def test_a_malformed_fault_answers_200_with_a_body_that_is_not_json(
    api: Api, emulator: Emulator
) -> None:
    emulator.fault("/key/list-cars", malformed=True)

    response = api.get("/key/list-cars")

    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/json"
    with pytest.raises(json.JSONDecodeError):
        json.loads(response.content)


def test_a_body_fault_answers_200_with_that_body(api: Api, emulator: Emulator) -> None:
    emulator.fault("/key/list-cars", body={"unexpected": "shape"})

    response = api.get("/key/list-cars")

    assert response.status_code == 200
    assert response.json() == {"unexpected": "shape"}


def test_a_drop_fault_closes_the_connection_without_answering(api: Api, emulator: Emulator) -> None:
    emulator.fault("/key/list-cars", drop=True)

    with pytest.raises(requests.ConnectionError):
        api.get("/key/list-cars")
    assert api.get("/key/list-cars").status_code == 200
    assert emulator.calls("GET /key/list-cars") == 2


def test_a_cut_fault_sends_half_the_real_answer_then_closes(emulator: Emulator) -> None:
    emulator.fault("/key/list-cars", cut=True)
    url = f"{emulator.url}/key/list-cars"
    host, port = url.split("//")[1].split("/")[0].split(":")
    request = "".join(f"{name}: {value}\r\n" for name, value in auth_headers().items())

    # A plain socket: HTTP clients refuse an answer shorter than its Content-Length.
    with socket.create_connection((host, int(port)), timeout=10) as connection:
        connection.sendall(f"GET /key/list-cars HTTP/1.1\r\nHost: {host}\r\n{request}\r\n".encode())
        received = b"".join(iter(lambda: connection.recv(65536), b""))  # until it closes

    head, _, sent = received.partition(b"\r\n\r\n")
    whole = requests.get(url, headers=auth_headers(), timeout=10).content
    assert head.startswith(b"HTTP/1.1 200")
    assert f"Content-Length: {len(whole)}".encode() in head
    assert sent == whole[: len(whole) // 2]
    assert emulator.calls("GET /key/list-cars") == 2


def test_a_fault_lasts_for_count_calls(api: Api, emulator: Emulator) -> None:
    emulator.fault("/key/list-cars", status=500, count=2)

    statuses = [api.get("/key/list-cars").status_code for _ in range(3)]

    assert statuses == [500, 500, 200]


def test_faults_are_consumed_in_the_order_they_were_added(api: Api, emulator: Emulator) -> None:
    emulator.fault("/key/list-cars", status=503)
    emulator.fault("*", status=500)
    emulator.fault("/key/list-cars", status=502)

    statuses = [api.get("/key/list-cars").status_code for _ in range(4)]

    assert statuses == [503, 500, 502, 200]


def test_a_fault_on_any_route(api: Api, emulator: Emulator) -> None:
    emulator.fault("*", status=500, count=2)

    assert api.get("/v2/crlv/vehicles/ABC1234").status_code == 500
    assert api.post("/key/generator").status_code == 500
    assert api.get("/key/list-cars").status_code == 200


def test_a_fault_only_for_its_route(api: Api, emulator: Emulator) -> None:
    emulator.fault("/v2/crlv/requests/{requestId}", status=500)

    assert api.get("/key/list-cars").status_code == 200
    assert api.get("/v2/crlv/requests/anything").status_code == 500


def test_a_fault_only_for_its_method(api: Api, emulator: Emulator) -> None:
    # Posted directly: Emulator.fault(method=...) collides with control(method, ...).
    fault = {"route": "*", "method": "post", "status": 500}
    requests.post(f"{emulator.url}/_emulator/faults", json=fault, timeout=10).raise_for_status()

    assert api.get("/key/list-cars").status_code == 200
    assert api.post("/key/generator").status_code == 500


def test_faults_act_before_authentication(api: Api, emulator: Emulator) -> None:
    emulator.fault("/key/list-cars", status=503)

    assert api.get("/key/list-cars", headers={}).status_code == 503


def test_faults_can_be_listed_and_cleared(api: Api, emulator: Emulator) -> None:
    emulator.fault("/key/list-cars", status=500, count=3)
    assert emulator.control("GET", "faults")[0]["remaining"] == 3

    assert emulator.control("DELETE", "faults") == {"cleared": 1}

    assert api.get("/key/list-cars").status_code == 200


@pytest.mark.parametrize(
    "fault",
    [
        {"route": "/key/list-trucks", "status": 500},
        {"route": "*"},
        {"route": "*", "status": 200},
        {"route": "*", "status": 999},
        {"route": "*", "drop": True, "status": 500},
        {"route": "*", "drop": True, "cut": True},
        {"route": "*", "malformed": True, "body": {}},
        {"route": "*", "status": 500, "count": 0},
        {"route": "*", "delay": -1},
        {"route": "*", "status": 500, "colour": "red"},
    ],
)
def test_a_fault_that_makes_no_sense_is_refused(
    emulator: Emulator, fault: dict[str, object]
) -> None:
    response = requests.post(f"{emulator.url}/_emulator/faults", json=fault, timeout=10)

    assert response.status_code == 400
    assert response.json()["error"]


# Clock


def test_the_clock_starts_at_real_time(emulator: Emulator) -> None:
    clock = emulator.control("GET", "clock")

    now = datetime.fromisoformat(clock["now"])
    assert clock["offset"] == 0
    assert abs(now - datetime.now(UTC)) < timedelta(seconds=5)


def test_the_clock_advances(emulator: Emulator) -> None:
    before = datetime.fromisoformat(emulator.control("GET", "clock")["now"])

    clock = emulator.control("POST", "clock", advance=3600)

    assert 3599 < clock["offset"] < 3601
    assert datetime.fromisoformat(clock["now"]) - before >= timedelta(seconds=3599)


def test_the_clock_can_be_set(emulator: Emulator) -> None:
    clock = emulator.control("POST", "clock", set="2030-01-02T03:04:05Z")

    assert clock["now"].startswith("2030-01-02T03:04:0")


def test_a_clock_call_without_advance_or_set_is_refused(emulator: Emulator) -> None:
    response = requests.post(f"{emulator.url}/_emulator/clock", json={"to": 5}, timeout=10)

    assert response.status_code == 400


# Stats and recorded requests


def test_stats_count_calls_by_method_and_route_template(api: Api, emulator: Emulator) -> None:
    api.get("/key/list-cars")
    api.get("/key/list-cars", headers={})
    api.get("/v2/crlv/requests/one")
    api.get("/v2/crlv/requests/two")

    calls = emulator.control("GET", "stats")["calls"]

    assert calls == {"GET /key/list-cars": 2, "GET /v2/crlv/requests/{requestId}": 2}


def test_concurrent_calls_are_all_answered_and_counted(emulator: Emulator) -> None:
    def call_ten_times(_: int) -> list[int]:
        client = Api(emulator.url)
        return [client.get("/key/list-cars").status_code for _ in range(10)]

    with ThreadPoolExecutor(max_workers=8) as pool:
        statuses = [status for batch in pool.map(call_ten_times, range(8)) for status in batch]

    assert statuses == [200] * 80
    assert emulator.calls("GET /key/list-cars") == 80


def test_stats_count_faulted_calls(api: Api, emulator: Emulator) -> None:
    emulator.fault("/key/list-cars", status=500)
    api.get("/key/list-cars")

    assert emulator.calls("GET /key/list-cars") == 1


def test_a_delayed_call_is_counted_on_arrival(api: Api, emulator: Emulator) -> None:
    # Over ten times what reading the record takes once the call is seen counted.
    emulator.fault("/key/list-cars", delay=2.0)
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(api.get, "/key/list-cars")
        wait_until(lambda: emulator.calls("GET /key/list-cars") == 1, what="never counted")
        [recorded_while_waiting] = emulator.requests()
        answered = pending.result()

    assert recorded_while_waiting["status"] is None
    assert answered.status_code == 200
    assert emulator.requests()[0]["status"] == 200


def test_stats_leave_out_the_control_surface_web_app_and_downloads(emulator: Emulator) -> None:
    emulator.control("GET", "clock")
    requests.get(f"{emulator.login_url}/login?accessKey=x", timeout=10)
    requests.get(f"{emulator.url}/files/crlv/x.pdf", timeout=10)

    assert emulator.control("GET", "stats") == {"calls": {}}


def test_stats_can_be_zeroed(api: Api, emulator: Emulator) -> None:
    api.get("/key/list-cars")

    emulator.control("DELETE", "stats")

    assert emulator.control("GET", "stats") == {"calls": {}}
    assert emulator.requests() == []


def test_recorded_requests_show_what_the_client_sent(api: Api, emulator: Emulator) -> None:
    api.post("/key/generator", json={"email": "manager@example.com", "password": "x"})

    [recorded] = emulator.requests()

    assert recorded["method"] == "POST"
    assert recorded["path"] == "/key/generator"
    assert recorded["route"] == "/key/generator"
    assert recorded["status"] == 401
    assert recorded["headers"]["cache-control"] == "no-cache"
    assert recorded["headers"]["Key"] == auth_headers()["Key"]
    assert json.loads(recorded["body"]) == {"email": "manager@example.com", "password": "x"}


def test_only_the_last_200_requests_are_kept(api: Api, emulator: Emulator) -> None:
    for number in range(205):
        api.get(f"/key/list-cars?n={number}")

    recorded = emulator.requests()

    assert len(recorded) == 200
    assert recorded[-1]["query"] == "n=204"
    assert emulator.calls("GET /key/list-cars") == 205


# Rate-limit config, e-CRLV requests, reset


def test_the_rate_limit_can_be_set_and_read(emulator: Emulator) -> None:
    assert emulator.control("POST", "rate-limit", limit=5, window=10) == {"limit": 5, "window": 10}
    assert emulator.control("GET", "rate-limit") == {"limit": 5, "window": 10}


def test_a_crlv_request_can_be_created_for_a_plate(emulator: Emulator) -> None:
    plate = emulator.vehicles()[20]["car_plate"]

    created = emulator.create_crlv_request(plate.lower(), pending_seconds=0, in_progress_seconds=0)

    assert created["carPlate"] == plate
    assert created["status"] == "completed"
    assert created["document"]["downloadUrl"].startswith(emulator.url)
    listed = emulator.control("GET", "crlv/requests")
    assert {"requestId": created["requestId"], "carPlate": plate, "status": "completed"} in listed


def test_a_crlv_request_for_a_plate_outside_the_fleet_is_refused(emulator: Emulator) -> None:
    response = requests.post(
        f"{emulator.url}/_emulator/crlv/requests", json={"plate": "ZZZ0000"}, timeout=10
    )

    assert response.status_code == 404


def test_reset_returns_to_the_start_state(api: Api, emulator: Emulator) -> None:
    start_requests = emulator.control("GET", "crlv/requests")
    emulator.create_crlv_request(emulator.vehicles()[30]["car_plate"])
    emulator.fault("*", status=500, count=5)
    emulator.advance(7200)
    emulator.control("POST", "rate-limit", limit=1, window=60)

    emulator.reset()

    assert emulator.control("GET", "faults") == []
    assert emulator.control("GET", "clock")["offset"] == 0
    assert emulator.control("GET", "rate-limit") == {"limit": 600, "window": 60}
    assert emulator.control("GET", "crlv/requests") == start_requests
    assert emulator.control("GET", "stats") == {"calls": {}}
    assert api.get("/key/list-cars").status_code == 200


def test_unknown_control_routes_are_404(emulator: Emulator) -> None:
    response = requests.get(f"{emulator.url}/_emulator/nothing", timeout=10)

    assert response.status_code == 404
    assert response.json()["error"]
