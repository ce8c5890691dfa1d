"""`manage.py demo_drivers`: the emulator's drivers get names, read from the running
emulator's vehicle list; a name an administrator typed stays."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from fleet.models import Driver

pytestmark = pytest.mark.django_db


def demo_drivers() -> str:
    out = io.StringIO()
    call_command("demo_drivers", stdout=out)
    return out.getvalue()


def test_it_names_every_driver_of_the_emulators_vehicles(emulator, fleet_settings):
    fleet_drivers = {vehicle["driver_id"] for vehicle in emulator.vehicles()}

    printed = demo_drivers()

    names = dict(Driver.objects.values_list("driver_id", "name"))
    assert names.keys() == fleet_drivers
    assert len(set(names.values())) == len(names)  # no two alike
    assert all(2 <= len(name.split()) <= 3 for name in names.values())
    assert f"{len(fleet_drivers)} of the fleet's {len(fleet_drivers)} drivers named" in printed


def test_it_gives_a_driver_the_same_name_on_a_fresh_database(emulator, fleet_settings):
    demo_drivers()
    first = dict(Driver.objects.values_list("driver_id", "name"))
    Driver.objects.all().delete()

    demo_drivers()

    assert dict(Driver.objects.values_list("driver_id", "name")) == first


def test_it_keeps_a_name_an_administrator_typed_and_names_nobody_twice(emulator, fleet_settings):
    driver = emulator.vehicles()[0]["driver_id"]
    Driver.objects.create(driver_id=driver, name="Motorista Escolhido")

    demo_drivers()
    again = demo_drivers()

    assert Driver.objects.get(driver_id=driver).name == "Motorista Escolhido"
    assert "Demo drivers: 0 of the fleet's" in again


def test_it_says_when_the_emulator_does_not_answer(emulator, fleet_settings):
    emulator.fault("/key/list-cars", status=503, count=10)

    with pytest.raises(CommandError, match="is the emulator running"):
        demo_drivers()
    assert not Driver.objects.exists()


def test_it_is_refused_outside_the_emulator(settings):
    settings.FLEET_ENVIRONMENT = "production"

    with pytest.raises(CommandError, match="only named for the emulator"):
        demo_drivers()
    assert not Driver.objects.exists()
