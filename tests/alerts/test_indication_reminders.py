"""Reminders of the deadlines to indicate a fine's driver: ALERTS_INDICATION_DAYS (7 and
2) days before, once each, and once when the deadline passes (the fine then missed), by
e-mail (a real SMTP server on loopback) and webhook (a receiver on loopback), to the
people who see the vehicle and chose them; none for a fine indicated, treated or that
needs none. The worker's daily run (`run_tasks`, the clock moved a day at a time)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest
import time_machine
from django_tasks_db.models import DBTaskResult

from alerts.models import Alert, AlertEvent, AlertStatus
from alerts.services.reminder_runs import INDICATIONS_TASK
from alerts.services.subscriptions import webhook_subscription_create
from fleet.models import Fine, IndicationChannel
from fleet.services.indications import fine_indicate, seen_value
from tests.alerts.conftest import fine, post
from tests.conftest import run_tasks
from tests.mail import subject, text_of

pytestmark = pytest.mark.django_db(transaction=True)

# 09:00 in São Paulo, on each day of the story; the daily run is at 07:00.
DAY_ONE = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def reminders(smtp_server) -> list[tuple[str, str]]:
    """(to whom, subject) of each reminder e-mailed so far."""
    return [
        (str(m["To"]).partition("@")[0], subject(m))
        for m in smtp_server.mailbox.messages
        if "ndicat" in subject(m)
    ]


def test_reminders_seven_and_two_days_before_then_once_when_missed(
    client, person, smtp_server, receiver, settings
):
    settings.ALERTS_INDICATION_DAYS = [7, 2]
    settings.ALERTS_WEBHOOK_ALLOW_PRIVATE = True
    ana = person("ana", new_fine=False, language="en")
    person("bia", new_fine=False, indication_reminders=False)
    _, receiver.secret = webhook_subscription_create(user=ana, url=receiver.url)
    with time_machine.travel(DAY_ONE, tick=False) as clock:
        post(client, fine(1, indicationDeadline="2026-12-09"))  # 8 days ahead
        post(client, fine(2, plate="XYZ9876", indicationDeadline="2026-12-03"))  # 2 days
        post(client, fine(3, indicationDeadline="2026-12-03", indicationRequired=False))
        post(client, fine(4, indicationDeadline="2026-12-04"))  # indicated, below
        post(client, fine(5, indicationDeadline="2026-12-03", treated=True))
        run_tasks()
        # The fines' arrival asked for the daily run: tomorrow's 07:00.
        assert DBTaskResult.objects.filter(task_path=INDICATIONS_TASK, status="READY").exists()
        fourth = Fine.objects.get(external_id="4")
        fine_indicate(
            fine_id=fourth.pk,
            driver_id=7,
            channel=IndicationChannel.POST,
            on=date(2026, 12, 1),
            seen=seen_value(fourth.indication, fourth.indication_basis or ""),
            user=ana,
        )
        assert reminders(smtp_server) == []

        clock.shift(timedelta(days=1))  # 02/12: fine 2 is 1 day away, fine 1 is 7
        run_tasks()
        smtp_server.mailbox.wait_for(2)
        assert sorted(reminders(smtp_server)) == [
            ("ana", "Indicate the driver: ABC1D23 · Avançar o sinal vermelho do semáforo"),
            ("ana", "Indicate the driver: XYZ-9876 · Avançar o sinal vermelho do semáforo"),
        ]
        (second,) = [m for m in smtp_server.mailbox.messages if "XYZ-9876" in subject(m)]
        assert "1 day left" in text_of(second)
        assert "Indicate the driver by" in text_of(second)

        clock.shift(timedelta(days=1))  # 03/12: fine 2 due today (its 2-day reminder sent)
        run_tasks()
        assert len(reminders(smtp_server)) == 2

        clock.shift(timedelta(days=1))  # 04/12: fine 2 missed, told once
        run_tasks()
        smtp_server.mailbox.wait_for(3)
        missed = reminders(smtp_server)[2]
        assert missed == (
            "ana",
            "Indication deadline missed: XYZ-9876 · Avançar o sinal vermelho do semáforo",
        )
        assert Fine.objects.get(external_id="2").indication_missed

        clock.shift(timedelta(days=1))
        run_tasks()
        assert len(reminders(smtp_server)) == 3

    # Fine 1's 7-day reminder (02/12) and its 2-day one (07/12, not reached); fine 2's
    # 2-day one and its missed one: by e-mail and by webhook; bia none, fines 3-5 none.
    assert sorted(
        (a.event, a.event_key.rpartition(":")[2], a.channel) for a in Alert.objects.filter(user=ana)
    ) == sorted(
        (event, str(Fine.objects.get(external_id=number).pk), channel)
        for event, number in [
            (AlertEvent.INDICATION_DUE, "1"),
            (AlertEvent.INDICATION_DUE, "2"),
            (AlertEvent.INDICATION_MISSED, "2"),
        ]
        for channel in ("email", "webhook")
    )
    assert not Alert.objects.exclude(user=ana).exists()
    types = sorted(d.payload["type"] for d in receiver.accepted())
    assert types == ["fine.indication_due", "fine.indication_due", "fine.indication_missed"]
    assert all(d.payload["data"]["days_left"] is not None for d in receiver.accepted())
    assert not Alert.objects.exclude(status=AlertStatus.SENT).exists()


def test_a_reminder_waiting_for_its_digest_is_cancelled_once_the_fine_is_indicated(
    client, person, smtp_server, settings
):
    ana = person("ana", new_fine=False, delivery="digest", digest_hour=18)
    with time_machine.travel(DAY_ONE, tick=False) as clock:
        post(client, fine(1, indicationDeadline="2026-12-03"))
        run_tasks()
        clock.shift(timedelta(days=1))  # 02/12 09:00: the reminder waits for 18:00
        run_tasks()
        reminder = Alert.objects.get(user=ana, event=AlertEvent.INDICATION_DUE)
        assert reminder.status == AlertStatus.PENDING
        first = Fine.objects.get(external_id="1")
        fine_indicate(
            fine_id=first.pk,
            driver_id=7,
            channel=IndicationChannel.AUTHORITY,
            on=date(2026, 12, 2),
            seen=seen_value(first.indication, first.indication_basis or ""),
            user=ana,
        )
        clock.shift(timedelta(hours=10))
        run_tasks()

    reminder.refresh_from_db()
    assert reminder.status == AlertStatus.CANCELLED
    assert "indicated" in reminder.last_error
    assert reminders(smtp_server) == []
