"""The scope walk of the admin: two staff members of disjoint vehicle groups, each given
every permission to view, walk every change list of the admin, its search by the other
side's plate, and every record's page and history: nothing of the other group shows
(its plates in both formats, its amounts, its driver's name, its records' texts).

Every model the admin registers is walked; one whose pages never show a vehicle is named
in `NOT_ABOUT_VEHICLES` with the reason, and is walked too (a leak there fails as well).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest
from django.contrib import admin
from django.contrib.auth.models import Permission, User
from django.db.models import Model
from django.test import Client
from django.urls import reverse

from alerts.models import Alert, AlertPreferences, WebhookAttempt, WebhookSubscription
from fleet import plates
from fleet.models import (
    Driver,
    DriverBasis,
    Fine,
    Notification,
    VehicleGroup,
    VehicleGroupMember,
)
from fleet.webhooks.processing import deliveries_process_received

pytestmark = [pytest.mark.django_db, pytest.mark.scoped]

WEBHOOK = "/webhooks/fleet/dev-webhook-token/"
ENGLISH = {"Accept-Language": "en"}


@dataclass
class Side:
    """A region: its plate, the staff member who sees it, what must not show to the other."""

    name: str
    plate: str
    amount: str
    driver: int
    driver_name: str
    secret: str
    staff: User | None = None
    words: list[str] = field(default_factory=list)

    def forbidden(self) -> list[str]:
        found = [self.secret, self.driver_name, self.amount, self.amount.replace(".", ",")]
        found += {self.plate, plates.display(self.plate), plates.registration(self.plate)}
        if (old := plates.old_plate(self.plate)) is not None:
            found += {old, plates.display(old)}
        return found


def side(client: Client, django_user_model, number: int, data: Side) -> Side:
    group = VehicleGroup.objects.create(name=f"Region {number}")
    group.plates.create(registration=plates.registration(data.plate))
    payload = {
        "frame": {
            "id": number,
            "treated": False,
            "carPlate": data.plate,
            "amount": data.amount,
            "description": f"Infraction {data.secret}",
        },
        "linkFrame": None,
    }
    note = {
        "notification": {
            "id": 100 + number,
            "treated": False,
            "carPlate": data.plate,
            "title": data.secret,
        }
    }
    for body in (payload, note):
        answer = client.post(WEBHOOK, data=json.dumps(body), content_type="application/json")
        assert answer.status_code == 202
    deliveries_process_received()
    fine = Fine.objects.get(external_id=str(number))
    Fine.objects.filter(pk=fine.pk).update(driver_id=data.driver, driver_basis=DriverBasis.LIST)
    Driver.objects.create(driver_id=data.driver, name=data.driver_name)

    manager = django_user_model.objects.create_user(f"manager-{number}")
    VehicleGroupMember.objects.create(group=group, user=manager)
    event = {"plate": data.plate, "amount": data.amount, "text": data.secret}
    alert = Alert.objects.create(
        user=manager,
        channel="email",
        event="new_fine",
        event_key=f"new_fine:{fine.pk}",
        fine=fine,
        data=event,
    )
    subscription = WebhookSubscription(user=manager, url=f"https://hooks.example/{number}")
    subscription.set_secret("s" * 32)
    subscription.save()
    hooked = Alert.objects.create(
        user=manager,
        channel="webhook",
        subscription=subscription,
        event="new_notification",
        event_key=f"new_notification:{number}",
        notification=Notification.objects.get(external_id=str(100 + number)),
        data=event,
    )
    WebhookAttempt.objects.create(
        alert=hooked, subscription=subscription, ok=False, error=f"refused {data.plate}"
    )
    assert alert.pk
    AlertPreferences.objects.create(user=manager, all_vehicles=False, plates=[data.plate])

    staff = django_user_model.objects.create_user(f"staff-{number}", is_staff=True)
    staff.user_permissions.add(
        *Permission.objects.filter(codename__startswith="view_").exclude(
            codename__in=["view_whole_fleet", "view_full_cpf"]
        )
    )
    VehicleGroupMember.objects.create(group=group, user=staff)
    data.staff = staff
    return data


@pytest.fixture
def sides(client, django_user_model) -> tuple[Side, Side]:
    north = side(
        client,
        django_user_model,
        1,
        Side("north", "ABC1234", "987.65", 7001, "Norberto Nortista", "quasar"),
    )
    south = side(
        client,
        django_user_model,
        2,
        Side("south", "XYZ9K87", "123.45", 7002, "Suzana Sulista", "pulsar"),
    )
    return north, south


def admin_url(model: type[Model], page: str, *args: object) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{page}", args=args)


def pages(model: type[Model], pk: object) -> list[str]:
    return [admin_url(model, "change", pk), admin_url(model, "history", pk)]


def test_scoped_staff_see_nothing_of_another_group_anywhere_in_the_admin(sides):
    for viewer, other in (sides, sides[::-1]):
        client = Client()
        client.force_login(viewer.staff)
        forbidden = other.forbidden()
        walked = []
        for model in admin.site._registry:
            changelist = admin_url(model, "changelist")
            # Searched in lower case: the box echoes the term, a row would show it upper.
            urls = [changelist, f"{changelist}?q={other.plate.lower()}"]
            for pk in model._default_manager.values_list("pk", flat=True):
                urls += pages(model, pk)
            for url in urls:
                answer = client.get(url, headers=ENGLISH)
                assert answer.status_code in (200, 302, 403, 404), (url, answer.status_code)
                text = answer.content.decode()
                leaked = [word for word in forbidden if word in text]
                assert not leaked, f"{viewer.name} sees {leaked} of {other.name} at {url}"
                walked.append(url)
        assert walked

    # What each may see of their own: the walk is not vacuous.
    north, _south = sides
    client = Client()
    client.force_login(north.staff)
    fines = client.get(reverse("admin:fleet_fine_changelist")).content.decode()
    assert plates.registration(north.plate) in fines
    alerts = client.get(reverse("admin:alerts_alert_changelist"), headers=ENGLISH).content.decode()
    assert "manager-1" in alerts
    drivers = client.get(reverse("admin:fleet_driver_changelist")).content.decode()
    assert north.driver_name in drivers
    groups = client.get(reverse("admin:fleet_vehiclegroup_changelist")).content.decode()
    assert "Region 1" in groups
    attempt = WebhookAttempt.objects.get(error=f"refused {north.plate}")
    page = client.get(reverse("admin:alerts_webhookattempt_change", args=[attempt.pk]))
    assert f"refused {north.plate}" in page.content.decode()
