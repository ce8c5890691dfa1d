"""The outbox: one `Alert` row per (user, event, channel), written with the records.

`alerts_create_for_changes` receives `fleet.webhooks.changes.records_changed`
inside the transaction that processes webhook deliveries into fines and
notifications: the alerts are committed with the records or not at all, and
the unique constraints make an event processed twice (a replay, two
workers) one alert. Once committed, the worker is asked to send them.

A user is told only of the records of their vehicles (`fleet.services.scopes`): their
groups', or the whole fleet's with the permission; a record without a plate only to
the whole fleet's users. The sending checks again (`sending`): the groups may change
while an alert waits for its digest.
"""

from __future__ import annotations

import logging
from datetime import UTC
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from alerts.models import (
    Alert,
    AlertChannel,
    AlertChoices,
    AlertDelivery,
    AlertEvent,
)
from alerts.services.preferences import alert_recipients, digest_due
from alerts.services.reminder_runs import indication_reminders_schedule
from fleet import plates
from fleet.models import MISSED, Fine, Notification
from fleet.services.attribution import fine_drivers_told
from fleet.services.scopes import scope_of
from fleet.webhooks.changes import RecordChange
from portal.lib import worker

logger = logging.getLogger(__name__)

SEND_TASK = "alerts.tasks.alerts_send"


def alerts_create_for_changes(*, changes: list[RecordChange], **_signal: Any) -> int:
    """Write the alerts these record changes make, for everyone who chose them; how many.

    Runs in the caller's transaction. A new fine that arrives with its document,
    or already treated, is one alert ("new fine", which says so) for those who
    chose new fines, and a document or treated alert for the others. Only for the
    users whose scope covers the record's vehicle: each user's scope is read once,
    and only if one of the changes is among their choices.
    """
    events = [(change, _events_of(change)) for change in changes]
    events = [(change, found) for change, found in events if found]
    if not events:
        return 0
    now = timezone.now()
    # Who was driving, as attributed in this transaction: read once for the batch.
    drivers = fine_drivers_told([c.record for c, _ in events if isinstance(c.record, Fine)])
    rows: list[Alert] = []
    for user, choices in alert_recipients():
        chosen = choices.events()
        subscriptions = [s for s in user.alert_webhooks.all() if s.active]
        for change, found in events:
            registration = change.record.registration
            if not choices.covers(registration):
                continue
            wanted = [event for event in found if event in chosen]
            if not wanted:
                continue
            # Read once per user (kept on this user object), the first time it is needed.
            if not scope_of(user).covers(registration):
                continue
            if change.created and AlertEvent.NEW_FINE in wanted:
                wanted = [AlertEvent.NEW_FINE]
            for event in wanted:
                data = event_data(event, change.record, driver=drivers.get(change.record.pk))
                rows += alerts_for(user, choices, subscriptions, event, change.record, data, now)
    Alert.objects.bulk_create(rows, ignore_conflicts=True)
    if rows:
        transaction.on_commit(alerts_send_soon)
    if any(isinstance(change.record, Fine) and change.created for change, _ in events):
        # Fines arrived: the daily run of their deadlines' reminders is waiting, or now is.
        transaction.on_commit(indication_reminders_schedule)
    return len(rows)


def alerts_send_soon() -> None:
    """Have the worker send the alerts that are due (one run waits at a time)."""
    try:
        worker.enqueue_unless_waiting(SEND_TASK, run_after=timezone.now())
    except Exception:  # the alerts wait in the outbox: the next run sends them
        logger.exception("could not ask the worker to send alerts")


def event_data(
    event: AlertEvent, record: Fine | Notification, *, driver: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The event as the alert tells it: the record's plate and fields then, and its page.

    A fine's amount and time are its columns (`1293.47`, `2026-11-20T13:45:00Z`, what
    `fleet.api.values` reads back), or the text as sent where a column is null; its
    driver as attributed then (`fine_drivers_told`: who had the vehicle when it was
    committed, or both candidates). Never the platform's links: its documents' addresses
    expire.
    """
    data: dict[str, Any] = {
        "event": event.value,
        "record": "fine" if isinstance(record, Fine) else "notification",
        "id": record.pk,
        "external_id": record.external_id,
        "path": record.get_absolute_url(),
        "plate": plates.display_if_plate(record.plate),
        "treated": record.treated,
    }
    if isinstance(record, Fine):
        data |= {
            "description": record.description,
            "reference": record.reference,
            "occurred_at": (
                record.occurred_at.astimezone(UTC).isoformat().replace("+00:00", "Z")
                if record.occurred_at is not None
                else record.occurred_at_text
            ),
            "amount": str(record.amount) if record.amount is not None else record.amount_text,
            "document_available": bool(record.link_frame),
            "driver": driver,
            "infraction": _infraction_told(record),
            "indication": _indication_told(record),
        }
    else:
        data |= {"title": record.title, "message": record.message}
    return data


def _infraction_told(fine: Fine) -> dict[str, Any]:
    """The infraction's facts as the payload sent them (`Fine.facts`), each null when not
    sent; `points` a number, or the text as sent when it is not one."""
    facts = fine.facts
    points = facts.points if facts.points is not None else (facts.points_text or None)
    return {
        "code": facts.code or None,
        "severity": facts.severity or None,
        "points": points,
        "city": facts.city or None,
        "state": facts.state or None,
        "authority": facts.authority or None,
    }


def _indication_told(fine: Fine) -> dict[str, Any]:
    """Whether the fine's driver is to be indicated, by when, and by when its slip is due,
    each with how it is known ("sent", "typed", "estimated"; days in ISO 8601). The state
    "missed" when its deadline passed with the driver still to indicate, by the clock."""
    return {
        "state": MISSED if fine.indication_missed else fine.indication,
        "basis": fine.indication_basis,
        "due": fine.indication_due.isoformat() if fine.indication_due else None,
        "due_basis": fine.indication_due_basis,
        "payment_due": fine.payment_due.isoformat() if fine.payment_due else None,
        "payment_due_basis": fine.payment_due_basis,
    }


def _events_of(change: RecordChange) -> list[AlertEvent]:
    if isinstance(change.record, Notification):
        return [AlertEvent.NEW_NOTIFICATION] if change.created else []
    found = [AlertEvent.NEW_FINE] if change.created else []
    if change.document_arrived:
        found.append(AlertEvent.FINE_DOCUMENT)
    if change.treated:
        found.append(AlertEvent.FINE_TREATED)
    return found


def alerts_for(
    user: User,
    choices: AlertChoices,
    subscriptions: list[Any],
    event: AlertEvent,
    record: Fine | Notification,
    data: dict[str, Any],
    now: Any,
    *,
    key: str = "",
) -> list[Alert]:
    """The rows of one event for one user: one per active webhook subscription, and one
    e-mail (now, or in their digest) unless they chose none; `key` names the event (its
    kind and record by default) so that it is written once."""
    is_fine = isinstance(record, Fine)
    common: dict[str, Any] = {
        "user": user,
        "event": event,
        "event_key": key or f"{event.value}:{record.pk}",
        "fine": record if is_fine else None,
        "notification": None if is_fine else record,
        "data": data,
        "created_at": now,
    }
    rows = [
        Alert(channel=AlertChannel.WEBHOOK, subscription=subscription, due_at=now, **common)
        for subscription in subscriptions
    ]
    if user.email and choices.delivery != AlertDelivery.OFF:
        digest = choices.delivery == AlertDelivery.DIGEST
        due = digest_due(choices=choices, after=now) if digest else now
        rows.append(Alert(channel=AlertChannel.EMAIL, digest=digest, due_at=due, **common))
    return rows
