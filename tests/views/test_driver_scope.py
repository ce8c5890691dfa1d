"""A fine's driver set by hand names a driver the user sees: a manager of one group
cannot name another group's driver, and so cannot open that driver's page, picker entry
or admin page to themselves; a correction already made (before the rule, or by someone
who sees the whole fleet) opens nothing either."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from fleet.models import Driver, Fine, FineDriverCorrection, VehicleGroup, VehicleGroupMember
from fleet.services.attribution import fine_driver_correct
from fleet.services.driver_history import history_observe
from fleet.services.vehicle_cache import current_snapshot
from tests.views.test_scope_walk import Side, sides

__all__ = ["sides"]  # the fixture

pytestmark = [pytest.mark.django_db, pytest.mark.scoped]

ENGLISH = {"Accept-Language": "en"}


def may_set_drivers(side: Side) -> None:
    member = VehicleGroupMember.objects.get(user__username=f"manager-{side.name.lower()}")
    member.user.user_permissions.add(Permission.objects.get(codename="change_fine_driver"))


@pytest.mark.parametrize(
    "form",
    [{"choice": "other", "driver": "{driver}"}, {"choice": "{driver}"}],
    ids=["typed", "as-a-candidate"],
)
def test_a_correction_cannot_name_another_groups_driver(
    sides: list[Side], form: dict[str, str]
) -> None:
    a, b = sides
    may_set_drivers(a)
    fine = Fine.objects.get(pk=a.fine)
    assert a.client.get(f"/drivers/{b.driver}/").status_code == 404

    sent = {key: value.format(driver=b.driver) for key, value in form.items()}
    response = a.client.post(f"/fines/{a.fine}/driver", {**sent, "reason": "lent"}, headers=ENGLISH)

    assert response.status_code == 400
    assert f"No driver of your vehicles has the id {b.driver}." in response.text
    assert b.driver_name not in response.text
    after = Fine.objects.get(pk=a.fine)
    assert (after.driver_id, after.driver_basis) == (fine.driver_id, fine.driver_basis)
    assert not FineDriverCorrection.objects.exists()
    assert a.client.get(f"/drivers/{b.driver}/").status_code == 404
    found = a.client.get(f"/fines/drivers/?driver={b.driver_name.split()[0]}")
    assert b.driver_name not in found.text


def test_a_correction_names_a_driver_of_the_managers_vehicles(sides: list[Side]) -> None:
    a, _b = sides
    may_set_drivers(a)
    response = a.client.post(
        f"/fines/{a.fine}/driver", {"choice": "other", "driver": a.driver, "reason": "lent"}
    )
    assert response.status_code == 302
    assert FineDriverCorrection.objects.get().to_driver_id == a.driver


def test_a_correction_made_earlier_opens_no_other_groups_driver(
    sides: list[Side], django_user_model: Any
) -> None:
    """A fine of A set to B's driver (before the rule, or by someone who sees the whole
    fleet): A's manager and A's staff still find nothing of B's driver."""
    a, b = sides
    history_observe(current_snapshot()[0])  # who had each vehicle, as a refresh takes it in
    someone = django_user_model.objects.create_superuser("chefe", password="pw")
    fine_driver_correct(fine_id=a.fine, driver_id=b.driver, reason="lent", user=someone)

    assert a.client.get(f"/drivers/{b.driver}/").status_code == 404
    found = a.client.get(f"/fines/drivers/?driver={b.driver_name.split()[0]}")
    assert b.driver_name not in found.text

    staff = django_user_model.objects.create_user("suporte-a", password="pw", is_staff=True)
    for codename in ("view_driver", "change_driver", "view_fine"):
        staff.user_permissions.add(Permission.objects.get(codename=codename))
    VehicleGroupMember.objects.create(user=staff, group=VehicleGroup.objects.get(name="Região A"))
    admin = Client()
    admin.force_login(staff)
    listed = admin.get("/admin/fleet/driver/")
    assert listed.status_code == 200
    assert a.driver_name in listed.text
    assert b.driver_name not in listed.text
    b_row = Driver.objects.get(driver_id=b.driver)
    page = admin.get(f"/admin/fleet/driver/{b_row.pk}/change/")
    assert page.status_code == 302  # the admin's "does not exist", back to its index
    admin.post(
        f"/admin/fleet/driver/{b_row.pk}/change/", {"driver_id": b.driver, "name": "Renamed"}
    )
    assert Driver.objects.get(pk=b_row.pk).name == b.driver_name
