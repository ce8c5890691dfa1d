"""Processing stored deliveries into fines and notifications, in the background worker.

The receiver asks for the task `webhook_deliveries_process`, which runs
`deliveries_process_received`: it takes the deliveries still `received`, in
arrival order, a batch at a time, and gives each its outcome with the rules
of `fleet.webhooks.records`. A batch is read (its payloads parsed) before its
transaction, then written in a few statements, in the order that
`fleet.webhooks.effects` lists: the records, their drivers and wordings, the
dashboard's tallies, the deliveries' outcomes, and what the alerts are told. If
the database refuses any of it, the batch is undone and its deliveries are
processed one at a time (`delivery_process`, with the same effect), so that
only the one at fault is kept as `failed`. A run's last batch also reads the
dashboard's figures, for the cache the moment it commits
(`fine_figures_publish`); a run or a replay that wrote something ends by
checking they are there.

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

import logging
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final

from django.db import IntegrityError, transaction

from fleet.models import DeliveryStatus, EventKind, WebhookDelivery
from fleet.services.dashboard import fine_figures_prepare, fine_figures_publish
from fleet.webhooks import payloads
from fleet.webhooks.effects import delivery_effects_write
from fleet.webhooks.outcomes import delivery_mark, delivery_marks_write
from fleet.webhooks.retention import delivery_bodies_purge_schedule
from fleet.webhooks.unknown_keys import unknown_keys_record
from portal.lib import metrics, worker

logger = logging.getLogger(__name__)

_KEPT_STATUSES: Final = frozenset(
    {DeliveryStatus.INVALID, DeliveryStatus.FAILED, DeliveryStatus.UNKNOWN_KIND}
)
# What processing reads of a delivery (the rest stays deferred; the count of unknown
# keys left unrecorded so that a replay can update it).
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
        delivery_mark(read.delivery, DeliveryStatus.FAILED, kind=read.kind, error=_described(error))
        try:
            delivery_marks_write([read.delivery])
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
        delivery_mark(delivery, DeliveryStatus.INVALID, kind=read.kind, error=str(invalid))
    except Exception as error:  # a fault of the portal's, kept for replay once fixed
        logger.exception("webhook delivery %s could not be read; kept for replay", delivery.pk)
        delivery_mark(delivery, DeliveryStatus.FAILED, kind=read.kind, error=_described(error))
    else:
        if read.event is None:
            delivery_mark(delivery, DeliveryStatus.UNKNOWN_KIND, kind=read.kind)
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
    """Write `reads`, in their order, inside the caller's transaction, as
    `fleet.webhooks.effects` orders a delivery's effects. Whether the dashboard's tallies
    changed."""
    return delivery_effects_write([(read.delivery, read.event) for read in reads])


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
