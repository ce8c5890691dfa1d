"""How processing went, on a delivery's row: its status, the reason it was kept, the
delivery it duplicates or the record it made, when, and how many times it was tried.

A delivery is marked in memory as processing decides (`delivery_mark`), and the marks
of a batch are written together (`delivery_marks_write`), one UPDATE for the deliveries
that ended alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from django.db.models import F
from django.utils import timezone

from fleet.models import DeliveryStatus, WebhookDelivery

# What `delivery_marks_write` writes of a delivery (with `processed_at` and `attempts`).
_OUTCOME: Final = ("status", "kind", "error", "duplicate_of_id", "fine_id", "notification_id")


def delivery_mark(delivery: WebhookDelivery, status: DeliveryStatus, **fields: Any) -> None:
    """How processing went, on `delivery` (its row is written by `delivery_marks_write`):
    `status`, and `fields` (its kind, error, original or record); the rest cleared."""
    values = {
        "status": status,
        "kind": "",
        "error": "",
        "processed_at": timezone.now(),
        "duplicate_of_id": None,
        "fine_id": None,
        "notification_id": None,
        "attempts": delivery.attempts + 1,
    } | fields
    for name, value in values.items():
        setattr(delivery, name, value)


def delivery_marks_write(deliveries: Sequence[WebhookDelivery]) -> None:
    """Write how processing went on `deliveries`' rows: one UPDATE for the deliveries
    that ended alike (same status, reason and record)."""
    alike: dict[tuple[Any, ...], list[int]] = {}
    for delivery in deliveries:
        outcome = tuple(getattr(delivery, name) for name in _OUTCOME)
        alike.setdefault(outcome, []).append(delivery.pk)
    now = timezone.now()
    for outcome, pks in alike.items():
        WebhookDelivery.objects.filter(pk__in=pks).update(
            **dict(zip(_OUTCOME, outcome, strict=True)),
            processed_at=now,
            attempts=F("attempts") + 1,
        )
