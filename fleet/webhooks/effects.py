"""What processing a batch of deliveries does, in the order it does it: the one place
that says so. All of it happens inside the batch's transaction, which
`fleet.webhooks.processing` opens holding the deliveries' rows:

1. the records the events name are read under their locks, in key order
   (`fleet.webhooks.records.RecordsHeld`), with what the tallies counted of each fine
   and what the alerts knew of each record;
2. each event in turn: the same body as a delivery processed already is a duplicate and
   changes nothing; any other creates or changes its record (`fleet.webhooks.records`),
   and its delivery is processed;
3. the new fines, and those whose moment or vehicle changed, get their driver
   (`fleet.services.attribution`);
4. each record gets its wording (`fleet.webhooks.wordings`);
5. the records are written: one INSERT per model, an UPDATE of what changed on each
   of the others;
6. the dashboard's tallies change by what the batch did (`fleet.services.tallies`);
7. each delivery's outcome and record are written, one UPDATE per outcome
   (`fleet.webhooks.outcomes`);
8. the receivers of `records_changed` (the alerts' outbox) are told what happened
   (`fleet.webhooks.changes`): what they write commits, or is undone, with the rest.

Each step is taken for the whole batch at once, with the effect each delivery would
have had alone, in turn. The order is also the order of the locks: the records before
the tallies, as `fleet.webhooks.processing` requires of every transaction it opens.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from django.db.models import Min

from fleet.models import DeliveryStatus, Fine, Notification, WebhookDelivery
from fleet.services.attribution import (
    FINE_DRIVER_FIELDS,
    fine_driver_moved,
    fine_drivers_attribute_in_batch,
)
from fleet.services.tallies import FineState, fine_tallies_apply, fine_tallies_touch
from fleet.webhooks import payloads
from fleet.webhooks.changes import record_state, records_changed_announce
from fleet.webhooks.outcomes import delivery_mark, delivery_marks_write
from fleet.webhooks.records import RecordKey, RecordsHeld
from fleet.webhooks.wordings import wordings_link


def delivery_effects_write(
    deliveries: Sequence[tuple[WebhookDelivery, payloads.Event | None]],
) -> bool:
    """Apply a batch's events, in their order, inside the caller's transaction: each
    delivery with its event (None: its outcome is marked already, it is only written).
    Whether the dashboard's tallies changed."""
    applied = [(delivery, event) for delivery, event in deliveries if event is not None]
    twins = _processed_twins(applied, exclude=[delivery.pk for delivery, _ in deliveries])
    records = RecordsHeld(event for _, event in applied)  # 1
    counted = {key: FineState.of(fine) for key, fine in records.fines()}
    alerted = {key: record_state(record) for key, record in records.by_key.items()}
    made = []
    for delivery, event in applied:  # 2
        if (original := twins.get(delivery.body_sha256)) is not None:
            delivery_mark(
                delivery, DeliveryStatus.DUPLICATE, kind=event.kind, duplicate_of_id=original
            )
            continue
        made.append((delivery, records.apply(event, delivery)))
        delivery_mark(delivery, DeliveryStatus.PROCESSED, kind=event.kind)
        twins[delivery.body_sha256] = delivery.pk  # processed: the twin of a later same body
    _drivers_attribute(records)  # 3
    wordings_link(records)  # 4
    records.save()  # 5
    tallies_changed = _tallies_apply(records, counted)  # 6
    for delivery, record in made:  # 7, now that a new record has its id
        setattr(delivery, "fine_id" if isinstance(record, Fine) else "notification_id", record.pk)
    delivery_marks_write([delivery for delivery, _ in deliveries])
    records_changed_announce(  # 8
        (record, alerted.get(key)) for key, record in records.by_key.items()
    )
    return tallies_changed


def _processed_twins(
    applied: Sequence[tuple[WebhookDelivery, payloads.Event]], *, exclude: list[int]
) -> dict[str, int]:
    """For each body of `applied`, the first other delivery with that body that was processed."""
    shas = {delivery.body_sha256 for delivery, _ in applied}
    if not shas:
        return {}
    return dict(
        WebhookDelivery.objects.filter(body_sha256__in=shas, status=DeliveryStatus.PROCESSED)
        .exclude(pk__in=exclude)
        .values("body_sha256")
        .annotate(first=Min("pk"))
        .values_list("body_sha256", "first")
    )


def _drivers_attribute(records: RecordsHeld) -> None:
    """The new fines, and those whose moment or vehicle changed, attributed in memory."""
    moved = [
        key
        for key, fields in records.changed.items()
        if isinstance(fine := records.by_key[key], Fine) and fine_driver_moved(fine, fields)
    ]
    new = [fine for fine in records.created.values() if isinstance(fine, Fine)]
    fine_drivers_attribute_in_batch([*new, *(records.by_key[key] for key in moved)])
    for key in moved:
        records.touch(key, FINE_DRIVER_FIELDS)


def _tallies_apply(records: RecordsHeld, counted: Mapping[RecordKey, FineState]) -> bool:
    """The tallies changed by what the batch did to the fines, from their state as
    counted to their state as written; and a new version of the notifications' when one
    came or changed as the dashboard counts them (untreated, of a vehicle). Whether any
    changed."""
    changed = fine_tallies_apply(
        (counted.get(key), FineState.of(fine)) for key, fine in records.fines()
    )
    if any(model is Notification for model, _ in records.created) or any(
        model is Notification and {"treated", "registration"} & fields
        for (model, _), fields in records.changed.items()
    ):
        fine_tallies_touch(notifications=True)
        changed = True
    return changed
