"""A fine's two deadlines (to indicate its driver, to pay its slip) and whether it needs an
indication, each with how it is known: sent by the platform, typed by a manager from the
paper notice (audited), or estimated (the notice's day, else the receipt, plus
FLEET_INDICATION_DAYS) and marked so; fed through the real receiver."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, date, datetime

import pytest
import time_machine
from django.contrib.auth.models import Permission

from fleet.models import (
    DeadlineBasis,
    Fine,
    FineIndicationChange,
    Indication,
    NeedBasis,
    VehicleGroupMember,
)
from fleet.webhooks.deadlines import deadline_columns
from fleet.webhooks.processing import deliveries_process_received
from tests.scopes import grant_whole_fleet
from tests.views.test_fine_facts import fine_surfaces
from tests.views.test_scope_walk import Side, sides

__all__ = ["sides"]  # the fixture

pytestmark = pytest.mark.django_db

WEBHOOK = "/webhooks/fleet/dev-webhook-token/"
PORTUGUESE = {"Accept-Language": "pt-BR"}
ENGLISH = {"Accept-Language": "en"}
# 2026-12-01 12:00 UTC: 09:00 in São Paulo.
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def send(client, number: int = 1, **fields) -> Fine:
    frame = {
        "id": number,
        "carPlate": "ABC1D23",
        "autoInfracao": f"E0{number}",
        "description": "Avançar o sinal vermelho do semáforo",
        "amount": "293.47",
        "treated": False,
        **fields,
    }
    body = json.dumps({"frame": frame, "linkFrame": None, "link": "https://boletos.example/1"})
    response = client.post(WEBHOOK, data=body, content_type="application/json")
    assert response.status_code == 202, response.content
    deliveries_process_received()
    return Fine.objects.get(external_id=str(number))


@pytest.fixture
def clock():
    with time_machine.travel(NOW, tick=False) as traveller:
        yield traveller


# Where each comes from


def test_a_fine_whose_payload_says_nothing_is_estimated_from_its_receipt(client, clock):
    fine = send(client)

    assert (fine.indication, fine.indication_basis) == (Indication.NEEDED, NeedBasis.ASSUMED)
    assert fine.indication_due == date(2026, 12, 31)  # received 01/12, plus 30 days
    assert fine.indication_due_basis == DeadlineBasis.ESTIMATED
    assert (fine.payment_due, fine.payment_due_basis) == (None, None)


def test_the_estimate_counts_from_the_notice_and_follows_the_setting(client, clock, settings):
    settings.FLEET_INDICATION_DAYS = 15

    fine = send(client, noticeDate="2026-11-20")

    assert fine.indication_due == date(2026, 12, 5)
    assert fine.indication_due_basis == DeadlineBasis.ESTIMATED


def test_what_the_platform_sends_is_taken_as_sent(client, clock):
    fine = send(
        client,
        noticeDate="2026-11-20",
        indicationDeadline="2026-12-22",
        paymentDueDate="05/01/2027",  # as a Brazilian writes it
        indicationRequired=False,
    )

    assert (fine.indication, fine.indication_basis) == (Indication.NOT_NEEDED, NeedBasis.SENT)
    assert (fine.indication_due, fine.indication_due_basis) == (date(2026, 12, 22), "sent")
    assert (fine.payment_due, fine.payment_due_basis) == (date(2027, 1, 5), "sent")


@pytest.mark.parametrize("sent", ["amanhã", "2026-13-45", "1900-01-01", 20261222, True])
def test_a_deadline_that_cannot_be_read_is_estimated_and_the_payload_keeps_it(client, clock, sent):
    fine = send(client, indicationDeadline=sent)

    assert (fine.indication_due, fine.indication_due_basis) == (date(2026, 12, 31), "estimated")
    assert fine.payload["indicationDeadline"] == sent


def test_a_later_event_updates_an_estimate_but_keeps_what_was_sent(client, clock):
    send(client, updatedAt="2026-12-01T10:00:00Z")
    fine = send(
        client,
        updatedAt="2026-12-01T11:00:00Z",
        indicationDeadline="2026-12-20",
        indicationRequired=True,
    )
    assert (fine.indication_due, fine.indication_due_basis) == (date(2026, 12, 20), "sent")

    # Treated later, by an event that repeats none of it.
    fine = send(client, updatedAt="2026-12-01T12:00:00Z", treated=True)

    assert (fine.indication_due, fine.indication_due_basis) == (date(2026, 12, 20), "sent")
    assert (fine.indication, fine.indication_basis) == (Indication.NEEDED, NeedBasis.SENT)


# Typed from the paper notice


def test_a_manager_types_the_deadline_from_the_notice_and_it_is_audited(
    client, indicating_client, clock
):
    fine = send(client)
    page = indicating_client.get(fine.get_absolute_url(), headers=PORTUGUESE).text
    assert 'data-testid="estimated"' in page
    assert "estimativa: confira a notificação" in page

    response = indicating_client.post(
        f"/fines/{fine.pk}/deadline",
        {
            "field": "indication_due",
            "day": "18/12/2026",
            "seen": "2026-12-31:estimated",
            "reason": "Notificação recebida pelo correio em 30/11",
        },
        headers=PORTUGUESE,
        follow=True,
    )

    assert response.status_code == 200
    fine.refresh_from_db()
    assert (fine.indication_due, fine.indication_due_basis) == (date(2026, 12, 18), "typed")
    change = FineIndicationChange.objects.get()
    assert (change.field, change.before, change.before_basis, change.after) == (
        "indication_due",
        "2026-12-31",
        "estimated",
        "2026-12-18",
    )
    assert change.user_name == "marcos"
    page = response.text
    assert 'data-testid="typed"' in page
    assert 'data-testid="estimated"' not in page
    assert "18/12/2026" in page
    assert "17 dias restantes" in page
    assert "31/12/2026 (estimativa: confira a notificação) → 18/12/2026 · marcos" in page
    assert "Notificação recebida pelo correio em 30/11" in page

    # The platform's later word does not undo it.
    fine = send(client, indicationDeadline="2026-12-25", updatedAt="2026-12-02T10:00:00Z")
    assert (fine.indication_due, fine.indication_due_basis) == (date(2026, 12, 18), "typed")


@pytest.mark.parametrize(
    ("day", "error"),
    [
        ("30/11/2026", "Esse dia já passou"),
        ("ontem", "Digite um dia"),
        ("31/12/2030", "mais de dois anos"),
    ],
)
def test_a_deadline_in_the_past_or_unreadable_is_refused_and_nothing_changes(
    client, indicating_client, clock, day, error
):
    fine = send(client)

    response = indicating_client.post(
        f"/fines/{fine.pk}/deadline",
        {"field": "indication_due", "day": day, "seen": "2026-12-31:estimated", "reason": "x"},
        headers=PORTUGUESE,
    )

    assert response.status_code == 400
    assert error in response.text
    fine.refresh_from_db()
    assert fine.indication_due_basis == "estimated"
    assert not FineIndicationChange.objects.exists()


def test_two_managers_at_once_one_wins_and_the_other_is_told(client, indicating_client, clock):
    fine = send(client)
    form = {"field": "indication_due", "seen": "2026-12-31:estimated", "reason": "notice"}

    first = indicating_client.post(f"/fines/{fine.pk}/deadline", form | {"day": "2026-12-18"})
    second = indicating_client.post(
        f"/fines/{fine.pk}/deadline", form | {"day": "2026-12-20"}, headers=ENGLISH
    )

    assert first.status_code == 302
    assert second.status_code == 409
    assert "marcos changed it meanwhile" in second.text
    assert "Nothing of yours was saved" in second.text
    fine.refresh_from_db()
    assert fine.indication_due == date(2026, 12, 18)
    assert FineIndicationChange.objects.count() == 1


def test_no_indication_needed_with_a_reason_then_needed_again(client, indicating_client, clock):
    fine = send(client)

    indicating_client.post(
        f"/fines/{fine.pk}/indication-need",
        {"needed": "0", "seen": "needed:assumed", "reason": "Infração do proprietário"},
    )
    fine.refresh_from_db()
    assert (fine.indication, fine.indication_basis) == (Indication.NOT_NEEDED, NeedBasis.TYPED)
    page = indicating_client.get(fine.get_absolute_url(), headers=ENGLISH).text
    assert 'data-state="not_needed"' in page
    assert 'data-testid="indication-due"' not in page

    # A later event's flag does not undo a person's choice.
    fine = send(client, indicationRequired=True, updatedAt="2026-12-02T10:00:00Z")
    assert fine.indication == Indication.NOT_NEEDED

    indicating_client.post(
        f"/fines/{fine.pk}/indication-need",
        {"needed": "1", "seen": "not_needed:typed", "reason": "Engano"},
    )
    fine.refresh_from_db()
    assert (fine.indication, fine.indication_basis) == (Indication.NEEDED, NeedBasis.TYPED)
    assert FineIndicationChange.objects.count() == 2


def test_without_the_permission_403(client, django_user_model, clock):
    fine = send(client)
    form = {"field": "indication_due", "day": "2026-12-18", "seen": "", "reason": "x"}
    viewer = django_user_model.objects.create_user("vera", password="pw-123456")
    grant_whole_fleet(viewer)
    client.force_login(viewer)

    assert client.post(f"/fines/{fine.pk}/deadline", form).status_code == 403
    assert client.post(f"/fines/{fine.pk}/indication-need", {}).status_code == 403
    assert 'data-testid="deadline-forms"' not in client.get(fine.get_absolute_url()).text
    assert not FineIndicationChange.objects.exists()


@pytest.mark.scoped
def test_a_fine_of_another_group_is_not_found_whatever_the_permission(sides: list[Side]):
    a, b = sides
    member = VehicleGroupMember.objects.get(user__username=f"manager-{a.name.lower()}")
    member.user.user_permissions.add(Permission.objects.get(codename="change_fine_indication"))
    form = {"field": "indication_due", "day": "2099-12-18", "seen": "", "reason": "x"}

    assert a.client.post(f"/fines/{b.fine}/deadline", form).status_code == 404
    assert a.client.post(f"/fines/{b.fine}/indication-need", {}).status_code == 404
    assert a.client.get(f"/fines/{a.fine}/").status_code == 200
    assert not FineIndicationChange.objects.exists()


# How each is known, on the page and in the CSV


def test_the_page_and_the_csv_say_how_each_deadline_is_known(client, indicating_client, clock):
    send(client, 1)  # estimated
    send(client, 2, indicationDeadline="2026-12-10", paymentDueDate="2027-01-05")  # sent

    page = indicating_client.get(f"/fines/{Fine.objects.get(external_id='1').pk}/", headers=ENGLISH)
    assert "estimated: check the notice" in page.text
    assert "plus 30 days" in page.text
    assert "If not indicated in time: a second fine (NIC) of about R$" in page.text
    assert "586.94" in page.text  # twice 293.47
    sent = indicating_client.get(f"/fines/{Fine.objects.get(external_id='2').pk}/", headers=ENGLISH)
    assert 'data-testid="sent"' in sent.text
    assert "9 days left" in sent.text

    text = b"".join(
        indicating_client.get("/fines/export.csv", headers=PORTUGUESE).streaming_content
    ).decode()
    header, *rows = csv.reader(io.StringIO(text.removeprefix("\ufeff")), delimiter=";")
    columns = header[-5:]
    assert columns == [
        "Indicação do condutor",
        "Indicar o condutor até",
        "Como o prazo de indicação é conhecido",
        "Vencimento do boleto",
        "Como o vencimento é conhecido",
    ]
    by_notice = {row[2]: row[-5:] for row in rows}
    assert by_notice["E01"] == [
        "A indicar",
        "31/12/2026",
        "estimativa: confira a notificação",
        "",
        "",
    ]
    assert by_notice["E02"] == [
        "A indicar",
        "10/12/2026",
        "enviado pela plataforma",
        "05/01/2027",
        "enviado pela plataforma",
    ]


def test_columns_from_a_payload_the_portal_does_not_expect():
    received = NOW
    assert deadline_columns("not a dict", received=received, fine=None)["indication"] == "needed"
    columns = deadline_columns({"indicationRequired": "sim"}, received=received, fine=None)
    assert columns["indication_basis"] == NeedBasis.ASSUMED  # not a boolean: not a flag


# In the alert


@pytest.mark.parametrize(
    ("sent", "shown", "basis"),
    [
        ({}, "31/12/2026 (estimativa: confira a notificação)", "estimated"),
        (
            {"indicationDeadline": "2026-12-20"},
            "20/12/2026 (enviado pela plataforma)",
            "sent",
        ),
    ],
    ids=["estimated", "sent"],
)
def test_the_alert_says_the_deadline_and_how_it_is_known(
    client, manager, emulator, sent, shown, basis
):
    _fine, pages, _csv, told = fine_surfaces(client, manager, emulator, **sent)

    for surface in ("e-mail text", "e-mail html"):
        assert "Indicar o condutor até" in pages[surface]
        assert shown in pages[surface], surface
    assert told["indication"] == {
        "state": "needed",
        "basis": "assumed",
        "due": "2026-12-31" if basis == "estimated" else "2026-12-20",
        "due_basis": basis,
        "payment_due": None,
        "payment_due_basis": None,
    }
