"""`POST /v2/driver-indications` (spec 4.6 names it only; the emulator's shapes are
assumed, emulator/README.md): received, refused by its documented rules, invalid
requests, 429 and slow 504 through the faults, what was received recorded, and
minimal mode's 404."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.conftest import Emulator
from tests.emulator.support import DEMO_SECRET, V2_ERROR, Api, auth_headers

ROUTE = "/v2/driver-indications"
CPF, SUSPENDED_CPF = "52998224725", "42242242245"
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


@pytest.fixture
def body(emulator: Emulator) -> dict[str, Any]:
    return {
        "carPlate": emulator.vehicles()[0]["car_plate"],
        "autoInfracao": "E010000042",
        "driver": {"name": "Ana Souza", "cpf": CPF, "cnh": "92445796846"},
        "indicatedOn": "2026-11-20",
    }


def indicate(api: Api, body: Any, **kwargs: Any) -> Any:
    return api.post(ROUTE, json=body, **kwargs)


def assert_problem(response: Any, status: int, name: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["Content-Type"] == "application/problem+json"
    problem: dict[str, Any] = response.json()
    assert problem["type"] == V2_ERROR + name
    assert problem["status"] == status
    assert problem["instance"] == ROUTE
    assert problem["traceId"] == response.headers["X-Trace-Id"]
    return problem


@pytest.mark.emulator_mode("normal")
def test_an_indication_is_received_with_an_id_and_recorded(
    api: Api, emulator: Emulator, body: dict[str, Any]
) -> None:
    response = indicate(api, body)

    assert response.status_code == 201
    answer = response.json()
    assert re.fullmatch(UUID, answer["indicationId"])
    assert answer["status"] == "received"
    assert answer["traceId"] == response.headers["X-Trace-Id"]
    recorded = emulator.requests()[-1]
    assert (recorded["route"], recorded["status"]) == (ROUTE, 201)
    assert json.loads(recorded["body"]) == body
    assert emulator.calls(f"POST {ROUTE}") == 1


@pytest.mark.emulator_mode("normal")
def test_the_cpf_and_licence_are_optional(api: Api, body: dict[str, Any]) -> None:
    response = indicate(api, body | {"driver": {"name": "Ana Souza"}})

    assert response.status_code == 201


@pytest.mark.emulator_mode("normal")
@pytest.mark.parametrize(
    ("change", "detail"),
    [
        ({"carPlate": "ZZZ9Z99"}, "Veículo não encontrado"),
        ({"autoInfracao": "PRAZO-VENCIDO"}, "prazo"),
        ({"driver": {"name": "Ana", "cpf": "422.422.422-45"}}, "suspensa"),
        ({"indicatedOn": "2999-01-01"}, "futura"),
    ],
)
def test_the_documented_refusals_are_422_with_their_reason(
    api: Api, body: dict[str, Any], change: dict[str, Any], detail: str
) -> None:
    problem = assert_problem(indicate(api, body | change), 422, "indication-refused")

    assert detail in problem["detail"]


@pytest.mark.emulator_mode("normal")
@pytest.mark.parametrize(
    "change",
    [
        {"carPlate": ""},
        {"autoInfracao": None},
        {"driver": "Ana"},
        {"driver": {"cpf": CPF}},
        {"driver": {"name": "Ana", "cpf": "52998224724"}},
        {"driver": {"name": "Ana", "cnh": 123}},
        {"indicatedOn": "20/11/2026"},
    ],
)
def test_a_request_not_of_the_shape_is_400(
    api: Api, body: dict[str, Any], change: dict[str, Any]
) -> None:
    assert_problem(indicate(api, body | change), 400, "bad-request")


@pytest.mark.emulator_mode("normal")
def test_a_body_that_is_not_json_is_400(api: Api) -> None:
    response = api.post(ROUTE, data=b"carPlate=ABC1D23")

    assert_problem(response, 400, "bad-request")


def test_a_wrong_signature_is_401_authentication_failed(api: Api, body: dict[str, Any]) -> None:
    headers = auth_headers("demo-access-token", DEMO_SECRET + "x")

    assert_problem(indicate(api, body, headers=headers), 401, "authentication-failed")


@pytest.mark.emulator_mode("normal")
def test_a_429_fault_answers_with_retry_after_then_the_route_answers(
    api: Api, emulator: Emulator, body: dict[str, Any]
) -> None:
    emulator.fault(ROUTE, status=429, retry_after=7)

    response = indicate(api, body)

    assert_problem(response, 429, "too-many-requests")
    assert response.headers["Retry-After"] == "7"
    assert emulator.requests()[-1]["status"] == 429
    assert indicate(api, body).status_code == 201  # the fault is used up


def test_a_slow_504_fault_answers_gateway_timeout_with_retry_after(
    api: Api, emulator: Emulator, body: dict[str, Any]
) -> None:
    emulator.fault(ROUTE, status=504, retry_after=30, delay=0.2)

    response = indicate(api, body)

    assert_problem(response, 504, "gateway-timeout")
    assert response.headers["Retry-After"] == "30"


@pytest.mark.emulator_mode("normal")
def test_the_rate_limit_applies_to_the_route(
    api: Api, emulator: Emulator, body: dict[str, Any]
) -> None:
    emulator.control("POST", "rate-limit", limit=1, window=60)

    assert indicate(api, body).status_code == 201
    response = indicate(api, body)

    assert_problem(response, 429, "too-many-requests")
    assert int(response.headers["Retry-After"]) > 0


@pytest.mark.emulator_mode("minimal")
def test_minimal_mode_has_no_such_route(api: Api, body: dict[str, Any]) -> None:
    assert_problem(indicate(api, body), 404, "not-found")
