"""`manage.py demo_groups`: the demo's regions from the emulator's vehicles, the demo
regional manager in São Paulo, and the demo provider's groups mapped."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from fleet.models import DirectoryGroup, VehicleGroup
from fleet.services.scopes import scope_of
from fleet.services.vehicles import vehicle_search

pytestmark = [pytest.mark.django_db, pytest.mark.scoped]


def test_the_regions_split_the_fleet_and_the_regional_manager_sees_sao_paulo(
    emulator, fleet_settings, django_user_model, client
):
    call_command("demo_users", stdout=io.StringIO())
    out = io.StringIO()

    call_command("demo_groups", stdout=out)

    total = len(emulator.vehicles())
    sizes = {g.name: g.plates.count() for g in VehicleGroup.objects.all()}
    assert sizes == {
        "São Paulo": round(total * 0.45),
        "Rio de Janeiro": round(total * 0.30),
        "Minas Gerais": round(total * 0.15),
    }
    assert f"{total - sum(sizes.values())} vehicles in no group" in out.getvalue()
    regional = django_user_model.objects.get(username="regional")
    assert scope_of(regional).group_names == ("São Paulo",)
    assert vehicle_search(scope=scope_of(regional)).fleet_total == sizes["São Paulo"]
    manager = django_user_model.objects.get(username="manager")
    assert scope_of(manager).whole_fleet
    assert set(DirectoryGroup.objects.values_list("provider", "value", "group__name")) == {
        ("demo", "fleet-sp", "São Paulo"),
        ("demo", "fleet-rj", "Rio de Janeiro"),
    }
    client.force_login(regional)
    assert "São Paulo" in client.get("/").text  # the header names the group


def test_a_group_that_exists_is_kept_as_it_is(emulator, fleet_settings):
    VehicleGroup.objects.create(name="São Paulo").plates.create(registration="ABC1C34")

    call_command("demo_groups", stdout=io.StringIO())

    assert list(
        VehicleGroup.objects.get(name="São Paulo").plates.values_list("registration", flat=True)
    ) == ["ABC1C34"]
