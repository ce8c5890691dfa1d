"""`indication_send`: a fine's driver indicated through the platform (the emulator's
`POST /v2/driver-indications`), and one `IndicationNotSent` with a message a person can
act on for every way it fails, the setting off first of all."""

from __future__ import annotations

import json
from datetime import date
from typing import Any

import pytest
from django.utils import translation

from fleet.models import CnhItemStatus, CnhLookup, CnhLookupItem, Driver, Fine
from fleet.services.platform_indications import IndicationNotSent, indication_send
from tests.conftest import Emulator

pytestmark = pytest.mark.django_db

ROUTE = "/v2/driver-indications"
CALLS = f"POST {ROUTE}"
DRIVER_ID, CPF = 101, "52998224725"
ON = date(2026, 11, 20)


@pytest.fixture
def platform(fleet_settings: Any, emulator: Emulator) -> Emulator:
    """The emulator, with sending through the platform turned on."""
    fleet_settings.FLEET_DRIVER_INDICATIONS_API = True
    return emulator


@pytest.fixture
def fine(emulator: Emulator) -> Fine:
    Driver.objects.create(driver_id=DRIVER_ID, name="Ana Souza")
    plate: str = emulator.vehicles()[0]["car_plate"]
    return _fine(plate, "E010000042")


def _fine(plate: str, reference: str) -> Fine:
    fine: Fine = Fine.objects.create(
        key=f"id:{reference}",
        external_id=reference,
        payload={"carPlate": plate, "autoInfracao": reference},
        registration=plate,
        reference=reference,
        treated=False,
    )
    return fine


def _send(fine: Fine, **options: Any) -> IndicationNotSent:
    with translation.override("en"), pytest.raises(IndicationNotSent) as raised:
        indication_send(fine=fine, driver_id=DRIVER_ID, on=ON, **options)
    return raised.value


@pytest.mark.emulator_mode("normal")
def test_it_sends_the_fine_and_the_driver(platform: Emulator, fine: Fine) -> None:
    sent = indication_send(fine=fine, driver_id=DRIVER_ID, on=ON)

    assert sent.status == "received"
    assert sent.indication_id
    assert json.loads(platform.requests()[-1]["body"]) == {
        "carPlate": fine.plate,
        "autoInfracao": "E010000042",
        "driver": {"name": "Ana Souza"},
        "indicatedOn": "2026-11-20",
    }


@pytest.mark.emulator_mode("normal")
def test_it_sends_the_cpf_given_and_the_licence_number_its_latest_lookup_found(
    platform: Emulator, fine: Fine, django_user_model: Any
) -> None:
    owner = django_user_model.objects.create_user("lookup-owner")
    lookup = CnhLookup.objects.create(owner=owner, kind="single", purpose="fine")
    CnhLookupItem.objects.create(
        lookup=lookup, position=0, cpf=CPF, status=CnhItemStatus.OK, result={"cnhNumber": "123"}
    )

    indication_send(fine=fine, driver_id=DRIVER_ID, on=ON, cpf=CPF)

    driver = json.loads(platform.requests()[-1]["body"])["driver"]
    assert driver == {"name": "Ana Souza", "cpf": CPF, "cnh": "123"}


def test_with_the_setting_off_nothing_reaches_the_platform(
    fleet_settings: Any, emulator: Emulator, fine: Fine
) -> None:
    fleet_settings.FLEET_DRIVER_INDICATIONS_API = False

    error = _send(fine)

    assert error.kind == "off"
    assert "turned off" in str(error)
    assert emulator.calls(CALLS) == 0
    assert all(request["path"] != ROUTE for request in emulator.requests())


@pytest.mark.emulator_mode("normal")
def test_a_refusal_says_the_platforms_reason(platform: Emulator, fine: Fine) -> None:
    expired = _fine(fine.plate, "PRAZO-VENCIDO")

    error = _send(expired)

    assert error.kind == "refused"
    assert str(error).startswith("The platform refused the indication: ")
    assert "prazo para indicar o condutor" in str(error)


def test_429_says_when_to_try_again(platform: Emulator, fine: Fine) -> None:
    platform.fault(ROUTE, status=429, retry_after=30)

    error = _send(fine)

    assert error.kind == "rate_limited"
    assert error.retry_after == 30
    assert "Try again in 30 seconds" in str(error)


def test_504_says_the_platform_timed_out(platform: Emulator, fine: Fine) -> None:
    platform.fault(ROUTE, status=504, retry_after=30, delay=0.1)

    error = _send(fine)

    assert error.kind == "timeout"
    assert "timed out" in str(error)


def test_bad_credentials_say_an_administrator_must_check_them(
    platform: Emulator, fleet_settings: Any, fine: Fine
) -> None:
    fleet_settings.FLEET_SECRET_KEY = "a-wrong-secret-key"

    error = _send(fine)

    assert error.kind == "credentials"
    assert "FLEET_SECRET_KEY" in str(error)
    assert "a-wrong-secret-key" not in str(error)


def test_an_unexpected_answer_says_to_check_the_platform(platform: Emulator, fine: Fine) -> None:
    platform.fault(ROUTE, body={"indication": "ok"})

    error = _send(fine)

    assert error.kind == "unexpected"
    assert "Check it on the platform" in str(error)


@pytest.mark.emulator_mode("minimal")
def test_a_platform_without_the_route_is_said_so(platform: Emulator, fine: Fine) -> None:
    error = _send(fine)

    assert error.kind == "no_route"
    assert "no route for indicating drivers" in str(error)


def test_a_driver_without_a_name_is_not_sent(platform: Emulator, fine: Fine) -> None:
    Driver.objects.all().delete()

    error = _send(fine)

    assert error.kind == "incomplete"
    assert str(DRIVER_ID) in str(error)
    assert platform.calls(CALLS) == 0


def test_a_fine_without_a_notice_number_is_not_sent(platform: Emulator, fine: Fine) -> None:
    error = _send(_fine(fine.plate, ""))

    assert error.kind == "incomplete"
    assert platform.calls(CALLS) == 0


def test_a_cpf_that_is_not_eleven_digits_is_not_sent(platform: Emulator, fine: Fine) -> None:
    error = _send(fine, cpf="529.982.247-25")

    assert error.kind == "incomplete"
    assert platform.calls(CALLS) == 0
