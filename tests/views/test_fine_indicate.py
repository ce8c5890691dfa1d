"""Indicating a fine's driver from its page: the driver (the attributed one filled in, a
person checks it), how and when; the fine leaves the queue and the figures at risk; the
authority's answer: accepted, or refused (back to the queue, with its reason). Each
change audited; two at once, one wins; a driver outside the user's vehicles refused."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
import time_machine
from django.contrib.auth.models import Permission

from fleet.models import (
    Driver,
    DriverIndication,
    Fine,
    FineIndicationChange,
    Indication,
    VehicleGroupMember,
)
from fleet.services.tallies import fine_tallies_differences, fine_tallies_rebuild
from fleet.webhooks.processing import deliveries_process_received
from tests.views.test_scope_walk import Side, sides

__all__ = ["sides"]  # the fixture

pytestmark = pytest.mark.django_db

WEBHOOK = "/webhooks/fleet/dev-webhook-token/"
ENGLISH = {"Accept-Language": "en"}
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def clock():
    with time_machine.travel(NOW, tick=False) as traveller:
        yield traveller


def a_fine(client) -> Fine:
    Driver.objects.create(driver_id=7001, name="Ana Souza")
    frame = {
        "id": 1,
        "carPlate": "ABC1D23",
        "autoInfracao": "E01",
        "description": "Avançar o sinal vermelho do semáforo",
        "amount": "293.47",
        "treated": False,
        "indicationDeadline": "2026-12-05",
    }
    body = json.dumps({"frame": frame, "linkFrame": None, "link": "https://boletos.example/1"})
    assert client.post(WEBHOOK, data=body, content_type="application/json").status_code == 202
    deliveries_process_received()
    fine = Fine.objects.get()
    # Attributed from the vehicle list when it arrived: a guess the form fills in. Set
    # here, the tallies counted again, as after any change made to the table directly.
    Fine.objects.filter(pk=fine.pk).update(driver_id=7001, driver_basis="list")
    fine_tallies_rebuild()
    return Fine.objects.get()


def indicate(client, fine: Fine, **fields):
    form = {"driver": "Ana Souza (7001)", "channel": "post", "on": "2026-12-01"}
    form |= {"seen": "needed:sent" if "indicationRequired" in fine.payload else "needed:assumed"}
    return client.post(f"/fines/{fine.pk}/indicate", form | fields, headers=ENGLISH)


def test_indicating_records_who_how_and_when_and_the_fine_leaves_the_queue(
    client, indicating_client
):
    fine = a_fine(client)
    page = indicating_client.get(fine.get_absolute_url(), headers=ENGLISH).text
    assert 'value="Ana Souza (7001)"' in page  # the attributed driver, filled in
    assert "a guess. Check who was driving before indicating." in page
    assert indicating_client.get("/fines/indications/").text.count('data-testid="queue-row"') == 1

    response = indicate(indicating_client, fine)

    assert response.status_code == 302
    fine.refresh_from_db()
    assert fine.indication == Indication.INDICATED
    indication = DriverIndication.objects.get()
    assert (indication.driver_id, indication.driver_name, indication.channel) == (
        7001,
        "Ana Souza",
        "post",
    )
    assert indication.user_name == "marcos"
    change = FineIndicationChange.objects.get()
    assert (change.before, change.after) == ("needed", "indicated")
    assert 'data-testid="queue-row"' not in indicating_client.get("/fines/indications/").text
    page = indicating_client.get(fine.get_absolute_url(), headers=ENGLISH).text
    assert "Indicated, awaiting the authority" in page
    assert "Ana Souza indicated by post" in page
    assert "on 01/12/2026, recorded by marcos" in page
    dashboard = indicating_client.get("/", headers=ENGLISH).text
    assert 'data-testid="at-risk">R$&nbsp;0.00<' in dashboard
    assert fine_tallies_differences() == {}


def test_refused_goes_back_to_the_queue_with_its_reason_accepted_stays(client, indicating_client):
    fine = a_fine(client)
    indicate(indicating_client, fine)

    missing = indicating_client.post(
        f"/fines/{fine.pk}/indication-answer",
        {"accepted": "0", "seen": "indicated:typed", "reason": ""},
        headers=ENGLISH,
    )
    assert missing.status_code == 400
    assert "Say why the authority refused it." in missing.text

    indicating_client.post(
        f"/fines/{fine.pk}/indication-answer",
        {"accepted": "0", "seen": "indicated:typed", "reason": "Assinatura do condutor ausente"},
    )
    fine.refresh_from_db()
    assert fine.indication == Indication.NEEDED
    assert DriverIndication.objects.get().outcome == "refused"
    assert indicating_client.get("/fines/indications/").text.count('data-testid="queue-row"') == 1
    page = indicating_client.get(fine.get_absolute_url(), headers=ENGLISH).text
    assert "Assinatura do condutor ausente" in page

    indicate(indicating_client, fine, seen="needed:typed")
    indicating_client.post(
        f"/fines/{fine.pk}/indication-answer", {"accepted": "1", "seen": "indicated:typed"}
    )
    fine.refresh_from_db()
    assert fine.indication == Indication.ACCEPTED
    assert [i.outcome for i in DriverIndication.objects.order_by("pk")] == ["refused", "accepted"]
    assert FineIndicationChange.objects.count() == 4
    assert fine_tallies_differences() == {}


def test_twice_at_once_one_wins_and_the_other_is_told(client, indicating_client):
    fine = a_fine(client)

    first = indicate(indicating_client, fine)
    second = indicate(indicating_client, fine)

    assert (first.status_code, second.status_code) == (302, 409)
    assert "Nothing of yours was saved" in second.text
    assert DriverIndication.objects.get().driver_id == 7001


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"on": "2026-12-02"}, "That day has not come yet"),
        ({"on": "ontem"}, "Type a day"),
        ({"driver": ""}, "This field is required"),
        ({"driver": "Zé Ninguém"}, "name begins like “Zé Ninguém”"),
    ],
)
def test_bad_input_is_refused_and_nothing_changes(client, indicating_client, fields, error):
    fine = a_fine(client)

    response = indicate(indicating_client, fine, **fields)

    assert response.status_code == 400
    assert error in response.text
    fine.refresh_from_db()
    assert fine.indication == Indication.NEEDED
    assert not DriverIndication.objects.exists()


@pytest.mark.scoped
def test_a_driver_of_another_group_cannot_be_indicated(sides: list[Side]):
    a, b = sides
    member = VehicleGroupMember.objects.get(user__username=f"manager-{a.name.lower()}")
    member.user.user_permissions.add(Permission.objects.get(codename="change_fine_indication"))
    fine = Fine.objects.get(pk=a.fine)
    seen = f"{fine.indication}:{fine.indication_basis}"

    response = a.client.post(
        f"/fines/{a.fine}/indicate",
        {"driver": str(b.driver), "channel": "post", "on": "2026-12-01", "seen": seen},
        headers=ENGLISH,
    )

    assert response.status_code == 400
    assert f"No driver of your vehicles has the id {b.driver}." in response.text
    assert b.driver_name not in response.text
    assert not DriverIndication.objects.exists()
