"""Pages that report a failure of the fleet service give the request code (the request's
id), which finds the request's log lines: its Fleet API call among them, with the trace id."""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.django_db

ENGLISH = {"Accept-Language": "en"}
CODE = re.compile(r'data-testid="request-code">Request code: <code>([^<]+)</code>')


def test_a_failed_e_crlv_status_page_gives_its_request_code(manager_client, emulator, log_records):
    request_id = emulator.control("GET", "crlv/requests")[0]["requestId"]
    emulator.fault("/v2/crlv/requests/{requestId}", status=400)

    response = manager_client.get(f"/crlv/requests/{request_id}/", headers=ENGLISH)

    assert response.status_code == 502
    (code,) = CODE.findall(response.text)
    assert code == response["X-Request-Id"]
    (call,) = [r for r in log_records.of("fleet.api") if r.levelname == "INFO"]
    assert call.fleet_status == 400
    assert call.fleet_trace_id  # the API's trace id, on the line the request code finds
    assert f"trace {call.fleet_trace_id}" in call.getMessage()


def test_a_failed_deep_link_gives_its_request_code(manager_client, emulator):
    emulator.fault("/key/generator", malformed=True, count=2)

    response = manager_client.post("/app/open", headers=ENGLISH)

    assert response.status_code == 502
    assert CODE.findall(response.text) == [response["X-Request-Id"]]


def test_a_fleet_login_to_link_is_no_failure_and_gives_no_code(manager_client, manager):
    manager.fleet_account.delete()

    response = manager_client.post("/app/open", headers=ENGLISH)

    assert response.status_code == 409
    assert "Request code" not in response.text
