"""People in the admin, as staff limited to their groups administer them with every right:
the people of their groups and those of none, no one else, and without giving anyone a
right; what concerns the whole organisation is not theirs."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.test import Client
from django.urls import reverse

from fleet.models import VehicleGroup, VehicleGroupMember
from fleet.services.scopes import scope_of
from tests.admin.pages import form_data

pytestmark = [pytest.mark.django_db, pytest.mark.scoped]

USERS = reverse("admin:auth_user_changelist")


@pytest.fixture
def region_a() -> VehicleGroup:
    return VehicleGroup.objects.create(name="Region A")


@pytest.fixture
def region_b() -> VehicleGroup:
    return VehicleGroup.objects.create(name="Region B")


@pytest.fixture
def people(region_a: VehicleGroup, region_b: VehicleGroup) -> dict[str, User]:
    """A manager of each region, one of both, one of none, and staff of region B."""
    made = {name: User.objects.create_user(name) for name in ("ana", "bruno", "both", "nova")}
    made["staff-b"] = User.objects.create_user("staff-b", is_staff=True)
    for name, groups in (
        ("ana", [region_a]),
        ("bruno", [region_b]),
        ("both", [region_a, region_b]),
        ("staff-b", [region_b]),
    ):
        for group in groups:
            VehicleGroupMember.objects.create(group=group, user=made[name])
    return made


@pytest.fixture
def as_staff(client: Client, region_a: VehicleGroup, people: dict[str, User]) -> Client:
    """Staff of region A with every right but the whole fleet."""
    staff = User.objects.create_user("staff-a", is_staff=True)
    staff.user_permissions.add(*Permission.objects.exclude(codename="view_whole_fleet"))
    VehicleGroupMember.objects.create(group=region_a, user=staff)
    client.force_login(staff)
    client.defaults["HTTP_ACCEPT_LANGUAGE"] = "en"
    return client


def test_they_see_the_people_of_their_groups_and_of_none_only(as_staff):
    listing = as_staff.get(USERS)

    shown = [user.username for user in listing.context["cl"].result_list]
    assert sorted(shown) == ["ana", "nova"]


def test_they_change_a_person_of_their_group_but_give_no_right(as_staff, people):
    ana = people["ana"]
    change = reverse("admin:auth_user_change", args=[ana.pk])
    page = as_staff.get(change)
    whole_fleet = Permission.objects.get(codename="view_whole_fleet")

    response = as_staff.post(
        change,
        form_data(
            page,
            first_name="Ana",
            date_joined_0="2026-01-02",  # the page's two inputs of one field
            date_joined_1="09:00:00",
            is_staff="on",
            is_superuser="on",
            user_permissions=[whole_fleet.pk],
            groups=[Group.objects.get(name="Whole fleet").pk],
        ),
        follow=True,
    )

    assert "was changed successfully" in response.text
    ana = User.objects.get(pk=ana.pk)
    assert ana.first_name == "Ana"
    assert (ana.is_staff, ana.is_superuser) == (False, False)
    assert not ana.user_permissions.exists()
    assert not ana.groups.exists()
    assert not scope_of(ana).whole_fleet


@pytest.mark.parametrize("name", ["bruno", "both", "staff-b"])
def test_they_neither_see_nor_change_the_password_of_others(as_staff, people, name):
    person = people[name]
    password = reverse("admin:auth_user_password_change", args=[person.pk])

    page = as_staff.get(reverse("admin:auth_user_change", args=[person.pk]))
    set_password = as_staff.post(
        password, {"password1": "N3w-passw0rd!", "password2": "N3w-passw0rd!"}
    )

    assert page.status_code == 302
    assert set_password.status_code == 404
    assert not User.objects.get(pk=person.pk).has_usable_password()


def member_added(client: Client, group: VehicleGroup, user: User) -> Any:
    """The group's page sent back with `user` added by hand (a third member row)."""
    change = reverse("admin:fleet_vehiclegroup_change", args=[group.pk])
    data = form_data(client.get(change)) | {
        "members-TOTAL_FORMS": "3",
        "members-2-user": str(user.pk),
        "members-2-group": str(group.pk),
    }
    return client.post(change, data, follow=True)


def test_they_put_in_their_group_only_people_they_administer(as_staff, people, region_a):
    response = member_added(as_staff, region_a, people["bruno"])

    assert "Select a valid choice" in response.text
    assert not VehicleGroupMember.objects.filter(group=region_a, user=people["bruno"]).exists()


def test_they_put_a_person_of_no_group_in_theirs(as_staff, people, region_a):
    response = member_added(as_staff, region_a, people["nova"])

    assert "was changed successfully" in response.text
    assert scope_of(User.objects.get(pk=people["nova"].pk)).group_ids == (region_a.pk,)


@pytest.mark.parametrize(
    "page",
    [
        "admin:auth_group_changelist",
        "admin:socialaccount_socialapp_changelist",
        "admin:socialaccount_socialaccount_changelist",
        "admin:signin_scimtoken_add",
        "admin:account_emailaddress_changelist",
        "admin:axes_accessattempt_changelist",
        "admin:django_tasks_database_dbtaskresult_changelist",
        "admin:fleet_cpfdisclosure_changelist",
    ],
)
def test_what_concerns_the_whole_organisation_is_not_theirs(as_staff, page):
    assert as_staff.get(reverse(page)).status_code == 403
