"""What processing changed on fines and notifications, told to whoever listens.

Processing sends `records_changed` inside the transaction that writes the records
(`records_changed_announce`, the last of a batch's effects: `fleet.webhooks.effects`),
once per batch, with what each record went through. A receiver that writes rows of its
own (the alerts' outbox) has them committed, or undone, with the records: a receiver
that raises undoes the batch, whose deliveries are then kept as failed, for replay.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.dispatch import Signal

from fleet.models import Fine, Notification, WebhookDelivery

# Sent with `changes`: a list of `RecordChange`, in the order of the deliveries.
records_changed = Signal()


@dataclass(frozen=True, slots=True)
class RecordChange:
    """A fine or notification as one batch left it, and what happened to it."""

    record: Fine | Notification
    created: bool
    # Its official document (`linkFrame`) is there now and was not before (or it is new with one).
    document_arrived: bool = False
    # `treated` is true now and was not before (or it is new and already treated).
    treated: bool = False


def record_state(record: Fine | Notification) -> tuple[bool, bool]:
    """What the receivers listen for: whether a record has its document, whether it is treated."""
    return bool(getattr(record, "link_frame", "")), record.treated


def records_changed_announce(
    records: Iterable[tuple[Fine | Notification, tuple[bool, bool] | None]],
) -> None:
    """Tell `records_changed`'s receivers, in the caller's transaction, what a batch did to
    `records`: each with its `record_state` before the batch (None: the batch created it).
    Nothing is sent when nothing they listen for happened."""
    changes = []
    for record, before in records:
        had_document, was_treated = before or (False, False)
        has_document, treated = record_state(record)
        change = RecordChange(
            record=record,
            created=before is None,
            document_arrived=has_document and not had_document,
            treated=treated and not was_treated,
        )
        if change.created or change.document_arrived or change.treated:
            changes.append(change)
    if changes:
        records_changed.send(sender=WebhookDelivery, changes=changes)
