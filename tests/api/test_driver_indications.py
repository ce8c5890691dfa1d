"""The client's `POST /v2/driver-indications` against the emulator (shapes assumed:
`fleet.api.indications`): received, refused with the platform's reason, 429 and 504
with Retry-After, bad credentials, answers that are not the assumed shape, no route."""

from __future__ import annotations

import json
import logging
from datetime import date

import pytest

from fleet.api.client import FleetClient
from fleet.api.errors import (
    AuthenticationFailed,
    GatewayTimeout,
    InvalidResponse,
    RateLimited,
    UpstreamUnavailable,
)
from fleet.api.indications import (
    DRIVER_INDICATIONS,
    INDICATION_ANSWER_MAX_BYTES,
    IndicationRefused,
    IndicationRequest,
    IndicationRouteMissing,
)
from fleet.api.signing import signature
from tests.api.conftest import DEMO_SECRET, DEMO_TOKEN, MakeClient, StoppedClock
from tests.conftest import Emulator

CALLS = f"POST {DRIVER_INDICATIONS}"
CPF, SUSPENDED_CPF = "52998224725", "42242242245"
DEADLINE_PASSED_NOTICE = "PRAZO-VENCIDO"


@pytest.fixture
def client(make_client: MakeClient, clock: StoppedClock) -> FleetClient:
    return make_client(waits_on=clock)


@pytest.fixture
def indication(emulator: Emulator) -> IndicationRequest:
    plate: str = emulator.vehicles()[0]["car_plate"]
    return IndicationRequest(
        car_plate=plate,
        notice="E010000042",
        driver_name="Ana Souza",
        indicated_on=date(2026, 11, 20),
        driver_cpf=CPF,
        driver_cnh="92445796846",
    )


def _with(indication: IndicationRequest, **changes: object) -> IndicationRequest:
    fields = {
        "car_plate": indication.car_plate,
        "notice": indication.notice,
        "driver_name": indication.driver_name,
        "indicated_on": indication.indicated_on,
        "driver_cpf": indication.driver_cpf,
        "driver_cnh": indication.driver_cnh,
    }
    return IndicationRequest(**(fields | changes))  # type: ignore[arg-type]


@pytest.mark.emulator_mode("normal")
def test_an_indication_received_returns_its_id_and_status(
    client: FleetClient, emulator: Emulator, indication: IndicationRequest
) -> None:
    sent = client.send_driver_indication(indication)

    assert sent.indication_id
    assert sent.status == "received"
    request = emulator.requests()[-1]
    assert (request["method"], request["path"]) == ("POST", DRIVER_INDICATIONS)
    assert request["headers"]["Content-Type"] == "application/json"
    assert request["headers"]["Authorization"] == f"Basic {DEMO_TOKEN}"
    assert request["headers"]["Key"] == signature(access_token=DEMO_TOKEN, secret_key=DEMO_SECRET)
    assert request["headers"]["cache-control"] == "no-cache"
    assert json.loads(request["body"]) == {
        "carPlate": indication.car_plate,
        "autoInfracao": "E010000042",
        "driver": {"name": "Ana Souza", "cpf": CPF, "cnh": "92445796846"},
        "indicatedOn": "2026-11-20",
    }


@pytest.mark.emulator_mode("normal")
def test_a_driver_without_cpf_or_licence_is_sent_by_name_alone(
    client: FleetClient, emulator: Emulator, indication: IndicationRequest
) -> None:
    client.send_driver_indication(_with(indication, driver_cpf=None, driver_cnh=None))

    assert json.loads(emulator.requests()[-1]["body"])["driver"] == {"name": "Ana Souza"}


@pytest.mark.emulator_mode("normal")
@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"notice": DEADLINE_PASSED_NOTICE}, "prazo"),
        ({"driver_cpf": SUSPENDED_CPF}, "suspensa"),
        ({"car_plate": "ZZZ9Z99"}, "Veículo não encontrado"),
    ],
)
def test_a_refusal_carries_the_platforms_reason(
    client: FleetClient,
    emulator: Emulator,
    indication: IndicationRequest,
    changes: dict[str, object],
    reason: str,
) -> None:
    with pytest.raises(IndicationRefused) as refused:
        client.send_driver_indication(_with(indication, **changes))

    error = refused.value
    assert reason in error.message
    assert error.status == 422
    assert error.code is not None
    assert error.code.endswith(":error:indication-refused")
    assert error.trace_id
    assert reason in str(error)
    assert emulator.calls(CALLS) == 1  # a refusal is final


@pytest.mark.emulator_mode("normal")
def test_429_then_received_waits_its_retry_after(
    client: FleetClient, emulator: Emulator, clock: StoppedClock, indication: IndicationRequest
) -> None:
    emulator.fault(DRIVER_INDICATIONS, status=429, retry_after=1)

    sent = client.send_driver_indication(indication)

    assert sent.indication_id
    assert clock.waits == [pytest.approx(1.0)]
    assert emulator.calls(CALLS) == 2


def test_429_with_a_retry_after_past_the_budget_is_raised_with_it(
    client: FleetClient, emulator: Emulator, clock: StoppedClock, indication: IndicationRequest
) -> None:
    emulator.fault(DRIVER_INDICATIONS, status=429, retry_after=30)

    with pytest.raises(RateLimited) as raised:
        client.send_driver_indication(indication)

    assert raised.value.retry_after == 30
    assert clock.waits == []
    assert emulator.calls(CALLS) == 1


def test_a_slow_answer_ending_in_504_is_raised_with_its_retry_after(
    client: FleetClient, emulator: Emulator, indication: IndicationRequest
) -> None:
    emulator.fault(DRIVER_INDICATIONS, status=504, retry_after=30, delay=0.2)

    with pytest.raises(GatewayTimeout) as raised:
        client.send_driver_indication(indication)

    assert raised.value.retry_after == 30
    assert raised.value.status == 504
    assert emulator.calls(CALLS) == 1


def test_no_answer_within_the_read_timeout_is_not_sent_again(
    make_client: MakeClient, emulator: Emulator, clock: StoppedClock, indication: IndicationRequest
) -> None:
    client = make_client(waits_on=clock, read_timeout=0.3)
    emulator.fault(DRIVER_INDICATIONS, delay=1.0)

    with pytest.raises(UpstreamUnavailable) as raised:
        client.send_driver_indication(indication)

    assert raised.value.sent  # it may have been received
    assert clock.waits == []


def test_a_bad_secret_is_401_credentials_rejected_and_never_logged(
    make_client: MakeClient,
    emulator: Emulator,
    indication: IndicationRequest,
    caplog: pytest.LogCaptureFixture,
) -> None:
    wrong = "a-wrong-secret-key"
    client = make_client(secret_key=wrong)

    with caplog.at_level(logging.DEBUG), pytest.raises(AuthenticationFailed) as raised:
        client.send_driver_indication(indication)

    assert raised.value.status == 401
    key = signature(access_token=DEMO_TOKEN, secret_key=wrong)
    for secret in (wrong, key):
        assert secret not in caplog.text
        assert secret not in str(raised.value)
        assert secret not in repr(raised.value)


@pytest.mark.parametrize(
    "body",
    [
        {"ok": True},
        {"indicationId": "", "status": "received"},
        {"indicationId": 42, "status": "received"},
        {"indicationId": "x" * 5000, "status": "received"},
        {"indicationId": "abc"},
        ["abc", "received"],
    ],
)
def test_an_answer_not_of_the_assumed_shape_is_invalid_response(
    client: FleetClient, emulator: Emulator, indication: IndicationRequest, body: object
) -> None:
    emulator.fault(DRIVER_INDICATIONS, body=body)

    with pytest.raises(InvalidResponse) as raised:
        client.send_driver_indication(indication)

    assert "driver indication" in str(raised.value)
    assert emulator.calls(CALLS) == 1


def test_an_answer_cut_off_is_invalid_response(
    client: FleetClient, emulator: Emulator, indication: IndicationRequest
) -> None:
    emulator.fault(DRIVER_INDICATIONS, malformed=True)

    with pytest.raises(InvalidResponse):
        client.send_driver_indication(indication)


def test_a_huge_answer_is_read_no_further_than_its_bound(
    client: FleetClient, emulator: Emulator, indication: IndicationRequest
) -> None:
    emulator.fault(
        DRIVER_INDICATIONS,
        body={"indicationId": "x", "status": "received", "pad": "y" * INDICATION_ANSWER_MAX_BYTES},
    )

    with pytest.raises(UpstreamUnavailable) as raised:
        client.send_driver_indication(indication)

    assert "too large" in str(raised.value)


@pytest.mark.emulator_mode("minimal")
def test_a_platform_without_the_route_is_said_so(
    client: FleetClient, emulator: Emulator, indication: IndicationRequest
) -> None:
    with pytest.raises(IndicationRouteMissing) as raised:
        client.send_driver_indication(indication)

    assert raised.value.status == 404
    assert "no driver-indications route" in str(raised.value)


def test_a_request_that_cannot_be_sent_costs_no_call(
    client: FleetClient, emulator: Emulator, indication: IndicationRequest
) -> None:
    for bad in (_with(indication, driver_name=" "), _with(indication, driver_cpf="529.982")):
        with pytest.raises(ValueError, match=r"driver's name|eleven digits"):
            client.send_driver_indication(bad)

    assert emulator.calls(CALLS) == 0


def test_the_requests_repr_names_nobody(indication: IndicationRequest) -> None:
    assert "Ana" not in repr(indication)
    assert CPF not in repr(indication)
