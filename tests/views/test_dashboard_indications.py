"""The dashboard's figures of the fines to indicate: past their deadline, due within 7
days, and the R$ at risk in NICs (twice each fine still to indicate); kept with the
tallies by every writer of fines (the receiver, a manager's entry), each linking to the
queue filtered."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
import time_machine

from fleet.models import Fine
from fleet.services.tallies import fine_tallies_differences, group_tallies_differences
from fleet.webhooks.processing import deliveries_process_received

pytestmark = pytest.mark.django_db

WEBHOOK = "/webhooks/fleet/dev-webhook-token/"
ENGLISH = {"Accept-Language": "en"}
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)  # 01/12 in São Paulo


@pytest.fixture(autouse=True)
def clock():
    with time_machine.travel(NOW, tick=False) as traveller:
        yield traveller


def send(client, number: int, amount: str, **fields) -> None:
    frame = {
        "id": number,
        "carPlate": "ABC1D23",
        "autoInfracao": f"E0{number}",
        "description": f"Infração {number}",
        "amount": amount,
        "treated": False,
        **fields,
    }
    body = json.dumps({"frame": frame, "linkFrame": None, "link": "https://boletos.example/1"})
    assert client.post(WEBHOOK, data=body, content_type="application/json").status_code == 202
    deliveries_process_received()


def figure(page: str, testid: str) -> str:
    start = page.index(f'data-testid="{testid}">') + len(f'data-testid="{testid}">')
    return page[start : page.index("<", start)]


def test_the_dashboard_counts_the_fines_to_indicate_and_links_to_the_queue(
    client, indicating_client
):
    send(client, 1, "100.00", indicationDeadline="2026-11-28")  # overdue
    send(client, 2, "200.00", indicationDeadline="2026-12-01")  # today: within 7 days
    send(client, 3, "300.00", indicationDeadline="2026-12-08")  # the 7th day
    send(client, 4, "400.00", indicationDeadline="2026-12-09")  # later
    send(client, 5, "500.00", indicationDeadline="2026-12-02", indicationRequired=False)
    send(client, 6, "600.00", indicationDeadline="2026-12-02", treated=True)

    page = indicating_client.get("/", headers=ENGLISH).text

    assert figure(page, "to-indicate-overdue") == "1"
    assert figure(page, "to-indicate-soon") == "2"
    assert figure(page, "at-risk") == "R$&nbsp;2,000.00"  # twice 100 + 200 + 300 + 400
    assert 'href="/fines/indications/?within=overdue"' in page
    assert 'href="/fines/indications/?within=7"' in page
    soon = indicating_client.get("/fines/indications/?within=7").text
    assert soon.count('data-testid="queue-row"') == 2
    assert fine_tallies_differences() == {}


def test_a_managers_entry_and_a_treated_fine_change_the_figures_at_once(client, indicating_client):
    send(client, 1, "100.00", indicationDeadline="2026-12-03", updatedAt="2026-12-01T10:00:00Z")
    send(client, 2, "200.00", indicationDeadline="2026-12-04")
    assert figure(indicating_client.get("/").text, "to-indicate-soon") == "2"

    second = Fine.objects.get(external_id="2")
    response = indicating_client.post(
        f"/fines/{second.pk}/indication-need",
        {"needed": "0", "seen": "needed:assumed", "reason": "Infração do proprietário"},
    )
    assert response.status_code == 302
    page = indicating_client.get("/", headers=ENGLISH).text
    assert figure(page, "to-indicate-soon") == "1"
    assert figure(page, "at-risk") == "R$&nbsp;200.00"

    # Typed from the notice: the deadline had passed.
    first = Fine.objects.get(external_id="1")
    indicating_client.post(
        f"/fines/{first.pk}/deadline",
        {"field": "indication_due", "day": "2026-12-20", "seen": "2026-12-03:sent", "reason": "x"},
    )
    page = indicating_client.get("/", headers=ENGLISH).text
    assert (figure(page, "to-indicate-soon"), figure(page, "to-indicate-overdue")) == ("0", "0")

    send(client, 1, "100.00", treated=True, updatedAt="2026-12-01T11:00:00Z")
    page = indicating_client.get("/", headers=ENGLISH).text
    assert figure(page, "at-risk") == "R$&nbsp;0.00"
    assert fine_tallies_differences() == {}
    assert group_tallies_differences() == {}


def test_the_figures_move_with_the_clock(client, indicating_client, clock, django_user_model):
    send(client, 1, "100.00", indicationDeadline="2026-12-05")
    assert figure(indicating_client.get("/").text, "to-indicate-soon") == "1"

    clock.move_to(datetime(2026, 12, 6, 12, 0, tzinfo=UTC))
    # Five days later: the session of the first visit has ended; a new sign-in.
    indicating_client.force_login(django_user_model.objects.get(username="marcos"))

    page = indicating_client.get("/").text
    assert (figure(page, "to-indicate-soon"), figure(page, "to-indicate-overdue")) == ("0", "1")
