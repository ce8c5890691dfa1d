"""What the pages say about vehicle groups: a scoped manager's groups in the header and
on the dashboard, the group filter of the vehicle list, the vehicles in no group for an
administrator, a manager without groups told why they see nothing, and the embedded
application's notice."""

from __future__ import annotations

import re

import pytest

from fleet import plates
from fleet.models import VehicleGroup, VehicleGroupMember
from fleet.services.scopes import vehicle_groups_changed
from tests.views.conftest import chips

pytestmark = [pytest.mark.django_db, pytest.mark.scoped]

ENGLISH = {"Accept-Language": "en"}
PLATE = re.compile(r'<a class="plate" href="/vehicles/([A-Z0-9]+)/"')


@pytest.fixture
def regions(emulator, fleet_settings):
    fleet = [plates.normalize(v["car_plate"]) for v in emulator.vehicles()]
    made = {}
    for name, chosen in (("São Paulo", fleet[:4]), ("Rio", fleet[4:6])):
        group = VehicleGroup.objects.create(name=name)
        for plate in chosen:
            group.plates.create(registration=plates.registration(plate))
        vehicle_groups_changed([group.pk])
        made[name] = (group, chosen)
    return fleet, made


def login(client, django_user_model, username, *groups, **fields):
    user = django_user_model.objects.create_user(username, password="pw-123456", **fields)
    for group in groups:
        VehicleGroupMember.objects.create(group=group, user=user)
    client.force_login(user)
    return user


def test_a_scoped_manager_sees_their_groups_and_may_narrow_to_one(
    client, django_user_model, regions
):
    _fleet, made = regions
    sp, rio = made["São Paulo"][0], made["Rio"][0]
    login(client, django_user_model, "regina", sp, rio)

    page = client.get("/vehicles/", headers=ENGLISH).text
    assert 'data-testid="scope-groups"' in page
    assert "Rio, São Paulo" in page
    assert "6 vehicles of 6" in page
    assert f'<option value="{sp.pk}">São Paulo</option>' in page
    assert 'value="none"' not in page  # "in no group" is the whole fleet's
    narrowed = client.get(f"/vehicles/?group={sp.pk}", headers=ENGLISH).text
    assert sorted(PLATE.findall(narrowed)) == sorted(made["São Paulo"][1])
    assert "4 vehicles of 6" in narrowed
    dashboard = client.get("/", headers=ENGLISH).text
    assert "Figures of your vehicle groups: Rio, São Paulo." in dashboard
    assert 'data-testid="ungrouped"' not in dashboard
    assert 'data-testid="app-not-scoped"' in client.get("/app/", headers=ENGLISH).text


def test_an_administrator_sees_how_many_vehicles_are_in_no_group(
    client, django_user_model, regions
):
    fleet, made = regions
    login(client, django_user_model, "ana", is_staff=True, is_superuser=True)

    first = client.get("/", headers=ENGLISH).text
    dashboard = client.get("/", headers=ENGLISH).text

    # Counted after the first view's response (seconds at a million vehicles), kept after.
    assert 'data-testid="ungrouped"' not in first
    ungrouped = len(fleet) - 6
    assert f"{ungrouped} vehicles are in no vehicle group" in dashboard
    assert 'href="/vehicles/?group=none"' in dashboard
    listed = client.get("/vehicles/?group=none", headers=ENGLISH).text
    assert f"{ungrouped} vehicles of {len(fleet)}" in listed
    grouped = {p for _group, chosen in made.values() for p in chosen}
    assert not grouped & set(PLATE.findall(listed))
    assert 'data-testid="scope-groups"' not in listed
    assert 'data-testid="app-not-scoped"' not in client.get("/app/", headers=ENGLISH).text


def test_a_manager_without_groups_is_told_why_they_see_nothing(client, django_user_model, regions):
    login(client, django_user_model, "novo")

    vehicles = client.get("/vehicles/", headers=ENGLISH).text
    assert "You have no vehicles yet" in vehicles
    assert "No vehicle group" in vehicles  # in the header
    assert "You see no vehicles yet" in client.get("/", headers=ENGLISH).text
    export = b"".join(client.get("/vehicles/export.csv").streaming_content).decode("utf-8-sig")
    assert export.count("\n") == 1  # the header alone


def chip_texts(page: str) -> list[str]:
    return [text for text, _address in chips(page)]


def test_a_group_filters_chip_names_the_group_as_it_is_now_in_the_pages_language(
    client, django_user_model, regions
):
    # The chips are rendered once for what they say: a renamed group, another language
    # or a filter that cannot apply is rendered again.
    rio = regions[1]["Rio"][0]
    login(client, django_user_model, "regina", rio)
    address = f"/vehicles/?group={rio.pk}&q=a"

    assert chip_texts(client.get(address, headers=ENGLISH).text) == ["Search: a", "Group: Rio"]
    rio.name = "Rio de Janeiro"
    rio.save()
    renamed = ["Search: a", "Group: Rio de Janeiro"]
    assert chip_texts(client.get(address, headers=ENGLISH).text) == renamed
    portuguese = client.get(address, headers={"Accept-Language": "pt-BR"}).text
    assert chip_texts(portuguese) == ["Buscar: a", "Grupo: Rio de Janeiro"]
    assert "Limpar os filtros" in portuguese
    refused = client.get(f"{address}&active=maybe", headers=ENGLISH).text
    assert chip_texts(refused) == renamed
    assert "Not filtered by “Status”" in refused
