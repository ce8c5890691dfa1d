"""SCIM Groups: their displayName and externalId are values of the provider's groups, mapped
to vehicle groups by the same `DirectoryGroup` rows as the sign-in's groups claim, and a
change of members applies at once."""

from __future__ import annotations

import pytest
from allauth.socialaccount.models import SocialAccount
from django.contrib.auth.models import User
from django.test import Client

from fleet import plates
from fleet.models import DirectoryGroup, VehicleGroup, VehicleGroupMember
from fleet.services.scopes import scope_of, vehicle_groups_changed
from fleet.services.vehicles import vehicle_search
from signin.models import ScimGroup, ScimUser
from signin.scim.tokens import scim_token_mint
from tests.signin.conftest import ERROR_SCHEMA, Scim, pushed_email
from tests.signin.test_directory_groups import group_names, signs_in

pytestmark = [pytest.mark.django_db, pytest.mark.scoped]


@pytest.fixture
def vehicle_groups(providers):
    """São Paulo given by Acme's `fleet-sp`, Rio by the group whose externalId is
    `grp-rio`; the other provider maps `fleet-sp` to Rio."""
    sao_paulo = VehicleGroup.objects.create(name="São Paulo")
    rio = VehicleGroup.objects.create(name="Rio")
    DirectoryGroup.objects.create(provider="acme", value="fleet-sp", group=sao_paulo)
    DirectoryGroup.objects.create(provider="acme", value="grp-rio", group=rio)
    DirectoryGroup.objects.create(provider="group", value="fleet-sp", group=rio)
    return sao_paulo, rio


def sees(user_name):
    """The vehicle groups the user sees through, read afresh."""
    return scope_of(User.objects.get(username=user_name)).group_names


def test_members_added_and_removed_change_their_vehicle_groups_at_once(acme, vehicle_groups):
    ana = acme.user_create("ana@example.com", "00u-ana").data["id"]
    bruno = acme.user_create("bruno@example.com", "00u-bruno").data["id"]
    sp = acme.group_create("fleet-sp", ana)
    assert sp.status_code == 201, sp.data
    assert [member["value"] for member in sp.data["members"]] == [ana]
    assert sees("ana@example.com") == ("São Paulo",)
    assert sees("bruno@example.com") == ()

    added = acme.patch(
        f"Groups/{sp.data['id']}", {"op": "add", "path": "members", "value": [{"value": bruno}]}
    )
    assert added.status_code == 200
    assert {member["value"] for member in added.data["members"]} == {ana, bruno}
    assert sees("bruno@example.com") == ("São Paulo",)

    removed = acme.patch(
        f"Groups/{sp.data['id']}", {"op": "remove", "path": f'members[value eq "{ana}"]'}
    )
    assert removed.status_code == 200
    assert sees("ana@example.com") == ()
    assert sees("bruno@example.com") == ("São Paulo",)


def test_moving_between_groups_moves_the_vehicles(acme, vehicle_groups):
    ana = acme.user_create("ana@example.com", "00u-ana").data["id"]
    sp = acme.group_create("fleet-sp", ana).data["id"]
    rio = acme.group_create("Rio managers", externalId="grp-rio").data["id"]
    acme.patch(f"Groups/{sp}", {"op": "remove", "path": f'members[value eq "{ana}"]'})
    acme.patch(f"Groups/{rio}", {"op": "add", "path": "members", "value": [{"value": ana}]})
    assert sees("ana@example.com") == ("Rio",)
    given = VehicleGroupMember.objects.get(user__username="ana@example.com")
    assert given.provider == "acme"


def forms(plate: str) -> set[str]:
    """Every way a page may write `plate`: as listed, displayed, and its old form's."""
    found = {plate, plates.display(plate)}
    if (old := plates.old_plate(plate)) is not None:
        found |= {old, plates.display(old)}
    return found


def test_moving_between_scim_groups_changes_the_vehicles_at_the_next_page_load(
    acme, vehicle_groups, emulator, fleet_settings
):
    """A manager with a session open sees São Paulo's vehicles; the directory moves them to
    Rio's group; their next load of the vehicle list (page and CSV) shows Rio's only."""
    sao_paulo, rio = vehicle_groups
    vehicle_search()
    listed = [plates.normalize(vehicle["car_plate"]) for vehicle in emulator.vehicles()]
    old = [plate for plate in listed if plate[4].isdigit()]
    new = [plate for plate in listed if not plate[4].isdigit()]
    given = {sao_paulo: [old[0], new[0]], rio: [old[1], new[1]]}
    for group, chosen in given.items():
        for plate in chosen:
            group.plates.create(registration=plates.registration(plate))
    vehicle_groups_changed([sao_paulo.pk, rio.pk])
    ana = acme.user_create("ana@example.com", "00u-ana").data["id"]
    sp = acme.group_create("fleet-sp", ana).data["id"]
    rio_group = acme.group_create("Rio managers", externalId="grp-rio").data["id"]
    browser = Client()
    browser.force_login(User.objects.get(username="ana@example.com"))

    def shown(path: str) -> tuple[bool, bool]:
        page = browser.get(path)
        assert page.status_code == 200
        text = page.content.decode()
        return (
            all(plates.display(plate) in text for plate in given[sao_paulo]),
            any(form in text for plate in given[rio] for form in forms(plate)),
        )

    assert shown("/vehicles/") == (True, False)
    acme.patch(f"Groups/{sp}", {"op": "remove", "path": f'members[value eq "{ana}"]'})
    acme.patch(f"Groups/{rio_group}", {"op": "add", "path": "members", "value": [{"value": ana}]})

    page = browser.get("/vehicles/")
    text = page.content.decode()
    assert all(plates.display(plate) in text for plate in given[rio])
    assert not any(form in text for plate in given[sao_paulo] for form in forms(plate))
    export = browser.get("/vehicles/export.csv").getvalue().decode("utf-8-sig")
    assert all(plates.display(plate) in export or plate in export for plate in given[rio])
    assert not any(form in export for plate in given[sao_paulo] for form in forms(plate))


def test_groups_given_by_hand_stay(acme, vehicle_groups):
    _sao_paulo, rio = vehicle_groups
    ana = acme.user_create("ana@example.com", "00u-ana").data["id"]
    VehicleGroupMember.objects.create(user=User.objects.get(), group=rio, provider="")
    group = acme.group_create("fleet-sp", ana).data["id"]
    assert acme.delete(f"Groups/{group}").status_code == 204
    assert sees("ana@example.com") == ("Rio",)
    assert not ScimGroup.objects.exists()


def test_a_group_is_one_providers(acme, grupo, vehicle_groups):
    ana = acme.user_create("ana@example.com", "00u-ana").data["id"]
    refused = grupo.group_create("fleet-sp", ana)
    assert refused.status_code == 401
    assert refused.data["schemas"] == [ERROR_SCHEMA]
    assert not ScimGroup.objects.exists()
    assert sees("ana@example.com") == ()


def test_groups_filter_by_display_name_and_page(acme, vehicle_groups):
    for name in ("fleet-sp", "fleet-rio", "fleet-bh"):
        acme.group_create(name)
    found = acme.get("Groups", filter='displayName eq "FLEET-RIO"')
    assert [group["displayName"] for group in found.data["Resources"]] == ["fleet-rio"]
    page = acme.get("Groups", startIndex=3, count=5)
    assert page.data["totalResults"] == 3
    assert [group["displayName"] for group in page.data["Resources"]] == ["fleet-sp"]


def test_a_duplicate_display_name_is_refused(acme, vehicle_groups):
    acme.group_create("fleet-sp")
    again = acme.group_create("Fleet-SP")
    assert again.status_code == 409
    assert again.data["scimType"] == "uniqueness"
    assert ScimGroup.objects.count() == 1


def test_a_sign_in_is_the_same_person_and_keeps_the_groups_scim_pushed(
    client, oidc_settings, identity_provider
):
    """A real sign-in (tests/idp.py) then SCIM: the subject is the externalId; a later
    sign-in whose groups claim lacks the SCIM group keeps its vehicle group."""
    sao_paulo = VehicleGroup.objects.create(name="São Paulo")
    DirectoryGroup.objects.create(provider="acme", value="fleet-sp", group=sao_paulo)
    identity_provider.update_user("manager", groups=["fleet-managers"])
    user = signs_in(client, "manager")
    subject = SocialAccount.objects.get(user=user, provider="acme").uid
    scim = Scim(Client(), scim_token_mint(provider="acme", created_by="test"))

    created = scim.user_create("manager@example.com", subject)
    assert created.status_code == 201, created.data
    assert ScimUser.objects.get().user == user
    scim.group_create("fleet-sp", created.data["id"])
    assert group_names(user) == ("São Paulo",)

    assert signs_in(client, "manager") == user
    assert group_names(user) == ("São Paulo",)


def test_an_email_the_provider_may_not_vouch_for_is_not_kept(grupo, providers):
    """Grupo admits no domain of its own; example.com is Acme's."""
    grupo.user_create("eve", "00u-eve", emails=[{"value": "boss@example.com", "primary": True}])
    grupo.user_create("zed", "00u-zed", emails=[{"value": "zed@grupo.example", "primary": True}])
    assert pushed_email(User.objects.get(username="eve")) == ""
    assert pushed_email(User.objects.get(username="zed")) == "zed@grupo.example"
    assert User.objects.get(username="zed").email == ""  # pending until zed signs in
