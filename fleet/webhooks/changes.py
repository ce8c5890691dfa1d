"""What processing changed on fines and notifications, told to whoever listens.

`fleet.webhooks.processing` sends `records_changed` inside the transaction
that writes the records, once per batch, with what each record went
through. A receiver that writes rows of its own (the alerts' outbox) has
them committed, or undone, with the records: a receiver that raises undoes
the batch, whose deliveries are then kept as failed, for replay.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.dispatch import Signal

from fleet.models import Fine, Notification

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
