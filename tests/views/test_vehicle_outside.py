"""A vehicle of the fleet outside the person's vehicle groups: its page says so, rather
than that the fleet has no such vehicle."""

from __future__ import annotations

import pytest

from fleet import plates
from fleet.models import VehicleGroup, VehicleGroupMember
from fleet.services.scopes import vehicle_groups_changed

pytestmark = [pytest.mark.django_db, pytest.mark.scoped]

ENGLISH = {"Accept-Language": "en"}


@pytest.fixture
def regional(client, django_user_model, emulator, fleet_settings):
    """A manager of a group holding the fleet's first vehicle; the fleet's plates."""
    fleet = [plates.normalize(v["car_plate"]) for v in emulator.vehicles()]
    group = VehicleGroup.objects.create(name="Campinas")
    group.plates.create(registration=plates.registration(fleet[0]))
    vehicle_groups_changed([group.pk])
    user = django_user_model.objects.create_user("regina", password="pw-123456")
    VehicleGroupMember.objects.create(group=group, user=user)
    client.force_login(user)
    return client, fleet


def test_a_vehicle_outside_the_users_groups_is_said_to_be_so(regional):
    client, fleet = regional
    outside = fleet[1]

    english = client.get(f"/vehicles/{outside}/", headers=ENGLISH)
    portuguese = client.get(f"/vehicles/{outside}/", headers={"Accept-Language": "pt-BR"})

    assert english.status_code == 404
    shown = plates.display(outside)
    assert f"Vehicle {shown} is not in your vehicle groups." in english.text
    assert "The fleet service has no vehicle" not in english.text
    assert f"O veículo {shown} não está nos seus grupos de veículos." in portuguese.text


def test_a_plate_the_fleet_does_not_have_is_still_said_to_be_unknown(regional):
    client, fleet = regional
    assert "ZZZ9Z99" not in fleet

    response = client.get("/vehicles/ZZZ9Z99/", headers=ENGLISH)

    assert response.status_code == 404
    assert "The fleet service has no vehicle with plate ZZZ9Z99 in your fleet." in response.text
    assert "not in your vehicle groups" not in response.text
