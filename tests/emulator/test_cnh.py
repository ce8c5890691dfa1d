"""CNH lookups (spec 4.5, 7.3, 8): fictitious licences, the timeout CPF, batches, v2 errors."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

from tests.conftest import Emulator
from tests.emulator.support import V2_ERROR, Api, auth_headers

LOOKUP, BATCH = "/v2/cnh/lookup", "/v2/cnh/lookup/batch"
TIMEOUT_CPF, NO_LICENCE_CPF, SUSPENDED_CPF = "50450450406", "00000040495", "42242242245"
CPFS = ["52998224725", "11144477735", "12345678909"]


def lookup(api: Api, cpf: Any) -> Any:
    return api.post(LOOKUP, json={"cpf": cpf})


def batch(api: Api, cpfs: Any) -> Any:
    return api.post(BATCH, json={"cpfs": cpfs})


def test_a_valid_cpf_gets_a_plausible_licence_with_a_trace_id(api: Api) -> None:
    response = lookup(api, "529.982.247-25")

    assert response.status_code == 200
    body = response.json()
    assert body["cpf"] == "52998224725"
    assert body["status"] == "ok"
    assert len(body["name"].split()) == 3
    assert re.fullmatch(r"[0-9]{11}", body["cnhNumber"])
    assert body["category"] in {"B", "AB", "C", "D", "E", "AD", "AE"}
    assert body["situation"] in {"REGULAR", "VENCIDA", "SUSPENSA", "CASSADA"}
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", body["expiresAt"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", body["firstLicenceAt"])
    assert 0 <= body["points"] <= 25
    assert {"issuingState", "remarks"} <= set(body)  # members the spec does not name
    assert body["traceId"] == response.headers["X-Trace-Id"]


def test_the_same_cpf_gets_the_same_licence(api: Api) -> None:
    first, second = lookup(api, CPFS[0]).json(), lookup(api, CPFS[0]).json()

    assert {k: v for k, v in first.items() if k != "traceId"} == {
        k: v for k, v in second.items() if k != "traceId"
    }
    assert lookup(api, CPFS[1]).json()["cnhNumber"] != first["cnhNumber"]


@pytest.mark.parametrize("cpf", ["52998224724", "1234", "", "111.111.111-11", 52998224725, None])
def test_an_invalid_cpf_is_a_v2_bad_request(api: Api, cpf: Any) -> None:
    response = lookup(api, cpf)

    assert response.status_code == 400
    assert response.headers["Content-Type"] == "application/problem+json"
    assert response.json()["type"] == V2_ERROR + "bad-request"


def test_the_timeout_cpf_waits_then_answers_504_with_retry_after(
    api: Api, emulator: Emulator
) -> None:
    emulator.control("POST", "cnh", timeout_wait=0.5, retry_after=12)
    started = time.monotonic()

    response = lookup(api, "504.504.504-06")

    assert time.monotonic() - started >= 0.5
    assert response.status_code == 504
    assert response.headers["Retry-After"] == "12"
    problem = response.json()
    assert problem["type"] == V2_ERROR + "gateway-timeout"
    assert problem["status"] == 504
    assert problem["instance"] == LOOKUP
    assert problem["traceId"] == response.headers["X-Trace-Id"]
    assert "não foi cobrada" in problem["detail"]


def test_the_timeout_cpf_recovers_after_the_timeouts_asked_for(
    api: Api, emulator: Emulator
) -> None:
    emulator.control("POST", "cnh", recover_after=2)

    statuses = [lookup(api, TIMEOUT_CPF).status_code for _ in range(3)]

    assert statuses == [504, 504, 200]
    assert emulator.control("GET", "cnh")["recover_after"] == 0


def test_the_no_licence_cpf_is_not_found(api: Api) -> None:
    response = lookup(api, NO_LICENCE_CPF)

    assert response.status_code == 404
    assert response.json()["type"] == V2_ERROR + "not-found"


def test_the_suspended_cpf_has_a_suspended_licence_alone_or_in_a_batch(api: Api) -> None:
    alone = lookup(api, "422.422.422-45").json()
    inside = batch(api, [CPFS[0], SUSPENDED_CPF]).json()["items"][1]

    assert (alone["cpf"], alone["status"], alone["situation"]) == (SUSPENDED_CPF, "ok", "SUSPENSA")
    assert {k: v for k, v in inside.items() if k != "traceId"} == {
        k: v for k, v in alone.items() if k != "traceId"
    }


def test_a_batch_answers_200_with_one_entry_per_cpf_and_the_timeout_one_in_error(
    api: Api, emulator: Emulator
) -> None:
    emulator.control("POST", "cnh", timeout_wait=0.3)
    started = time.monotonic()

    response = batch(api, [CPFS[0], TIMEOUT_CPF, CPFS[1], NO_LICENCE_CPF, TIMEOUT_CPF])

    assert response.status_code == 200
    assert time.monotonic() - started >= 0.3  # the timeout CPF's wait
    items = response.json()["items"]
    assert [item["cpf"] for item in items] == [
        CPFS[0],
        TIMEOUT_CPF,
        CPFS[1],
        NO_LICENCE_CPF,
        TIMEOUT_CPF,
    ]
    assert [item["status"] for item in items] == ["ok", "error", "ok", "error", "error"]
    assert items[1]["error"]["code"] == "gateway-timeout"
    assert items[3]["error"]["code"] == "not-found"
    individual = lookup(api, CPFS[0]).json()
    del individual["traceId"]
    assert items[0] == individual


def test_a_batch_waits_once_however_many_of_its_cpfs_time_out(api: Api, emulator: Emulator) -> None:
    emulator.control("POST", "cnh", timeout_wait=0.3)
    started = time.monotonic()

    response = batch(api, [TIMEOUT_CPF] * 50)
    waited = time.monotonic() - started

    # One wait is 0.3 s, one per CPF would be 15 s: the bound, half-way, is 25 times one wait.
    assert 0.3 <= waited < 50 * 0.3 / 2
    assert [item["status"] for item in response.json()["items"]] == ["error"] * 50


def test_an_invalid_cpf_inside_a_batch_is_an_item_error(api: Api) -> None:
    items = batch(api, ["123", CPFS[2]]).json()["items"]

    assert items[0] == {
        "cpf": "123",
        "status": "error",
        "error": {"code": "bad-request", "message": "CPF inválido."},
    }
    assert items[1]["status"] == "ok"


@pytest.mark.parametrize("cpfs", [[], "52998224725", [52998224725], ["52998224725"] * 101, None])
def test_a_batch_that_is_not_a_list_of_1_to_100_cpfs_is_refused(api: Api, cpfs: Any) -> None:
    response = batch(api, cpfs)

    assert response.status_code == 400
    assert response.json()["type"] == V2_ERROR + "bad-request"


@pytest.mark.parametrize("path", [LOOKUP, BATCH])
def test_the_lookups_need_the_credentials_and_json(api: Api, path: str) -> None:
    unsigned = api.post(path, json={"cpf": CPFS[0]}, headers=auth_headers(Key=None))
    form = api.post(path, data="cpf=52998224725", headers=auth_headers())
    other_method = api.get(path)

    assert unsigned.status_code == 401
    assert form.status_code == 400
    assert other_method.status_code == 405
    assert other_method.headers["Allow"] == "POST"


def test_reset_brings_the_timeout_cpf_back_to_its_start_settings(emulator: Emulator) -> None:
    emulator.control("POST", "cnh", timeout_wait=5, retry_after=1, recover_after=0)

    emulator.reset()

    # The test session's emulator runs with --cnh-timeout-wait 0.2 (tests/conftest.py).
    assert emulator.control("GET", "cnh") == {
        "timeout_wait": 0.2,
        "retry_after": 30,
        "recover_after": None,
    }


@pytest.mark.parametrize(
    "body",
    [
        {"timeout_wait": -1},
        {"timeout_wait": "soon"},
        {"retry_after": 1.5},
        {"recover_after": -2},
        {"recover_after": True},
        {"wait": 1},
    ],
)
def test_the_control_surface_refuses_settings_that_make_no_sense(
    emulator: Emulator, body: dict[str, Any]
) -> None:
    response = emulator.http.post(f"{emulator.url}/_emulator/cnh", json=body, timeout=5)

    assert response.status_code == 400
    assert response.json()["error"]


def test_the_help_names_the_test_cpfs_and_the_timeout_wait() -> None:
    import subprocess
    import sys

    from tests.conftest import ROOT

    shown = subprocess.run(
        [sys.executable, "-m", "emulator", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout

    assert "--cnh-timeout-wait" in shown
    assert "504.504.504-06 times out" in shown
    assert "000.000.404-95 has no licence" in shown
    assert "422.422.422-45's licence is suspended" in " ".join(shown.split())
