"""Error bodies: v1 `fbk_xxx` (spec 7.1) and v2 RFC 7807 (7.2)."""

from __future__ import annotations

import re

import pytest

from tests.conftest import Emulator
from tests.emulator.support import V2_ERROR, Api, auth_headers

V2_MEMBERS = {
    "type": str,
    "title": str,
    "status": int,
    "detail": str,
    "instance": str,
    "traceId": str,
}


def test_v1_error_body_has_message_error_and_code(api: Api) -> None:
    response = api.get("/key/list-cars", headers=auth_headers(Key="wrong"))

    body = response.json()
    assert response.headers["Content-Type"] == "application/json"
    assert set(body) == {"message", "error", "code"}
    assert body["error"] is True
    assert isinstance(body["message"], str)
    assert re.fullmatch(r"fbk_[0-9]{3}", body["code"])


@pytest.mark.parametrize(
    "headers",
    [auth_headers(Key=None), auth_headers(Key="wrong"), auth_headers(cache_control=None)],
    ids=["unauthorized", "authentication-failed", "bad-request"],
)
def test_v2_error_body_is_a_problem_with_every_member(api: Api, headers: dict[str, str]) -> None:
    response = api.get("/v2/crlv/vehicles/ABC1234", headers=headers)

    assert response.headers["Content-Type"] == "application/problem+json"
    body = response.json()
    assert set(body) == set(V2_MEMBERS)
    for member, kind in V2_MEMBERS.items():
        assert type(body[member]) is kind, member
    assert body["status"] == response.status_code
    assert body["type"].startswith(V2_ERROR)


def test_v2_instance_is_the_request_path_as_sent(api: Api) -> None:
    path = "/v2/crlv/vehicles/ABC%201234"

    response = api.get(path + "?ignored=1")

    assert response.status_code == 404
    assert response.json()["instance"] == path


def test_v2_trace_id_is_new_for_every_answer_and_sent_as_a_header(api: Api) -> None:
    first = api.get("/v2/crlv/vehicles/NOPE000")
    second = api.get("/v2/crlv/vehicles/NOPE000")

    assert first.json()["traceId"] == first.headers["X-Trace-Id"]
    assert second.json()["traceId"] == second.headers["X-Trace-Id"]
    assert first.json()["traceId"] != second.json()["traceId"]


def test_v2_success_carries_a_trace_id_too(api: Api, emulator: Emulator) -> None:
    plate = emulator.vehicles()[0]["car_plate"]

    response = api.get(f"/v2/crlv/vehicles/{plate}")

    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/json"
    assert response.json()["traceId"] == response.headers["X-Trace-Id"]


def test_v1_answers_have_no_trace_id(api: Api) -> None:
    assert "X-Trace-Id" not in api.get("/key/list-cars").headers


def test_unknown_v1_route_is_fbk_404(api: Api) -> None:
    response = api.get("/key/list-trucks")

    assert response.status_code == 404
    assert response.json() == {"error": True, "code": "fbk_404", "message": "Não encontrado"}


def test_unknown_v2_route_is_not_found_problem(api: Api) -> None:
    response = api.get("/v2/trips")

    assert response.status_code == 404
    assert response.json()["type"] == V2_ERROR + "not-found"
    assert response.json()["instance"] == "/v2/trips"


def test_wrong_method_is_405_with_allow(api: Api) -> None:
    response = api.call("DELETE", "/key/list-cars")

    assert response.status_code == 405
    assert response.headers["Allow"] == "GET"
    assert response.json()["code"] == "fbk_405"


def test_authentication_comes_before_the_route(api: Api) -> None:
    response = api.get("/key/list-trucks", headers=auth_headers(Key=None))

    assert response.status_code == 401
