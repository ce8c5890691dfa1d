"""Processing stored deliveries into fines and notifications, in the background worker.

The receiver asks for the task `webhook_deliveries_process`, which runs
`deliveries_process_received`: it takes the deliveries still `received`, in
arrival order, a batch at a time, and gives each its outcome with the rules
of `fleet.webhooks.records`. A batch is read (its payloads parsed) before its
transaction, then written in a few statements: the records it touches are
read and locked in one query per model, those it creates inserted in one,
those it changes updated, the dashboard's tallies changed by what it did to
the fines (`fleet.services.tallies`: from their state as read to their state
as written), and its deliveries marked in one. If the database refuses any of
it, the batch is undone and its deliveries are processed one at a time
(`delivery_process`, with the same effect), so that only the one at fault
is kept as `failed`. A run's last batch also reads the dashboard's figures,
for the cache the moment it commits (`fine_figures_publish`); a run or a
replay that wrote something ends by checking they are there.

Every transaction that processes takes its locks in one order: its
deliveries' rows, then the records it finds (in key order), then the
tallies' (the version row first). A worker's batch and a replay of one of
its deliveries wait for each other, never in a circle (a deadlock, which
PostgreSQL would end by undoing one of them).

Exactly once in effect: the same body twice (`body_sha256`) is a duplicate of
the one processed first and changes nothing; a record's key is unique. A
delivery that cannot become a record keeps its status and reason (`invalid`:
the payload is at fault; `failed`: the portal is) and can be replayed
(`delivery_replay`, the admin action, `manage.py replay_webhooks`). A delivery
whose body retention emptied is never processed again: there is nothing left to
read, and reading nothing would undo what it made.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from django.db import IntegrityError, transaction
from django.db.models import F, Min
from django.utils import timezone

from fleet.models import (
    DeliveryStatus,
    DriverBasis,
    EventKind,
    Fine,
    Notification,
    WebhookDelivery,
    WebhookRecord,
    Wording,
)
from fleet.services.attribution import fine_verdicts
from fleet.services.dashboard import fine_figures_prepare, fine_figures_publish
from fleet.services.tallies import FineState, fine_tallies_apply, fine_tallies_touch
from fleet.services.vehicles import vehicle_drivers
from fleet.webhooks import payloads
from fleet.webhooks.changes import RecordChange, records_changed
from fleet.webhooks.records import RecordModel, record_model, record_new, record_update
from fleet.webhooks.retention import delivery_bodies_purge_schedule
from fleet.webhooks.unknown_keys import unknown_keys_record
from portal.lib import metrics, worker

logger = logging.getLogger(__name__)

_KEPT_STATUSES: Final = frozenset(
    {DeliveryStatus.INVALID, DeliveryStatus.FAILED, DeliveryStatus.UNKNOWN_KIND}
)
# What processing reads of a delivery (the rest stays deferred; the count of unknown
# keys left unrecorded so that a replay can update it), and what it writes (with
# `processed_at` and `attempts`).
_TO_PROCESS: Final = (
    "id",
    "received_at",
    "content_type",
    "body",
    "body_sha256",
    "attempts",
    "unknown_keys_unrecorded",
    "body_purged_at",
)
_OUTCOME: Final = ("status", "kind", "error", "duplicate_of_id", "fine_id", "notification_id")
# Counted by `delivery_replay` for a delivery left as it is: retention emptied its body.
BODY_EMPTIED: Final = "body_emptied"


def deliveries_process_received(*, batch: int = 64, budget_s: float = 30.0) -> Counter[str]:
    """Process the deliveries still `received`, in arrival order, `batch` to a transaction.

    Stops when none is left or after `budget_s` seconds, and then asks for a
    run that goes on. Two runs at once take different deliveries (PostgreSQL
    skips the rows another run holds; SQLite has one writer at a time).
    Returns how many ended in each status.
    """
    outcomes: Counter[str] = Counter()
    deadline = time.monotonic() + budget_s
    last = 0
    while time.monotonic() < deadline:
        candidates = list(
            WebhookDelivery.objects.filter(status=DeliveryStatus.RECEIVED, pk__gt=last)
            .order_by("pk")
            .only(*_TO_PROCESS)[:batch]
        )
        if not candidates:
            break
        last_batch = len(candidates) < batch
        reads = [_read(delivery) for delivery in candidates]
        for read in _batch_apply(reads, publish=last_batch):
            _finish(read)
            outcomes[read.delivery.status] += 1
            metrics.WEBHOOK_DELIVERIES.labels(str(read.delivery.status)).inc()
        if last_batch:
            break
        last = candidates[-1].pk
    else:  # out of time with some left: the next run goes on
        try:
            worker.enqueue("webhook_deliveries_process")
        except Exception:
            logger.exception("could not ask the worker to go on processing webhook deliveries")
    if outcomes[DeliveryStatus.PROCESSED]:
        fine_figures_prepare()
    delivery_bodies_purge_schedule()  # processed bodies are kept for so long
    return outcomes


def delivery_process(*, delivery: WebhookDelivery) -> DeliveryStatus | None:
    """Process one stored delivery (again), in its own transaction (once more if another
    run created its record meanwhile: it is then updated); its new status, or None when
    retention has emptied its body (it is left as it is, with what it made).

    It locks the delivery's row first, as a batch does: a replay of a delivery that a
    worker's batch holds waits for that batch before it locks the record."""
    stored = WebhookDelivery.objects.only(*_TO_PROCESS).get(pk=delivery.pk)
    if stored.body_purged_at is not None:
        return None
    read = _read(stored)
    attempts = read.delivery.attempts
    try:
        try:
            with transaction.atomic():
                _delivery_hold(delivery.pk)
                _write([read])
        except IntegrityError:  # another run created its record meanwhile: update that one
            read.delivery.attempts = attempts
            with transaction.atomic():
                _delivery_hold(delivery.pk)
                _write([read])
    except Exception as error:  # the database refused a write: kept for replay
        logger.exception("webhook delivery %s could not be processed; kept for replay", delivery.pk)
        read.delivery.attempts = attempts  # as before the writes that were undone
        _mark(read.delivery, DeliveryStatus.FAILED, kind=read.kind, error=_described(error))
        try:
            _marks_write([read.delivery])
        except Exception:  # the database is gone: it stays `received`, for the next run
            logger.exception("webhook delivery %s stays received", delivery.pk)
    _finish(read)
    delivery.refresh_from_db()
    return DeliveryStatus(delivery.status)


def delivery_replay(*, ids: Iterable[int]) -> Counter[str]:
    """Process these deliveries again, but those without a body to read, left as they
    are: refused ones (counted as `refused`) and those whose body retention emptied
    (counted as `BODY_EMPTIED`).

    Returns how many ended in each status. Safe to repeat: processing is idempotent.
    """
    outcomes: Counter[str] = Counter()
    chosen = WebhookDelivery.objects.filter(pk__in=list(ids)).order_by("received_at", "pk")
    for delivery in chosen.only("pk", "status"):
        if delivery.status == DeliveryStatus.REFUSED:
            outcomes[DeliveryStatus.REFUSED] += 1
            continue
        outcomes[delivery_process(delivery=delivery) or BODY_EMPTIED] += 1
    if outcomes[DeliveryStatus.PROCESSED]:
        fine_figures_prepare()
    return outcomes


@dataclass(slots=True)
class _Read:
    """A delivery read: its event, or the status it is kept with; its unknown keys."""

    delivery: WebhookDelivery
    kind: str = ""
    event: payloads.Event | None = None
    unknown_keys: dict[str, str] = field(default_factory=dict)
    finished: bool = False  # by `delivery_process`, after a batch that failed


def _delivery_hold(pk: int) -> None:
    """Lock delivery `pk`'s row until the transaction ends (a batch skips it meanwhile).

    FOR NO KEY UPDATE, as the UPDATE of its outcome would take: another run may still
    name it as the original of a duplicate (the foreign key's check shares its key).
    """
    WebhookDelivery.objects.select_for_update(no_key=True).filter(pk=pk).exists()


def _read(delivery: WebhookDelivery) -> _Read:
    """Parse `delivery` (no database): an event to apply, or its outcome marked already."""
    read = _Read(delivery)
    try:
        payload = payloads.parse_body(bytes(delivery.body), delivery.content_type)
        read.unknown_keys = payloads.unknown_keys(payload)
        read.kind = payloads.kind_of(payload) or EventKind.UNKNOWN
        read.event = payloads.event_from(payload)
    except payloads.InvalidPayload as invalid:
        _mark(delivery, DeliveryStatus.INVALID, kind=read.kind, error=str(invalid))
    except Exception as error:  # a fault of the portal's, kept for replay once fixed
        logger.exception("webhook delivery %s could not be read; kept for replay", delivery.pk)
        _mark(delivery, DeliveryStatus.FAILED, kind=read.kind, error=_described(error))
    else:
        if read.event is None:
            _mark(delivery, DeliveryStatus.UNKNOWN_KIND, kind=read.kind)
    return read


def _batch_apply(reads: list[_Read], *, publish: bool = False) -> list[_Read]:
    """Write `reads` in one transaction; those written (another run may have taken some).
    With `publish` (a run's last batch), the dashboard's figures, if it changed them, are
    read in it too, for the cache when it commits (`fine_figures_publish`).

    If the database refuses a write, the whole batch is undone and each delivery
    still waiting is processed on its own, unless another run holds it (it read the
    same deliveries and chose some of them): never twice. If the database is only
    busy (`worker.database_busy`), the error is raised: no delivery is at fault.
    """
    pks = [read.delivery.pk for read in reads]
    try:
        with transaction.atomic():
            waiting = set(
                WebhookDelivery.objects.select_for_update(skip_locked=True)
                .filter(pk__in=pks, status=DeliveryStatus.RECEIVED)
                .values_list("pk", flat=True)
            )
            chosen = [read for read in reads if read.delivery.pk in waiting]
            if _write(chosen) and publish:
                fine_figures_publish()
    except Exception as error:
        if worker.database_busy(error):
            raise  # nothing at fault: the whole run again once it is free (`worker.while_busy`)
        logger.warning("a batch of webhook deliveries failed; processing them one at a time")
        again = WebhookDelivery.objects.filter(pk__in=pks, status=DeliveryStatus.RECEIVED)
        chosen = []
        for delivery in again.order_by("pk"):
            with transaction.atomic():
                # Held until processed: another run skips it, as it skips this batch's.
                if not again.filter(pk=delivery.pk).select_for_update(skip_locked=True).exists():
                    continue  # another run holds it, or has processed it meanwhile
                delivery_process(delivery=delivery)
            chosen.append(_Read(delivery, finished=True))
    return chosen


def _write(reads: Sequence[_Read]) -> bool:
    """Apply `reads`, in their order, inside the caller's transaction: a few statements
    for all of them, with the effect each would have had alone, in turn. Whether the
    dashboard's tallies changed."""
    applied = [read for read in reads if read.event is not None]
    twins = _processed_twins(applied, exclude=[read.delivery.pk for read in reads])
    records = _records(applied)
    before = {key: _state(record) for key, record in records.items()}
    # The fines as committed (`_records` holds their locks): what the tallies counted.
    tallied = {key: FineState.of(fine) for key, fine in records.items() if isinstance(fine, Fine)}
    # A Fine or a Notification, as its model says (`Any`: one dict for both models).
    created: dict[tuple[RecordModel, str], Any] = {}
    changed: dict[tuple[RecordModel, str], set[str]] = {}  # existing records: fields changed
    links: dict[int, WebhookRecord] = {}
    for read in applied:
        delivery, event = read.delivery, read.event
        assert event is not None
        if (original := twins.get(delivery.body_sha256)) is not None:
            _mark(delivery, DeliveryStatus.DUPLICATE, kind=read.kind, duplicate_of_id=original)
            continue
        key = (record_model(event), event.key)
        record = records.get(key)
        if record is None:
            record = records[key] = created[key] = record_new(event, delivery)
        elif (names := record_update(record, event, delivery)) and key not in created:
            changed.setdefault(key, set()).update(names)
        _mark(delivery, DeliveryStatus.PROCESSED, kind=read.kind)
        links[delivery.pk] = record  # linked below, once a new record has its id
        twins[delivery.body_sha256] = delivery.pk  # processed: the twin of a later same body
    new_fines = [record for record in created.values() if isinstance(record, Fine)]
    # A fine whose moment or vehicle changed is attributed again (unless set by hand).
    moved = [key for key, fields in changed.items() if _driver_moved(records[key], fields)]
    _drivers_attribute([*new_fines, *(records[key] for key in moved)])
    for key in moved:
        changed[key] |= {"driver_basis", "driver_id", "driver_span"}
    _wordings_link(records, created=created, changed=changed)
    for model in {model for model, _ in created}:
        model.objects.bulk_create([record for (m, _), record in created.items() if m is model])
    # Each changed record once, with what changed (Django's bulk_update builds a
    # CASE per field and row: for a batch, more time than the database takes).
    for key, fields in changed.items():
        records[key].save(update_fields=sorted(fields))
    tallies_changed = fine_tallies_apply(
        (tallied.get(key), FineState.of(record))
        for key, record in records.items()
        if isinstance(record, Fine)
    )
    if _notifications_counted_changed(created, changed):
        fine_tallies_touch(notifications=True)
        tallies_changed = True
    for read in applied:
        if (record := links.get(read.delivery.pk)) is not None:
            link = "fine_id" if isinstance(record, Fine) else "notification_id"
            setattr(read.delivery, link, record.pk)
    _marks_write([read.delivery for read in reads])
    _changes_announce(records, before=before, created=created)
    return tallies_changed


def _notifications_counted_changed(
    created: Mapping[tuple[RecordModel, str], Any],
    changed: Mapping[tuple[RecordModel, str], set[str]],
) -> bool:
    """Whether a notification came or changed as the dashboard counts them (untreated,
    of a vehicle): a part of the fleet's count is kept with its figures, by version."""
    return any(model is Notification for model, _ in created) or any(
        model is Notification and {"treated", "registration"} & fields
        for (model, _), fields in changed.items()
    )


def _driver_moved(record: WebhookRecord, fields: set[str]) -> bool:
    """Whether a changed fine's driver is to be found again: its moment or vehicle changed,
    and no person set it."""
    return (
        isinstance(record, Fine)
        and bool({"occurred_at", "registration"} & fields)
        and record.driver_basis != DriverBasis.MANUAL
    )


def _drivers_attribute(fines: Sequence[Fine]) -> None:
    """Give these fines their driver (`fleet.services.attribution`): from the history of
    who had the vehicle when committed, else from a vehicle list already at hand (no API
    call inside the transaction); without one, the worker does it after the commit
    (`fine_drivers_attribute_run`, which takes the fines not attributed yet), fetching the
    list."""
    if not fines:
        return
    verdicts = fine_verdicts(
        fines, list_drivers=lambda wanted: vehicle_drivers(registrations=wanted, fetch=False)
    )
    for fine, verdict in zip(fines, verdicts, strict=True):
        found = verdict or (DriverBasis.PENDING, None, None)
        fine.driver_basis, fine.driver_id, fine.driver_span_id = found
    if None in verdicts:
        transaction.on_commit(_attribution_ask)


def _wordings_link(
    records: dict[tuple[RecordModel, str], Any],
    *,
    created: dict[tuple[RecordModel, str], Any],
    changed: dict[tuple[RecordModel, str], set[str]],
) -> None:
    """Give each record of the batch its wording (a fine's infraction, a notification's
    title) from `Wording`, which gets the texts it does not have yet."""
    texts = {
        key: payloads.payload_wording(record.payload, kind=_kind(record))
        for key, record in records.items()
    }
    ids = _wording_ids({text for text in texts.values() if text})
    for key, record in records.items():
        field = "infraction" if isinstance(record, Fine) else "heading"
        wording_id = ids.get(texts[key])
        if getattr(record, f"{field}_id") != wording_id:
            setattr(record, f"{field}_id", wording_id)
            if key not in created:
                changed.setdefault(key, set()).add(field)


def _kind(record: WebhookRecord) -> str:
    return payloads.FINE if isinstance(record, Fine) else payloads.NOTIFICATION


def _wording_ids(texts: set[str]) -> dict[str, int]:
    """`Wording`'s id of each text, those it lacked added (in digest order: two batches
    adding the same ones wait for each other, never in a circle)."""
    if not texts:
        return {}
    by_digest = {hashlib.sha256(text.encode()).hexdigest(): text for text in texts}
    found = dict(Wording.objects.filter(digest__in=by_digest).values_list("digest", "pk"))
    if missing := sorted(by_digest.keys() - found.keys()):
        Wording.objects.bulk_create(
            [Wording(text=by_digest[digest], digest=digest) for digest in missing],
            ignore_conflicts=True,  # added meanwhile by another batch: that one is read
        )
        found |= dict(Wording.objects.filter(digest__in=missing).values_list("digest", "pk"))
    return {by_digest[digest]: pk for digest, pk in found.items()}


def _attribution_ask() -> None:
    try:
        worker.enqueue("fine_drivers_attribute_run")
    except Exception:
        logger.exception("could not ask the worker to attribute new fines to their drivers")


def _state(record: WebhookRecord) -> tuple[bool, bool]:
    """What the alerts listen for: whether a record has its document, whether it is treated."""
    return bool(getattr(record, "link_frame", "")), record.treated


def _changes_announce(
    records: dict[tuple[RecordModel, str], Any],
    *,
    before: dict[tuple[RecordModel, str], tuple[bool, bool]],
    created: dict[tuple[RecordModel, str], Any],
) -> None:
    """Tell `records_changed`'s receivers, in this transaction, what the batch did."""
    changes = []
    for key, record in records.items():
        had_document, was_treated = before.get(key, (False, False))
        has_document, treated = _state(record)
        change = RecordChange(
            record=record,
            created=key in created,
            document_arrived=has_document and not had_document,
            treated=treated and not was_treated,
        )
        if change.created or change.document_arrived or change.treated:
            changes.append(change)
    if changes:
        records_changed.send(sender=WebhookDelivery, changes=changes)


def _marks_write(deliveries: Sequence[WebhookDelivery]) -> None:
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


def _processed_twins(reads: Sequence[_Read], *, exclude: list[int]) -> dict[str, int]:
    """For each body of `reads`, the first other delivery with that body that was processed."""
    shas = {read.delivery.body_sha256 for read in reads}
    if not shas:
        return {}
    return dict(
        WebhookDelivery.objects.filter(body_sha256__in=shas, status=DeliveryStatus.PROCESSED)
        .exclude(pk__in=exclude)
        .values("body_sha256")
        .annotate(first=Min("pk"))
        .values_list("body_sha256", "first")
    )


def _records(reads: Sequence[_Read]) -> dict[tuple[RecordModel, str], Any]:
    """The records of `reads`' keys, locked until the transaction ends (in key order)."""
    keys: dict[RecordModel, set[str]] = {}
    for read in reads:
        assert read.event is not None
        keys.setdefault(record_model(read.event), set()).add(read.event.key)
    found: dict[tuple[RecordModel, str], Any] = {}
    for model, wanted in keys.items():
        for record in model.objects.select_for_update().filter(key__in=wanted).order_by("key"):
            found[model, record.key] = record
    return found


def _mark(delivery: WebhookDelivery, status: DeliveryStatus, **fields: Any) -> None:
    """How processing went, on `delivery` (its row is written by `_marks_write`)."""
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


def _described(error: Exception) -> str:
    return f"{type(error).__name__}: {error}"


def _finish(read: _Read) -> None:
    """After the commit: say what was kept, and report keys never seen before."""
    delivery = read.delivery
    if read.finished:
        return
    if delivery.status in _KEPT_STATUSES:
        logger.warning(
            "webhook delivery %s kept as %s: %s", delivery.pk, delivery.status, delivery.error
        )
    if read.unknown_keys:
        unknown_keys_record(read.unknown_keys, delivery)
