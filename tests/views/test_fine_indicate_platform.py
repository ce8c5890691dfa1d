"""Indicating a fine's driver "through the fleet platform" from its page: sent with the
emulator's `POST /v2/driver-indications` over HTTP before anything is recorded; its
answer kept in the audit; refused, or the platform unable to answer, the fine stays to
indicate and the page says why; the setting off, nothing is sent."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fleet.models import Driver, DriverIndication, Fine, FineIndicationChange, Indication
from fleet.services.platform_indications import indication_claimed
from fleet.webhooks.processing import deliveries_process_received
from tests.conftest import Emulator

pytestmark = [pytest.mark.django_db, pytest.mark.emulator_mode("normal")]

WEBHOOK = "/webhooks/fleet/dev-webhook-token/"
ENGLISH = {"Accept-Language": "en"}
ROUTE = "/v2/driver-indications"


def a_fine(client, plate: str, reference: str = "E010000042") -> Fine:
    Driver.objects.create(driver_id=7001, name="Ana Souza")
    frame = {"id": 1, "carPlate": plate, "autoInfracao": reference, "amount": "293.47"}
    body = json.dumps({"frame": frame | {"treated": False}, "linkFrame": None, "link": None})
    assert client.post(WEBHOOK, data=body, content_type="application/json").status_code == 202
    deliveries_process_received()
    return Fine.objects.get()


def indicate(client, fine: Fine):
    form = {"driver": "Ana Souza (7001)", "channel": "platform", "on": "2026-12-01"}
    form["seen"] = f"{fine.indication}:{fine.indication_basis}"
    return client.post(f"/fines/{fine.pk}/indicate", form, headers=ENGLISH)


def sent(emulator: Emulator) -> list[dict[str, Any]]:
    return [r for r in emulator.requests() if r.get("path", "").startswith(ROUTE)]


def test_through_the_platform_it_is_sent_then_recorded_with_the_answer(
    client, indicating_client, emulator, fleet_settings
):
    fleet_settings.FLEET_DRIVER_INDICATIONS_API = True
    fine = a_fine(client, emulator.vehicles()[0]["car_plate"])

    response = indicate(indicating_client, fine)

    assert response.status_code == 302
    (request,) = sent(emulator)
    assert json.loads(request["body"])["autoInfracao"] == "E010000042"
    assert Fine.objects.get().indication == Indication.INDICATED
    assert DriverIndication.objects.get().channel == "platform"
    assert "(received)" in FineIndicationChange.objects.get().reason


def test_a_refusal_leaves_the_fine_to_indicate_with_the_reason_shown(
    client, indicating_client, emulator, fleet_settings
):
    fleet_settings.FLEET_DRIVER_INDICATIONS_API = True
    fine = a_fine(client, emulator.vehicles()[0]["car_plate"], reference="PRAZO-VENCIDO")

    response = indicate(indicating_client, fine)

    assert response.status_code == 400
    assert len(sent(emulator)) == 1
    assert "refused" in response.text.lower()
    assert Fine.objects.get().indication == Indication.NEEDED
    assert not DriverIndication.objects.exists()


def test_a_platform_that_times_out_leaves_the_fine_to_indicate(
    client, indicating_client, emulator, fleet_settings
):
    fleet_settings.FLEET_DRIVER_INDICATIONS_API = True
    fine = a_fine(client, emulator.vehicles()[0]["car_plate"])
    emulator.fault(ROUTE, status=504, retry_after=3600)

    response = indicate(indicating_client, fine)

    assert response.status_code == 502
    assert 'class="field-error"' in response.text
    assert Fine.objects.get().indication == Indication.NEEDED
    assert not DriverIndication.objects.exists()


def test_with_the_setting_off_nothing_is_sent_and_the_page_says_so(
    client, indicating_client, emulator, fleet_settings
):
    fleet_settings.FLEET_DRIVER_INDICATIONS_API = False
    fine = a_fine(client, emulator.vehicles()[0]["car_plate"])

    response = indicate(indicating_client, fine)

    assert response.status_code == 400
    assert sent(emulator) == []
    assert Fine.objects.get().indication == Indication.NEEDED


def test_a_page_showing_the_fine_before_someone_indicated_it_sends_nothing(
    client, indicating_client, emulator, fleet_settings
):
    fleet_settings.FLEET_DRIVER_INDICATIONS_API = True
    fine = a_fine(client, emulator.vehicles()[0]["car_plate"])
    seen_before = f"{fine.indication}:{fine.indication_basis}"
    by_post = {"driver": "Ana Souza (7001)", "channel": "post", "on": "2026-12-01"}
    by_post["seen"] = seen_before
    assert indicating_client.post(f"/fines/{fine.pk}/indicate", by_post).status_code == 302

    response = indicate(indicating_client, fine)  # the page as it was before

    assert response.status_code == 409
    assert "Nothing of yours was saved" in response.text
    assert sent(emulator) == []
    assert DriverIndication.objects.get().channel == "post"


def test_while_someone_sends_it_a_second_person_is_told_and_nothing_is_sent(
    client, indicating_client, emulator, fleet_settings
):
    fleet_settings.FLEET_DRIVER_INDICATIONS_API = True
    fine = a_fine(client, emulator.vehicles()[0]["car_plate"])

    with indication_claimed(fine.pk):  # the first person's, under way
        response = indicate(indicating_client, fine)

    assert response.status_code == 409
    assert "Someone else is sending this fine" in response.text
    assert sent(emulator) == []
    assert Fine.objects.get().indication == Indication.NEEDED
    # Once the first is done (here: gave up), the fine may be sent.
    assert indicate(indicating_client, fine).status_code == 302
    assert len(sent(emulator)) == 1
