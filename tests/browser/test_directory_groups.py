"""A manager sees the vehicles of the groups their organisation's provider puts them in.

Chromium, the live portal and emulator, and a real OpenID provider (tests/idp.py) whose
group `fleet-sp` is mapped to the vehicle group São Paulo; the person signs in on the
provider's own page, and a change of their groups there shows at their next sign-in.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import expect

from fleet import plates
from fleet.models import DirectoryGroup, VehicleGroup, VehicleGroupPlate
from fleet.services.scopes import scope_of
from tests.browser.test_sso import sign_in_through_the_provider

pytestmark = [pytest.mark.browser, pytest.mark.scoped, pytest.mark.django_db(transaction=True)]

OLD_FORMAT = re.compile(r"[A-Z]{3}[0-9]{4}")


def vehicle_group(name, fleet_plates):
    """A group holding these plates (by registration); the plates as the pages show them."""
    group = VehicleGroup.objects.create(name=name)
    VehicleGroupPlate.objects.bulk_create(
        VehicleGroupPlate(group=group, registration=plates.registration(plate))
        for plate in fleet_plates
    )
    return group, {plates.display(plate) for plate in fleet_plates}


@pytest.fixture
def regions(emulator):
    """São Paulo (a vehicle with an old plate and two with Mercosul ones, of the emulator's
    fleet), given by Acme's `fleet-sp`, and Rio (two others), given by `fleet-rio`: the
    plates of each as the vehicles page shows them."""
    fleet = [plates.normalize(vehicle["car_plate"]) for vehicle in emulator.vehicles()]
    # Only vehicles no other one shares a registration with: each plate is one vehicle.
    shared = Counter(plates.registration(plate) for plate in fleet)
    alone = [plate for plate in fleet if shared[plates.registration(plate)] == 1]
    old = [plate for plate in alone if OLD_FORMAT.fullmatch(plate)]
    mercosul = [plate for plate in alone if not OLD_FORMAT.fullmatch(plate)]
    sao_paulo, sao_paulo_plates = vehicle_group("São Paulo", [old[0], *mercosul[:2]])
    rio, rio_plates = vehicle_group("Rio", [old[1], mercosul[2]])
    DirectoryGroup.objects.create(provider="acme", value="fleet-sp", group=sao_paulo)
    DirectoryGroup.objects.create(provider="acme", value="fleet-rio", group=rio)
    assert any("-" in plate for plate in sao_paulo_plates)  # the old plate, as shown
    return sao_paulo_plates, rio_plates


def signed_in_user():
    """The portal user the provider's manager became, read afresh."""
    return User.objects.get(email="manager@example.com")


def test_a_manager_in_the_providers_sao_paulo_group_sees_only_sao_paulos_vehicles(
    page, identity_provider, oidc_settings, regions
):
    sao_paulo_plates, rio_plates = regions
    identity_provider.update_user("manager", groups=["fleet-managers", "fleet-sp"])

    sign_in_through_the_provider(page, identity_provider, "manager")
    expect(page.get_by_role("heading", level=1)).to_have_text("Olá, Marcos")

    assert scope_of(signed_in_user()).group_names == ("São Paulo",)
    page.get_by_role("navigation").get_by_role("link", name="Veículos").click()
    table = page.get_by_test_id("vehicle-table")
    shown = table.locator("tbody a.plate")
    expect(shown).to_have_count(len(sao_paulo_plates))
    assert set(shown.all_text_contents()) == sao_paulo_plates
    for plate in rio_plates:
        expect(table).not_to_contain_text(plate)


def test_removed_from_the_group_at_the_provider_the_next_sign_in_shows_no_vehicles(
    page, identity_provider, oidc_settings, regions
):
    sao_paulo_plates, _rio_plates = regions
    identity_provider.update_user("manager", groups=["fleet-managers", "fleet-sp"])
    sign_in_through_the_provider(page, identity_provider, "manager")
    expect(page.get_by_role("heading", level=1)).to_have_text("Olá, Marcos")
    assert scope_of(signed_in_user()).group_names == ("São Paulo",)
    page.get_by_role("button", name="Sair").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Você saiu")

    identity_provider.update_user("manager", groups=["fleet-managers"])
    sign_in_through_the_provider(page, identity_provider, "manager")
    expect(page.get_by_role("heading", level=1)).to_have_text("Olá, Marcos")

    assert scope_of(signed_in_user()).group_names == ()
    page.get_by_role("navigation").get_by_role("link", name="Veículos").click()
    expect(page.get_by_test_id("vehicles-empty")).to_be_visible()
    expect(page.get_by_test_id("vehicle-table")).to_have_count(0)
    for plate in sao_paulo_plates:
        expect(page.get_by_role("main")).not_to_contain_text(plate)
