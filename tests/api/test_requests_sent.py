"""What goes over the wire: the three headers, path segments, and the log lines."""

from __future__ import annotations

import logging

import pytest

from fleet.api.client import FleetClient
from fleet.api.errors import FleetError, NotFound
from fleet.api.paths import path_segment
from fleet.api.signing import signature
from tests.api.conftest import DEMO_SECRET, DEMO_TOKEN, Recorder, seeded_crlv_requests
from tests.conftest import Emulator


def _headers(recorded: dict[str, object]) -> dict[str, str]:
    headers = recorded["headers"]
    assert isinstance(headers, dict)
    return {str(k).lower(): str(v) for k, v in headers.items()}


def test_every_request_carries_the_three_headers(emulator: Emulator, client: FleetClient) -> None:
    client.list_vehicle_columns()
    client.get_vehicle_crlv(emulator.vehicles()[0]["car_plate"])
    # emulator.vehicles() made a request of its own: keep the client's only.
    ours = [
        r for r in emulator.requests() if _headers(r).get("user-agent", "").startswith("fleet-")
    ]
    assert len(ours) == 2
    for request in ours:
        headers = _headers(request)
        assert headers["authorization"] == f"Basic {DEMO_TOKEN}"
        assert headers["key"] == signature(access_token=DEMO_TOKEN, secret_key=DEMO_SECRET)
        assert headers["cache-control"] == "no-cache"


def test_a_get_has_no_body_and_no_content_type(emulator: Emulator, client: FleetClient) -> None:
    client.list_vehicle_columns()
    (sent,) = emulator.requests()
    assert "content-type" not in _headers(sent)
    assert not sent["body"]


@pytest.mark.parametrize(
    ("plate", "raw_path"),
    [
        ("../key/generator", "/v2/crlv/vehicles/..%2Fkey%2Fgenerator"),
        ("ABC%2F1", "/v2/crlv/vehicles/ABC%252F1"),
        ("a/b", "/v2/crlv/vehicles/a%2Fb"),
        ("ABC 1?x=1#f", "/v2/crlv/vehicles/ABC%201%3Fx%3D1%23f"),
    ],
)
def test_a_plate_stays_one_path_segment_of_its_route(
    emulator: Emulator, client: FleetClient, plate: str, raw_path: str
) -> None:
    with pytest.raises(NotFound):
        client.get_vehicle_crlv(plate)
    (sent,) = emulator.requests()
    assert sent["path"] == raw_path
    assert sent["route"] == "/v2/crlv/vehicles/{carPlate}"
    assert emulator.calls("POST /key/generator") == 0


def test_a_request_id_stays_one_path_segment(emulator: Emulator, client: FleetClient) -> None:
    with pytest.raises(NotFound):
        client.get_crlv_request("../../key/list-cars")
    (sent,) = emulator.requests()
    assert sent["route"] == "/v2/crlv/requests/{requestId}"
    assert emulator.calls("GET /key/list-cars") == 0


@pytest.mark.parametrize("value", ["", ".", "..", "ABC\n1", "ABC\x001", "A\tB", "A\x7fB"])
def test_values_that_cannot_be_a_segment_are_refused_before_sending(
    emulator: Emulator, client: FleetClient, value: str
) -> None:
    with pytest.raises(ValueError, match="path parameter"):
        client.get_vehicle_crlv(value)
    with pytest.raises(ValueError, match="path parameter"):
        client.get_crlv_request(value)
    assert emulator.requests() == []


def test_path_segment_escapes_every_reserved_character() -> None:
    assert path_segment("a/b?c#d%e f") == "a%2Fb%3Fc%23d%25e%20f"
    assert path_segment("ABC1D23") == "ABC1D23"
    assert path_segment("...") == "..."


# --- Logging ------------------------------------------------------------------------


def test_one_info_line_per_call_with_route_template_status_and_trace(
    emulator: Emulator, client: FleetClient, log_records: Recorder
) -> None:
    request_id = seeded_crlv_requests(emulator)[0]["id"]
    client.get_crlv_request(request_id)
    (record,) = log_records.of("fleet.api")
    assert record.levelno == logging.INFO
    message = record.getMessage()
    assert message.startswith("GET /v2/crlv/requests/{requestId} -> 200 in ")
    assert request_id not in message
    assert record.fleet_route == "/v2/crlv/requests/{requestId}"  # type: ignore[attr-defined]
    assert record.fleet_status == 200  # type: ignore[attr-defined]
    assert record.fleet_attempt == 1  # type: ignore[attr-defined]
    if emulator.minimal:  # a trace id on a success is not promised (7.2: errors carry one)
        assert record.fleet_trace_id is None  # type: ignore[attr-defined]
        assert message.endswith("(attempt 1, trace -)")
    else:
        assert record.fleet_trace_id  # type: ignore[attr-defined]
        assert f"trace {record.fleet_trace_id}" in message  # type: ignore[attr-defined]
    assert isinstance(record.fleet_duration_ms, int)  # type: ignore[attr-defined]


def test_a_failure_is_logged_once_as_a_warning_with_its_trace_id(
    client: FleetClient, log_records: Recorder
) -> None:
    with pytest.raises(FleetError) as raised:
        client.get_vehicle_crlv("ZZZ9Z99")
    warnings = [r for r in log_records.of("fleet.api") if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert raised.value.trace_id
    assert raised.value.trace_id in warnings[0].getMessage()
    assert "GET /v2/crlv/vehicles/{carPlate}" in warnings[0].getMessage()


def test_a_retried_call_logs_each_attempt(
    emulator: Emulator, client: FleetClient, log_records: Recorder
) -> None:
    emulator.fault("/key/list-cars", drop=True)
    client.list_vehicle_columns()
    records = log_records.of("fleet.api")
    assert [r.levelno for r in records] == [logging.INFO, logging.INFO]
    assert "retrying" in records[0].getMessage()
    assert records[1].fleet_attempt == 2  # type: ignore[attr-defined]
