"""A fine's or a notification's state, and how an event changes it.

`fleet.webhooks.processing` reads each stored delivery into an event
(`fleet.webhooks.payloads`) and applies it with these rules, the same for a
whole batch as for one delivery alone:

- a record is found by its key (the payload's id, else a digest of its
  identifying fields; unique in the table) and updated in place;
- when the payload carries its own time (`updatedAt`), an event older than
  the record's state is kept in the history but does not overwrite the
  state; without one, arrival order decides;
- a `linkFrame` once available is never erased by a `null` (spec 2.6: null
  means "not available yet", so a null after a URL is an older event);
- `treated_history` keeps every distinct `treated` value seen, in time order;
- a fine's deadlines and whether it needs an indication come from its payload, else
  are estimated, and a person's entry is never undone (`fleet.webhooks.deadlines`).

A batch holds its records in `RecordsHeld`: read under their locks, changed in memory
event after event, then written in a few statements.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Any

from django.utils import timezone

from fleet.models import Fine, Notification, WebhookDelivery, WebhookRecord
from fleet.webhooks import payloads
from fleet.webhooks.deadlines import deadline_columns
from fleet.webhooks.payloads import (
    payload_amount,
    payload_occurred_at,
    payload_reference,
    payload_registration,
)

RecordModel = type[Fine] | type[Notification]
RecordKey = tuple[RecordModel, str]


def record_model(event: payloads.Event) -> RecordModel:
    """The model of `event`'s record."""
    return Fine if event.kind == payloads.FINE else Notification


def record_new(event: payloads.Event, delivery: WebhookDelivery) -> WebhookRecord:
    """The record `event` creates (not saved)."""
    now = timezone.now()
    values: dict[str, Any] = {
        "key": event.key,
        "external_id": event.external_id,
        "treated": event.treated,
        "treated_history": [_observation(event, delivery)],
        "payload": event.data,
        "source_updated_at": event.as_of,
        "registration": payload_registration(event.data),
        "received_at": now,
        "updated_at": now,
    }
    if event.kind == payloads.FINE:
        values |= {"link_frame": event.link_frame or "", "link": event.link or ""}
        values |= _fine_columns(event)
        values |= deadline_columns(event.data, received=now, fine=None)
    return record_model(event)(**values)


def record_update(
    record: WebhookRecord, event: payloads.Event, delivery: WebhookDelivery
) -> list[str]:
    """Apply `event` to `record` in memory; the names of the fields it changed."""
    changed: dict[str, Any] = {}
    history = _history_with(record.treated_history, _observation(event, delivery))
    if history is not None:
        changed["treated_history"] = history
    known = record.source_updated_at
    current = event.as_of is None or known is None or event.as_of >= known
    if current:
        changed |= {
            "treated": event.treated,
            "payload": event.data,
            "registration": payload_registration(event.data),
        }
        if event.as_of is not None:
            changed["source_updated_at"] = event.as_of
        if isinstance(record, Fine):
            changed |= _fine_columns(event)
            changed |= deadline_columns(event.data, received=record.received_at, fine=record)
            if event.link is not None:
                changed["link"] = event.link
    if isinstance(record, Fine) and event.link_frame and (current or not record.link_frame):
        changed["link_frame"] = event.link_frame
    changed = {name: value for name, value in changed.items() if getattr(record, name) != value}
    for name, value in changed.items():
        setattr(record, name, value)
    fields = list(changed)
    if changed.keys() - {"treated_history", "source_updated_at"}:
        record.updated_at = timezone.now()
        fields.append("updated_at")
    return fields


class RecordsHeld:
    """The records a batch of events names, by model and key (`by_key`): those it found,
    read under their locks until its transaction ends (in key order), and those it
    creates (`created`); on the others, the fields it changed (`changed`). Nothing is
    written until `save`."""

    def __init__(self, events: Iterable[payloads.Event]) -> None:
        keys: dict[RecordModel, set[str]] = {}
        for event in events:
            keys.setdefault(record_model(event), set()).add(event.key)
        # A Fine or a Notification, as its model says (`Any`: one dict for both models).
        self.by_key: dict[RecordKey, Any] = {}
        for model, wanted in keys.items():
            for record in model.objects.select_for_update().filter(key__in=wanted).order_by("key"):
                self.by_key[model, record.key] = record
        self.created: dict[RecordKey, Any] = {}
        self.changed: dict[RecordKey, set[str]] = {}

    def apply(self, event: payloads.Event, delivery: WebhookDelivery) -> WebhookRecord:
        """`event`'s record, created or changed by it (`record_new`, `record_update`)."""
        key = (record_model(event), event.key)
        record = self.by_key.get(key)
        if record is None:
            record = self.by_key[key] = self.created[key] = record_new(event, delivery)
        else:
            self.touch(key, record_update(record, event, delivery))
        return record

    def touch(self, key: RecordKey, fields: Iterable[str]) -> None:
        """`fields` of `key`'s record changed (a record created is written whole)."""
        if key not in self.created and (names := set(fields)):
            self.changed.setdefault(key, set()).update(names)

    def fines(self) -> Iterator[tuple[RecordKey, Fine]]:
        """The fines among the records, with their keys."""
        return ((key, r) for key, r in self.by_key.items() if isinstance(r, Fine))

    def save(self) -> None:
        """Insert the records created, one statement per model, and write what changed on
        the others, each once (Django's bulk_update builds a CASE per field and row: for a
        batch, more time than the database takes)."""
        for model in {model for model, _ in self.created}:
            model.objects.bulk_create([r for (m, _), r in self.created.items() if m is model])
        for key, fields in self.changed.items():
            self.by_key[key].save(update_fields=sorted(fields))


def _fine_columns(event: payloads.Event) -> dict[str, Any]:
    """What a fine's columns hold of its payload (null for a malformed value: the
    payload keeps it as sent)."""
    return {
        "amount": payload_amount(event.data),
        "occurred_at": payload_occurred_at(event.data),
        "reference": payload_reference(event.data),
    }


def _observation(event: payloads.Event, delivery: WebhookDelivery) -> dict[str, Any]:
    return {
        "treated": event.treated,
        "at": _iso(event.as_of) if event.as_of else None,
        "received": _iso(delivery.received_at),
        "delivery": delivery.pk,
    }


def _history_with(
    history: list[dict[str, Any]], entry: dict[str, Any]
) -> list[dict[str, Any]] | None:
    """`history` with `entry` in its place in time; None when it adds nothing.

    Timed observations are kept whole (a later one may arrive first), untimed
    ones only when they change the last value: an exact repeat adds nothing.
    """
    if entry["at"] is not None:
        repeat = (entry["at"], entry["treated"])
        if any((e.get("at"), e.get("treated")) == repeat for e in history):
            return None
    elif history and history[-1].get("treated") == entry["treated"]:
        return None
    return sorted([*history, entry], key=lambda e: str(e.get("at") or e.get("received")))


def _iso(moment: datetime) -> str:
    # One format for every entry, so that the strings sort as the times do.
    return moment.astimezone(UTC).isoformat(timespec="microseconds")
