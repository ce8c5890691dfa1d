"""Staff without the whole-fleet permission are scoped like managers in the admin too:
the fines and notifications of their vehicle groups only, and no raw deliveries (which
name any vehicle)."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import Permission

from fleet.models import VehicleGroup, VehicleGroupMember
from fleet.webhooks.processing import deliveries_process_received

pytestmark = [pytest.mark.django_db, pytest.mark.scoped]

WEBHOOK = "/webhooks/fleet/dev-webhook-token/"


def deliver(client, plate: str, id: int) -> None:
    payload = {"frame": {"id": id, "treated": False, "carPlate": plate}, "linkFrame": None}
    response = client.post(WEBHOOK, data=json.dumps(payload), content_type="application/json")
    assert response.status_code == 202
    deliveries_process_received()


@pytest.fixture
def staff(client, django_user_model):
    user = django_user_model.objects.create_user("suporte", password="pw-123456", is_staff=True)
    for codename in ("view_fine", "view_notification", "view_webhookdelivery"):
        user.user_permissions.add(Permission.objects.get(codename=codename))
    group = VehicleGroup.objects.create(name="Campinas")
    group.plates.create(registration="ABC1C34")  # ABC-1234's registration
    VehicleGroupMember.objects.create(group=group, user=user)
    deliver(client, "ABC-1234", 1)
    deliver(client, "XYZ9K87", 2)
    return user


def test_scoped_staff_see_the_fines_of_their_groups_only(client, staff):
    client.force_login(staff)

    response = client.get("/admin/fleet/fine/")

    assert response.status_code == 200
    assert [fine.external_id for fine in response.context["cl"].result_list] == ["1"]
    other = response.context["cl"].model.objects.get(external_id="2")
    assert client.get(f"/admin/fleet/fine/{other.pk}/change/").status_code in (302, 404)
    assert client.get("/admin/fleet/webhookdelivery/").status_code == 403


def test_with_the_whole_fleet_permission_they_see_every_fine(client, staff):
    staff.user_permissions.add(Permission.objects.get(codename="view_whole_fleet"))
    client.force_login(staff)

    response = client.get("/admin/fleet/fine/")

    assert sorted(fine.external_id for fine in response.context["cl"].result_list) == ["1", "2"]
    assert client.get("/admin/fleet/webhookdelivery/").status_code == 200
