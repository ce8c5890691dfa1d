"""The admin of vehicle groups, as a superuser uses it: the list, a group's page with its
plates, members and mappings, and the CSV import with its report."""

from __future__ import annotations

import pytest
from allauth.socialaccount.models import SocialApp
from django.contrib.auth.models import Permission, User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from fleet.models import DirectoryGroup, VehicleGroup, VehicleGroupMember, VehicleGroupPlate
from fleet.services.scopes import directory_groups_apply, scope_of
from tests.admin.pages import form_data

pytestmark = [pytest.mark.django_db, pytest.mark.scoped]

CHANGELIST = reverse("admin:fleet_vehiclegroup_changelist")
IMPORT = reverse("admin:fleet_vehiclegroup_import")


@pytest.fixture
def admin(admin_client: Client) -> Client:
    admin_client.defaults["HTTP_ACCEPT_LANGUAGE"] = "en"
    return admin_client


@pytest.fixture
def sul() -> VehicleGroup:
    group = VehicleGroup.objects.create(name="Frota Sul", description="Porto Alegre")
    VehicleGroupPlate.objects.bulk_create(
        VehicleGroupPlate(group=group, registration=registration)
        for registration in ("ABC1C34", "BRA2E19")
    )
    return group


def change_url(group: VehicleGroup) -> str:
    return reverse("admin:fleet_vehiclegroup_change", args=[group.pk])


def registrations(group: VehicleGroup) -> list[str]:
    return sorted(group.plates.values_list("registration", flat=True))


def test_the_list_shows_each_groups_vehicles_and_members_and_the_import_button(admin, sul):
    manager = User.objects.create_user("marcos")
    VehicleGroupMember.objects.create(group=sul, user=manager, provider="")
    VehicleGroupMember.objects.create(group=sul, user=manager, provider="sso")
    VehicleGroup.objects.create(name="Vazio")

    response = admin.get(CHANGELIST)

    rows = {
        group.name: (group.vehicle_total, group.member_total)
        for group in response.context["cl"].result_list
    }
    assert rows == {"Frota Sul": (2, 1), "Vazio": (0, 0)}
    assert "Porto Alegre" in response.text
    assert f'href="{IMPORT}"' in response.text
    assert "Import plates from CSV" in response.text


@pytest.mark.parametrize("term", ["abc-1234", "ABC1C34", "sul", "Porto"])
def test_the_list_is_searched_by_name_and_by_plate_in_either_format(admin, sul, term):
    VehicleGroup.objects.create(name="Frota Norte").plates.create(registration="QWE5F78")

    response = admin.get(CHANGELIST, {"q": term})

    assert [group.name for group in response.context["cl"].result_list] == ["Frota Sul"]


def test_a_groups_page_shows_its_plates_in_both_formats_a_page_at_a_time(admin, sul):
    VehicleGroupPlate.objects.bulk_create(
        VehicleGroupPlate(group=sul, registration=f"ZZZ{number // 100}K{number % 100:02d}")
        for number in range(248)
    )

    first = admin.get(change_url(sul))
    last = admin.get(change_url(sul), {"plates_page": 3})

    assert first.status_code == 200
    assert "250 vehicles in this group" in first.text
    assert "<td>ABC1C34</td><td>ABC-1234</td>" in first.text
    assert "<td>BRA2E19</td><td>BRA-2419</td>" in first.text
    assert "<td>ZZZ0K00</td><td>—</td>" in first.text
    assert len(first.context["plate_rows"]) == 100
    assert "Page 1 of 3" in first.text
    assert len(last.context["plate_rows"]) == 50
    assert "ABC1C34" not in [row[0] for row in last.context["plate_rows"]]


def test_plates_typed_in_the_page_are_added_and_removed_and_the_revision_counted(admin, sul):
    page = admin.get(change_url(sul))

    response = admin.post(
        change_url(sul),
        form_data(page, plates_add="qwe-5678\nABC-1234\n\n", plates_remove="bra 2e19\nKLM3F45"),
        follow=True,
    )

    assert "1 vehicle added to Frota Sul. 1 was in it already." in response.text
    assert "1 vehicle removed from Frota Sul." in response.text
    assert registrations(sul) == ["ABC1C34", "QWE5G78"]
    sul.refresh_from_db()
    assert sul.revision == 2


def test_an_invalid_plate_typed_is_shown_by_line_and_nothing_changes(admin, sul):
    page = admin.get(change_url(sul))

    response = admin.post(
        change_url(sul), form_data(page, plates_add="QWE5678\nnot a plate", description="x")
    )

    assert response.status_code == 200
    assert "Line 2: “not a plate” is not a plate" in response.text
    assert registrations(sul) == ["ABC1C34", "BRA2E19"]
    sul.refresh_from_db()
    assert (sul.description, sul.revision) == ("Porto Alegre", 0)


def test_a_name_that_differs_from_anothers_only_in_case_is_refused(admin, sul):
    response = admin.post(reverse("admin:fleet_vehiclegroup_add"), {"name": "frota  SUL"})

    assert "There is already a group of this name" in response.text
    assert VehicleGroup.objects.count() == 1


def test_members_are_added_and_removed_by_hand_and_directory_members_are_read_only(admin, sul):
    ana = User.objects.create_user("ana")
    bruno = User.objects.create_user("bruno")
    carla = User.objects.create_user("carla")
    VehicleGroupMember.objects.create(group=sul, user=ana, provider="")
    VehicleGroupMember.objects.create(group=sul, user=carla, provider="sso")
    page = admin.get(change_url(sul))
    assert "carla" in page.text
    hand = "members"  # the first inline's prefix; the directory's is members-2
    data = form_data(page)
    data |= {
        f"{hand}-0-DELETE": "on",
        f"{hand}-1-user": str(bruno.pk),
        f"{hand}-1-group": str(sul.pk),
        f"{hand}-TOTAL_FORMS": "2",
    }

    response = admin.post(change_url(sul), data, follow=True)

    assert response.status_code == 200
    assert "was changed successfully" in response.text
    assert set(VehicleGroupMember.objects.values_list("user__username", "provider")) == {
        ("bruno", ""),
        ("carla", "sso"),
    }
    assert not any(name.startswith("members-2-0-") for name in data if "user" in name)
    assert scope_of(User.objects.get(pk=bruno.pk)).group_names == ("Frota Sul",)


def test_the_same_user_twice_by_hand_is_refused(admin, sul):
    ana = User.objects.create_user("ana")
    page = admin.get(change_url(sul))
    data = form_data(page) | {
        "members-0-user": str(ana.pk),
        "members-1-user": str(ana.pk),
        "members-TOTAL_FORMS": "2",
    }

    response = admin.post(change_url(sul), data)

    assert "ana is listed twice." in response.text
    assert not VehicleGroupMember.objects.exists()


def test_a_mapping_names_a_configured_provider_and_gives_the_group_at_sign_in(admin, sul):
    SocialApp.objects.create(
        provider="openid_connect",
        provider_id="group",
        name="Grupo Holding",
        client_id="fleet-portal-group",
        secret="s",
        settings={"server_url": "https://idp.example.com"},
    )
    page = admin.get(change_url(sul))
    assert '<option value="group">Grupo Holding (group)</option>' in page.text

    response = admin.post(
        change_url(sul),
        form_data(page)
        | {
            "directory_groups-TOTAL_FORMS": "1",
            "directory_groups-0-provider": "group",
            "directory_groups-0-value": "frota-sul",
        },
        follow=True,
    )

    assert "was changed successfully" in response.text
    mapping = DirectoryGroup.objects.get()
    assert (mapping.provider, mapping.value, mapping.group) == ("group", "frota-sul", sul)
    manager = User.objects.create_user("marcos")
    directory_groups_apply(user=manager, provider="group", values=["frota-sul", "other"])
    again = admin.get(change_url(sul))
    assert "marcos" in again.text
    assert "Members given by identity providers" in again.text


def test_without_a_configured_provider_the_mapping_is_typed(admin, sul):
    page = admin.get(change_url(sul))

    field = page.context["inline_admin_formsets"][2].formset.empty_form.fields["provider"]

    assert field.__class__.__name__ == "CharField"
    assert "No identity provider is configured" in str(field.help_text)


def test_the_csv_import_shows_what_it_did_and_the_refused_lines_by_number(admin, sul):
    upload = SimpleUploadedFile(
        "plates.csv",
        "placa;grupo\nABC-1234;Frota Sul\nQWE5678;Frota Norte\nbad;Frota Norte\n;Frota\n".encode(
            "cp1252"
        ),
        content_type="text/csv",
    )

    response = admin.post(IMPORT, {"file": upload})

    assert response.status_code == 200
    report = response.context["report"]
    assert (report.groups_created, report.plates_added, report.already_present) == (
        ["Frota Norte"],
        1,
        1,
    )
    assert "1 group created: Frota Norte" in response.text
    assert "2 lines refused" in response.text
    assert "<td>4</td><td><code>bad;Frota Norte</code></td>" in response.text
    assert "<td>5</td>" in response.text
    assert registrations(VehicleGroup.objects.get(name="Frota Norte")) == ["QWE5G78"]


def test_a_plain_list_is_imported_into_the_group_chosen(admin, sul):
    upload = SimpleUploadedFile("plates.txt", b"QWE-5678\r\nKLM3F45\r\n")

    response = admin.post(IMPORT, {"file": upload, "group": sul.pk})

    assert response.context["report"].plates_added == 2
    assert registrations(sul) == ["ABC1C34", "BRA2E19", "KLM3F45", "QWE5G78"]
    sul.refresh_from_db()
    assert sul.revision == 1


def test_a_file_that_is_not_text_is_refused_on_the_form(admin):
    upload = SimpleUploadedFile("plates.xlsx", b"PK\x03\x04\0\0\0")

    response = admin.post(IMPORT, {"file": upload})

    assert response.context["report"] is None
    assert "This file is not a text file" in response.text


def test_staff_who_may_only_view_groups_see_their_vehicles_and_cannot_import(client, sul):
    viewer = User.objects.create_user("v", is_staff=True)
    # Of the whole fleet: scoped staff see only their own groups (test_admin_scope_walk).
    viewer.user_permissions.add(
        *Permission.objects.filter(codename__in=["view_vehiclegroup", "view_whole_fleet"])
    )
    client.force_login(viewer)

    assert "Import plates from CSV" not in client.get(CHANGELIST).text
    assert client.get(IMPORT).status_code == 403
    page = client.get(change_url(sul))
    assert page.status_code == 200
    assert "<td>ABC1C34</td>" in page.text
    assert "plates_add" not in page.text


def test_a_mapping_of_a_provider_no_longer_configured_stays_editable(admin, sul):
    SocialApp.objects.create(
        provider="openid_connect",
        provider_id="group",
        name="Grupo Holding",
        client_id="fleet-portal-group",
        settings={"server_url": "https://idp.example.com"},
    )
    DirectoryGroup.objects.create(provider="old-sso", value="frota-sul", group=sul)

    page = admin.get(change_url(sul))

    assert '<option value="old-sso" selected>old-sso (not configured)</option>' in page.text
    response = admin.post(change_url(sul), form_data(page), follow=True)
    assert "was changed successfully" in response.text
    assert DirectoryGroup.objects.get().provider == "old-sso"


def test_the_mappings_have_a_page_of_their_own(admin, sul):
    DirectoryGroup.objects.create(provider="sso", value="frota-sul", group=sul)

    listing = admin.get(reverse("admin:fleet_directorygroup_changelist"))
    added = admin.post(
        reverse("admin:fleet_directorygroup_add"),
        {"provider": "sso", "value": "motoristas-sul", "group": sul.pk},
        follow=True,
    )

    assert "frota-sul" in listing.text
    assert added.status_code == 200
    assert set(DirectoryGroup.objects.values_list("provider", "value", "group__name")) == {
        ("sso", "frota-sul", "Frota Sul"),
        ("sso", "motoristas-sul", "Frota Sul"),
    }
