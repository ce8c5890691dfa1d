"""Drivers in the admin: a CPF typed by who may enter one (stored encrypted, listed
masked, never shown back), and the action that looks up the chosen drivers' licences."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission

from fleet.models import CnhLookup, Driver
from fleet.services.driver_cpfs import driver_cpf, driver_cpf_set
from tests.admin.pages import form_data
from tests.conftest import run_tasks
from tests.scopes import grant_whole_fleet

pytestmark = pytest.mark.django_db(transaction=True)

ENGLISH = {"Accept-Language": "en"}
SUSPENDED_CPF = "42242242245"


def staff_with(django_user_model: Any, *codenames: str) -> Any:
    user = django_user_model.objects.create_user("chefe", password="pw", is_staff=True)
    grant_whole_fleet(user)
    for codename in codenames:
        user.user_permissions.add(
            Permission.objects.get(content_type__app_label="fleet", codename=codename)
        )
    return user


def test_who_may_enter_cpfs_types_one_and_sees_it_masked(client, django_user_model) -> None:
    client.force_login(staff_with(django_user_model, "change_driver", "change_driver_cpf"))
    driver = Driver.objects.create(driver_id=154, name="Felipe Rocha")
    url = f"/admin/fleet/driver/{driver.pk}/change/"

    page = client.get(url, headers=ENGLISH)
    saved = client.post(url, form_data(page, cpf="422.422.422-45"), headers=ENGLISH)
    listed = client.get("/admin/fleet/driver/", headers=ENGLISH).text
    again = client.get(url, headers=ENGLISH).text

    assert saved.status_code == 302
    assert driver_cpf(Driver.objects.get(pk=driver.pk)) == SUSPENDED_CPF
    assert "***.422.422-**" in listed
    assert "422.422.422-45" not in listed + again
    assert SUSPENDED_CPF not in listed + again


def test_staff_without_the_permission_cannot_enter_a_cpf(client, django_user_model) -> None:
    client.force_login(staff_with(django_user_model, "change_driver"))
    driver = Driver.objects.create(driver_id=154, name="Felipe Rocha")
    url = f"/admin/fleet/driver/{driver.pk}/change/"

    page = client.get(url, headers=ENGLISH)
    client.post(url, form_data(page, cpf="422.422.422-45"), headers=ENGLISH)

    assert 'name="cpf"' not in page.text
    assert Driver.objects.get(pk=driver.pk).cpf_encrypted is None


def test_the_action_looks_up_the_chosen_drivers_licences(
    client, django_user_model, fleet_settings
) -> None:
    staff = staff_with(django_user_model, "change_driver", "view_driver")
    client.force_login(staff)
    with_cpf = Driver.objects.create(driver_id=154, name="Felipe Rocha")
    driver_cpf_set(driver=with_cpf, value=SUSPENDED_CPF)
    without = Driver.objects.create(driver_id=155, name="Ana Souza")

    response = client.post(
        "/admin/fleet/driver/",
        {"action": "licences_look_up", "_selected_action": [with_cpf.pk, without.pk]},
        headers=ENGLISH,
        follow=True,
    )
    run_tasks()

    assert "1 licence lookup was queued" in response.text
    lookup = CnhLookup.objects.get()
    assert (lookup.owner, lookup.kind, lookup.status) == (staff, "batch", "done")
    assert Driver.objects.get(pk=with_cpf.pk).licence is not None
    listed = client.get("/admin/fleet/driver/", headers=ENGLISH).text
    assert "Suspended" in listed
