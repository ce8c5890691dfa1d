"""The admin of vehicle groups as staff limited to their groups use it, with the rights to
add and change groups and mappings: the CSV import and the mappings of identity
providers' groups reach their own groups only, and only whole-fleet staff create groups."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from fleet.models import DirectoryGroup, VehicleGroup, VehicleGroupMember, VehicleGroupPlate
from fleet.services.scopes import directory_groups_apply, scope_of
from tests.admin.pages import form_data
from tests.scopes import grant_whole_fleet

pytestmark = [pytest.mark.django_db, pytest.mark.scoped]

IMPORT = reverse("admin:fleet_vehiclegroup_import")
MAPPINGS = reverse("admin:fleet_directorygroup_changelist")
MAPPING_ADD = reverse("admin:fleet_directorygroup_add")
NOT_YOURS = "is not one of your vehicle groups"


def region(name: str, *registrations: str) -> VehicleGroup:
    group = VehicleGroup.objects.create(name=name)
    VehicleGroupPlate.objects.bulk_create(
        VehicleGroupPlate(group=group, registration=registration) for registration in registrations
    )
    return group


@pytest.fixture
def region_a() -> VehicleGroup:
    return region("Region A", "ABC1C34", "BRA2E19")


@pytest.fixture
def region_b() -> VehicleGroup:
    return region("Region B", "XYZ9K87", "QWE5G78")


@pytest.fixture
def staff(region_a: VehicleGroup, region_b: VehicleGroup) -> User:
    """Staff of region A who may add and change vehicle groups and their mappings."""
    user = User.objects.create_user("staff-a", is_staff=True)
    codenames = [
        f"{right}_{model}"
        for right in ("add", "change", "view")
        for model in ("vehiclegroup", "directorygroup")
    ]
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    VehicleGroupMember.objects.create(group=region_a, user=user)
    return user


@pytest.fixture
def as_staff(client: Client, staff: User) -> Client:
    client.force_login(staff)
    client.defaults["HTTP_ACCEPT_LANGUAGE"] = "en"
    return client


def registrations(group: VehicleGroup) -> list[str]:
    return sorted(group.plates.values_list("registration", flat=True))


def csv(text: str) -> SimpleUploadedFile:
    return SimpleUploadedFile("plates.csv", text.encode(), content_type="text/csv")


def test_the_import_offers_only_the_staff_members_groups(as_staff, region_a):
    page = as_staff.get(IMPORT)

    assert page.status_code == 200
    assert list(page.context["form"].fields["group"].queryset) == [region_a]
    assert "Region B" not in page.text
    assert "only staff who see the whole fleet create groups" in page.text


def test_a_row_naming_another_group_is_refused_by_its_line_and_that_group_is_unchanged(
    as_staff, region_a, region_b
):
    upload = csv("plate,group\nBRA2E19,Region A\nABC1C34,Region B\nBRA2E19,region  b\n")

    response = as_staff.post(IMPORT, {"file": upload})

    assert registrations(region_b) == ["QWE5G78", "XYZ9K87"]
    assert response.context["report"].already_present == 1
    reason = (
        "is not one of your vehicle groups: only staff who see the whole fleet add "
        "vehicles to other groups or create groups."
    )
    report = response.context["report"]
    assert [(line.number, line.reason) for line in report.refused] == [
        (3, f"“Region B” {reason}"),
        (4, f"“region b” {reason}"),
    ]
    assert "<td>3</td><td><code>ABC1C34,Region B</code></td>" in response.text
    region_b.refresh_from_db()
    assert region_b.revision == 0


def test_a_row_naming_a_group_that_does_not_exist_is_refused_and_no_group_is_created(
    as_staff, region_a
):
    response = as_staff.post(IMPORT, {"file": csv("KLM3F45,Region C\n")})

    report = response.context["report"]
    assert report.groups_created == []
    assert [(line.number, NOT_YOURS in line.reason) for line in report.refused] == [(1, True)]
    assert not VehicleGroup.objects.filter(name="Region C").exists()
    assert "No group created" in response.text


def test_a_plain_list_into_another_group_is_refused(as_staff, region_b):
    upload = SimpleUploadedFile("plates.txt", b"KLM3F45\n")

    response = as_staff.post(IMPORT, {"file": upload, "group": region_b.pk})

    assert response.context["report"] is None
    assert "Select a valid choice" in response.text
    assert registrations(region_b) == ["QWE5G78", "XYZ9K87"]


def test_a_plain_list_into_their_own_group_is_imported(as_staff, staff):
    other = region("Region A2")
    VehicleGroupMember.objects.create(group=other, user=staff)
    upload = SimpleUploadedFile("plates.txt", b"BRA-2419\n")

    response = as_staff.post(IMPORT, {"file": upload, "group": other.pk})

    assert response.context["report"].plates_added == 1
    assert registrations(other) == ["BRA2E19"]


def test_whole_fleet_staff_import_into_any_group_and_create_groups(as_staff, staff, region_b):
    grant_whole_fleet(staff)

    response = as_staff.post(IMPORT, {"file": csv("KLM3F45,Region B\nKLM3F46,Region C\n")})

    report = response.context["report"]
    assert (report.groups_created, report.plates_added, report.refused) == (["Region C"], 2, [])
    assert registrations(region_b) == ["KLM3F45", "QWE5G78", "XYZ9K87"]


def test_the_mappings_list_shows_only_those_onto_the_staff_members_groups(
    as_staff, region_a, region_b
):
    DirectoryGroup.objects.create(provider="sso", value="frota-a", group=region_a)
    DirectoryGroup.objects.create(provider="sso", value="frota-b", group=region_b)

    listing = as_staff.get(MAPPINGS)

    assert [mapping.value for mapping in listing.context["cl"].result_list] == ["frota-a"]
    assert "frota-b" not in listing.text


def test_a_mapping_onto_another_group_is_neither_shown_nor_changed(as_staff, region_a, region_b):
    mapping = DirectoryGroup.objects.create(provider="sso", value="frota-b", group=region_b)
    change = reverse("admin:fleet_directorygroup_change", args=[mapping.pk])
    delete = reverse("admin:fleet_directorygroup_delete", args=[mapping.pk])

    page = as_staff.get(change)
    posted = as_staff.post(change, {"provider": "sso", "value": "staff-a", "group": region_a.pk})
    deleted = as_staff.post(delete, {"post": "yes"})

    # Not found (to the index), and without the right to delete, refused first.
    assert (page.status_code, posted.status_code, deleted.status_code) == (302, 302, 403)
    assert page.url == posted.url == reverse("admin:index")
    assert list(DirectoryGroup.objects.values_list("value", "group")) == [("frota-b", region_b.pk)]


def test_a_mapping_onto_another_group_is_refused_and_gives_it_at_no_sign_in(
    as_staff, staff, region_a, region_b
):
    page = as_staff.get(MAPPING_ADD)
    response = as_staff.post(
        MAPPING_ADD, {"provider": "sso", "value": "staff-a", "group": region_b.pk}
    )

    assert list(page.context["adminform"].form.fields["group"].queryset) == [region_a]
    assert response.status_code == 200
    assert "Select a valid choice" in response.text
    assert not DirectoryGroup.objects.exists()
    directory_groups_apply(user=staff, provider="sso", values=["staff-a"])
    assert scope_of(User.objects.get(pk=staff.pk)).group_ids == (region_a.pk,)


def test_a_mapping_of_theirs_cannot_be_moved_onto_another_group(as_staff, region_a, region_b):
    mapping = DirectoryGroup.objects.create(provider="sso", value="frota-a", group=region_a)
    change = reverse("admin:fleet_directorygroup_change", args=[mapping.pk])

    response = as_staff.post(change, {"provider": "sso", "value": "frota-a", "group": region_b.pk})

    assert "Select a valid choice" in response.text
    mapping.refresh_from_db()
    assert mapping.group == region_a


def test_a_mapping_onto_their_own_group_is_added(as_staff, region_a):
    response = as_staff.post(
        MAPPING_ADD, {"provider": "sso", "value": "frota-a", "group": region_a.pk}, follow=True
    )

    assert response.status_code == 200
    assert list(DirectoryGroup.objects.values_list("value", "group")) == [("frota-a", region_a.pk)]


def test_the_group_search_of_a_mapping_finds_only_their_groups(as_staff):
    found = as_staff.get(
        reverse("admin:autocomplete"),
        {
            "app_label": "fleet",
            "model_name": "directorygroup",
            "field_name": "group",
            "term": "Region",
        },
    )

    assert [result["text"] for result in found.json()["results"]] == ["Region A"]


def test_a_vehicle_of_another_group_typed_into_theirs_is_refused_by_its_line(
    as_staff, staff, region_a
):
    change = reverse("admin:fleet_vehiclegroup_change", args=[region_a.pk])
    page = as_staff.get(change)

    response = as_staff.post(change, form_data(page, plates_add="ABC-1234\nXYZ9K87\nKLM3F45"))

    assert registrations(region_a) == ["ABC1C34", "BRA2E19"]
    assert "Line 2: “XYZ9K87” is not a vehicle of your groups" in response.text
    assert "Line 3: “KLM3F45” is not a vehicle of your groups" in response.text
    assert scope_of(User.objects.get(pk=staff.pk)).registrations() == {"ABC1C34", "BRA2E19"}


def test_a_row_of_a_vehicle_they_do_not_see_is_refused_by_its_line(as_staff, region_a):
    response = as_staff.post(IMPORT, {"file": csv("XYZ-9K87,Region A\nBRA2E19,Region A\n")})

    report = response.context["report"]
    assert [line.number for line in report.refused] == [1]
    assert "is not a vehicle of your groups" in report.refused[0].reason
    assert registrations(region_a) == ["ABC1C34", "BRA2E19"]


def test_a_vehicle_moves_between_their_own_groups(as_staff, staff, region_a):
    other = region("Region A2")
    VehicleGroupMember.objects.create(group=other, user=staff)

    response = as_staff.post(IMPORT, {"file": csv("ABC-1234,Region A2\n")})

    assert response.context["report"].plates_added == 1
    assert registrations(other) == ["ABC1C34"]
