"""Webhook deliveries: stored as received, then processed into fines and notifications.

Store first: `delivery_store` writes the delivery (committed on return)
before anything is parsed, so that whatever happens next, nothing received
is lost, and the receiver answers as soon as it is stored. Processing comes
after, in batches: `deliveries_schedule` asks the background worker
(`manage.py db_worker`) to run `deliveries_process_received`, at most once a
second per process, and that run turns every delivery still `received` into
its record, many to a transaction. A delivery that cannot become a record
keeps its status and error and can be replayed (`delivery_replay`, the
admin action, `manage.py replay_webhooks`).

Idempotent, whatever the order of arrival:

- the same body twice (`body_sha256`) is a duplicate of the one already
  processed, and changes nothing;
- a record is found by its key (the payload's id, else a digest of its
  identifying fields) and updated in place;
- when the payload carries its own time (`updatedAt`), an event older than
  the record's state is kept in the history but does not overwrite the
  state; without one, arrival order decides;
- a `linkFrame` once available is never erased by a `null` (spec 2.6: null
  means "not available yet", so a null after a URL is an older event).

The receiver's path is lean (bench/webhooks.py measures it against a bare
POST view): the writes are single SQL statements built once per model
(`_Sql`), not ORM saves; on SQLite the threads of a process that store at
the same moment share one transaction (`_GroupCommit`: one commit and one
turn of the write lock for all of them; PostgreSQL groups concurrent commits
itself, and each thread's own connection stores sooner); and on PostgreSQL a processing
transaction commits without waiting for its WAL flush: a crash can lose a
processing, never a delivery, which stays `received` for the next run.

Processing shares the machine and, on SQLite, the one write lock with the
receivers, so a batch is written set-wise (`_plans_write`): a few statements
for 64 deliveries, not a few for each, with the same outcome as one at a time
(tests/webhooks/test_processing.py compares the two).
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import hmac
import ipaddress
import logging
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

import orjson
from django.conf import settings
from django.db import (
    DatabaseError,
    InterfaceError,
    OperationalError,
    connection,
    models,
    transaction,
)
from django.utils import timezone

from fleet import webhooks
from fleet.models import (
    PROCESSED_BODY_INDEX,
    DeliveryStatus,
    EventKind,
    Fine,
    Notification,
    UnknownWebhookKey,
    WebhookDelivery,
    WebhookRecord,
    payload_registration,
)
from fleet.pace import Pace

logger = logging.getLogger(__name__)

# Header names that may carry a credential or a signature: never stored.
_SECRET_HEADER_PARTS = ("auth", "cookie", "token", "secret", "signature", "key", "password")
_MAX_HEADERS, _MAX_HEADER_LENGTH = 40, 500
_KEPT_STATUSES = frozenset(
    {DeliveryStatus.INVALID, DeliveryStatus.FAILED, DeliveryStatus.UNKNOWN_KIND}
)


def webhook_token_valid(*, token: str) -> bool:
    """Whether `token` is one of FLEET_WEBHOOK_TOKENS (compared in constant time).

    Every configured token is compared, so the time taken says nothing about
    which one, or how much of one, matched.
    """
    given = token.encode()
    matched = False
    for accepted in settings.FLEET_WEBHOOK_TOKENS:
        matched |= hmac.compare_digest(given, accepted.encode())
    return matched


def webhook_source_address(*, remote_addr: str, forwarded_for: str = "") -> str | None:
    """The sender's address as the deployment's proxies report it.

    With FLEET_WEBHOOK_PROXY_COUNT = N > 0, each of N proxies appended the
    address it received from to X-Forwarded-For: the Nth entry from the
    right is the one the outermost proxy saw (entries left of it are the
    sender's own claims). With 0, the connection's address. None when it is
    not an IP address.
    """
    candidate = remote_addr
    proxies = settings.FLEET_WEBHOOK_PROXY_COUNT
    if proxies and forwarded_for:
        hops = [hop.strip() for hop in forwarded_for.split(",") if hop.strip()]
        if hops:
            candidate = hops[-proxies] if len(hops) >= proxies else hops[0]
    return _ip_address(candidate)


@functools.lru_cache(maxsize=1024)  # senders are a few addresses, parsed once each
def _ip_address(text: str) -> str | None:
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return None


def delivery_store(
    *,
    body: bytes,
    content_type: str,
    headers: Mapping[str, str],
    source_address: str | None,
    declared_size: int | None = None,
) -> WebhookDelivery:
    """Write one delivery as received (committed on return), before any parsing.

    `declared_size` without a body: a delivery refused as too large, recorded
    (status `refused`) so that an operator sees it; its body was never read.
    """
    pk, values = _delivery_insert(
        body=body,
        content_type=content_type,
        headers=headers,
        source_address=source_address,
        declared_size=declared_size,
    )
    return WebhookDelivery(pk=pk, **values)


def _delivery_insert(
    *,
    body: bytes,
    content_type: str,
    headers: Mapping[str, str],
    source_address: str | None,
    declared_size: int | None = None,
) -> tuple[int, dict[str, Any]]:
    """`delivery_store` without making a model instance: its id and its values."""
    refused = declared_size is not None
    values: dict[str, Any] = {
        "received_at": timezone.now(),
        "content_type": content_type[:255],
        "body": body,
        "body_size": len(body) if declared_size is None else declared_size,
        "body_sha256": "" if refused else hashlib.sha256(body).hexdigest(),
        "headers": _safe_headers(headers),
        "source_address": source_address,
        "status": DeliveryStatus.REFUSED if refused else DeliveryStatus.RECEIVED,
        "error": (
            f"the body of {declared_size} bytes is over the limit of "
            f"{settings.FLEET_WEBHOOK_MAX_BYTES} bytes (FLEET_WEBHOOK_MAX_BYTES)"
            if refused
            else ""
        ),
        "kind": "",
        "attempts": 0,
    }
    return _group_commit.store(_sql(WebhookDelivery).insert_statement(values)), values


def delivery_process(*, delivery: WebhookDelivery) -> DeliveryStatus:
    """Turn a stored delivery into its record; its status says how it went.

    Never raises: a delivery that cannot be processed is marked `invalid`
    (the payload is at fault) or `failed` (the portal is), with the reason,
    and stays for replay.
    """
    plan = _plan(delivery)
    try:
        with _writer(), transaction.atomic():
            _commit_without_flush()
            _plans_write([plan])
    except Exception as error:  # the database refused a write: kept for replay
        logger.exception("webhook delivery %s could not be processed; kept for replay", delivery.pk)
        _mark_kept(
            delivery,
            DeliveryStatus.FAILED,
            kind=plan.kind,
            error=f"{type(error).__name__}: {error}",
        )
    _plan_finish(plan)
    return DeliveryStatus(delivery.status)


@dataclass(slots=True)
class _Plan:
    """What processing a delivery will write, worked out before any transaction.

    SQLite holds its one write lock from BEGIN to COMMIT, for every worker:
    parsing and preparing statements happen before, not under it.
    """

    delivery: WebhookDelivery
    kind: str = ""
    found: dict[str, str] = field(default_factory=dict)  # unknown keys, for the report
    event: webhooks.Event | None = None
    model: type[Fine] | type[Notification] | None = None  # of the event's record
    creation: _Row | None = None  # the record it creates, if its key is new
    kept: tuple[DeliveryStatus, str] | None = None  # (invalid or failed, why)
    finished: bool = False  # by `delivery_process`, after a batch that failed


def _plan(delivery: WebhookDelivery) -> _Plan:
    plan = _Plan(delivery)
    try:
        payload = webhooks.parse_body(bytes(delivery.body), delivery.content_type)
        plan.found = webhooks.unknown_keys(payload)
        plan.kind = webhooks.kind_of(payload) or EventKind.UNKNOWN
        plan.event = webhooks.event_from(payload)
        if plan.event is not None:
            plan.model = Fine if plan.event.kind == webhooks.FINE else Notification
            plan.creation = _sql(plan.model).row(_record_new(plan.event, delivery))
    except webhooks.InvalidPayload as invalid:
        plan.kept = (DeliveryStatus.INVALID, str(invalid))
    except Exception as error:  # a fault of the portal's, kept for replay once fixed
        logger.exception("webhook delivery %s could not be processed; kept for replay", delivery.pk)
        plan.kept = (DeliveryStatus.FAILED, f"{type(error).__name__}: {error}")
    return plan


def _plans_write(plans: Sequence[_Plan]) -> None:
    """The writes of `plans`, in their order, inside the caller's transaction (raises
    if one is refused).

    Set-wise, a handful of statements for a whole batch: the first delivery of
    each key creates its record if the key is new, all in one statement per
    model, and every delivery that ends there (created, invalid, of an unknown
    kind) is marked in one more. The others, updates of existing records or the
    same body again, are worked out in order in memory (`_records_update`).
    """
    firsts: dict[tuple[type[WebhookRecord], str], _Plan] = {}
    for plan in plans:
        if plan.kept is None and plan.event is not None and plan.model is not None:
            firsts.setdefault((plan.model, plan.event.key), plan)
    created = _records_create(list(firsts.values()))
    marks = _Marks()
    rest: list[_Plan] = []
    for plan in plans:
        delivery, kind = plan.delivery, plan.kind
        if plan.kept is not None:
            marks.add(delivery, plan.kept[0], kind=kind, error=plan.kept[1])
        elif plan.event is None or plan.model is None:
            marks.add(delivery, DeliveryStatus.UNKNOWN_KIND, kind=kind)
        elif (pk := created.get(delivery.pk)) is not None:
            marks.add(delivery, DeliveryStatus.PROCESSED, kind=kind, **{_link_of(plan): pk})
        else:
            rest.append(plan)
    marks.write()
    if rest:
        _records_update(rest)


def _link_of(plan: _Plan) -> str:
    """The delivery's column that points at the plan's record."""
    return "fine_id" if plan.model is Fine else "notification_id"


def _records_create(plans: list[_Plan]) -> dict[int, int]:
    """Create the records of `plans` whose keys are new: `delivery id -> record id` of those."""
    created: dict[int, int] = {}
    for model in (Fine, Notification):
        mine = {plan.creation.key: plan for plan in plans if plan.model is model and plan.creation}
        if not mine:
            continue
        rows = [plan.creation for plan in mine.values() if plan.creation]
        for pk, key in _sql(model).insert_rows(rows, unless_exists="key", returning="key"):
            created[mine[key].delivery.pk] = int(pk)
    return created


def _plan_finish(plan: _Plan) -> None:
    """After the commit: say what was kept, and report keys never seen before."""
    delivery = plan.delivery
    if plan.finished:
        return
    if delivery.status in _KEPT_STATUSES:
        logger.warning(
            "webhook delivery %s kept as %s: %s", delivery.pk, delivery.status, delivery.error
        )
    if plan.found:
        _unknown_keys_record(plan.found, delivery)


def _commit_without_flush() -> None:
    """On PostgreSQL, this transaction's commit does not wait for its WAL flush.

    The deliveries are already stored for good: losing a processing in a crash
    only leaves them `received`, for the next run or the replay.
    """
    if connection.vendor == "postgresql":
        _execute("SET LOCAL synchronous_commit TO OFF")


@dataclass(frozen=True, slots=True)
class Received:
    """What the receiver tells the sender of a delivery it stored."""

    pk: int
    status: str
    error: str


def delivery_receive(
    *, body: bytes, content_type: str, headers: Mapping[str, str], source_address: str | None
) -> Received:
    """What the receiver does with each delivery: store it, and see that it gets processed.

    A body that is not JSON by its content type is processed at once (it can only
    be kept as invalid, which the sender is told); any other is left `received` for
    the next batch (`deliveries_schedule`).
    """
    pk, values = _delivery_insert(
        body=body, content_type=content_type, headers=headers, source_address=source_address
    )
    if webhooks.is_json_content_type(content_type):
        deliveries_schedule()
        return Received(pk, values["status"], values["error"])
    delivery = WebhookDelivery(pk=pk, **values)
    delivery_process(delivery=delivery)
    return Received(pk, delivery.status, delivery.error)


_PAUSE_BETWEEN_BATCHES_S = 0.001


# When this process last asked the worker for a processing run.
_schedule = Pace()


def deliveries_schedule() -> None:
    """Have the worker process the `received` deliveries soon (at most one request per interval).

    Asking once per `FLEET_WEBHOOK_BATCH_SECONDS` is enough for every delivery
    this process stores: a run asked for at `t` starts no earlier than
    `t + interval` and takes every delivery still `received` then, so it
    includes all those stored (committed before they were counted here) until
    the next request at `t + interval`. A run that could not be asked for is
    asked by the next delivery; a delivery it missed is taken by a later run.
    """
    interval = float(settings.FLEET_WEBHOOK_BATCH_SECONDS)
    if _schedule.due(interval) and not _processing_run_ask(after_s=interval):
        _schedule.reset()  # stored all the same: the next delivery asks again


def _processing_run_ask(*, after_s: float) -> bool:
    """Enqueue a run of `deliveries_process_received` in `after_s` seconds; whether it was."""
    from fleet.tasks import webhook_deliveries_process  # the tasks module imports this one

    try:
        webhook_deliveries_process.using(
            run_after=timezone.now() + timedelta(seconds=after_s)
        ).enqueue()
    except Exception:
        logger.exception("could not ask the worker to process webhook deliveries")
        return False
    return True


def deliveries_process_received(*, batch: int = 64, budget_s: float = 30.0) -> Counter[str]:
    """Process the deliveries still `received`, in arrival order, `batch` to a transaction.

    Stops when none is left or after `budget_s` seconds, and then asks for a
    run that goes on. Returns how many ended in each status.
    """
    outcomes: Counter[str] = Counter()
    deadline = time.monotonic() + budget_s
    last = 0
    sql = _sql(WebhookDelivery)
    waiting = (
        f"WHERE {sql.column('status')} = '{DeliveryStatus.RECEIVED.value}' "
        f"AND {sql.pk} > %s ORDER BY {sql.pk} LIMIT %s"
    )
    while time.monotonic() < deadline:
        candidates: list[WebhookDelivery] = sql.instances(_TO_PROCESS, waiting, [last, batch])
        if not candidates:
            break
        for plan in _plans_apply([_plan(delivery) for delivery in candidates]):
            _plan_finish(plan)
            outcomes[plan.delivery.status] += 1
        if len(candidates) < batch:
            break
        last = candidates[-1].pk
        # The receivers wait for the same write lock, and must answer quickly: let them
        # have it between two batches (on release, the releasing process would most
        # often take it again before a waiting one wakes up).
        time.sleep(_PAUSE_BETWEEN_BATCHES_S)
    else:
        _processing_run_ask(after_s=0)  # out of time with some left: the next run goes on
    return outcomes


def _plans_apply(plans: list[_Plan]) -> list[_Plan]:
    """Apply `plans` in one transaction; those applied (another run may have taken some).

    If the database refuses a write, the whole transaction is undone and each
    delivery is processed again on its own, so that only the one at fault is
    kept as failed.
    """
    try:
        with _writer(), transaction.atomic():
            _commit_without_flush()
            # Still waiting? Chosen under the lock: PostgreSQL skips rows another run
            # holds, SQLite runs one transaction at a time.
            waiting = _still_received([plan.delivery.pk for plan in plans])
            chosen = [plan for plan in plans if plan.delivery.pk in waiting]
            _plans_write(chosen)
    except Exception:
        logger.warning("a batch of webhook deliveries failed; processing them one at a time")
        again = WebhookDelivery.objects.filter(
            pk__in=[plan.delivery.pk for plan in plans], status=DeliveryStatus.RECEIVED
        ).order_by("pk")
        chosen = []
        for delivery in again:
            delivery_process(delivery=delivery)
            chosen.append(_Plan(delivery, finished=True))
    return chosen


# What processing reads of a delivery (the rest stays deferred).
_TO_PROCESS = ("id", "received_at", "content_type", "body", "body_sha256", "status", "attempts")


def _still_received(pks: list[int]) -> set[int]:
    """Those of `pks` still `received`, locked: PostgreSQL skips rows another run holds."""
    sql = _sql(WebhookDelivery)
    features = connection.features
    lock = " FOR UPDATE SKIP LOCKED" if features.has_select_for_update_skip_locked else ""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {sql.pk} FROM {sql.table} WHERE {sql.pk} IN "  # noqa: S608
            f"({_placeholders(pks)}) "
            f"AND {sql.column('status')} = '{DeliveryStatus.RECEIVED.value}'{lock}",
            pks,
        )
        return {int(pk) for (pk,) in cursor.fetchall()}


def delivery_replay(*, ids: Iterable[int]) -> Counter[str]:
    """Process these deliveries again (refused ones have no body: skipped).

    Returns how many ended in each status. Safe to repeat: processing is idempotent.
    """
    outcomes: Counter[str] = Counter()
    for delivery in WebhookDelivery.objects.filter(pk__in=list(ids)).order_by("received_at", "pk"):
        if delivery.status == DeliveryStatus.REFUSED:
            outcomes[DeliveryStatus.REFUSED] += 1
            continue
        outcomes[delivery_process(delivery=delivery)] += 1
    return outcomes


# --- Applying an event to its record ------------------------------------------


def _records_update(plans: list[_Plan]) -> None:
    """Apply `plans` (events of records that exist) in their order: each updates its
    record, unless the same body was processed before (a duplicate).

    In memory, as one at a time would in the database: the processed twins and
    the records are read in one statement each, every delivery sees what the
    ones before it did, and the records that changed are written once, at the end.
    (A key created by `_records_create`, or one a concurrent run inserted, which
    that insert waited for, exists by now.)
    """
    twins = _processed_twins(plans)
    records = _records_for_update(plans)
    changed: dict[tuple[type[WebhookRecord], int], set[str]] = {}
    marks = _Marks()
    for plan in plans:
        delivery, event, model = plan.delivery, plan.event, plan.model
        assert event is not None
        assert model is not None
        if (original := twins.get(delivery.body_sha256)) is not None:
            marks.add(delivery, DeliveryStatus.DUPLICATE, kind=plan.kind, duplicate_of_id=original)
            continue
        record = records.get((model, event.key))
        if record is None:
            raise model.DoesNotExist(f"no {model._meta.verbose_name} has the key {event.key!r}")
        if fields := _record_update(record, event, delivery):
            changed.setdefault((model, record.pk), set()).update(fields)
        marks.add(delivery, DeliveryStatus.PROCESSED, kind=plan.kind, **{_link_of(plan): record.pk})
        twins[delivery.body_sha256] = delivery.pk  # processed: the twin of a later same body
    _records_write(records, changed)
    marks.write()


def _processed_twins(plans: list[_Plan]) -> dict[str, int]:
    """For each body of `plans`, the earliest other delivery with that body that was processed."""
    sql = _sql(WebhookDelivery)
    shas = sorted({plan.delivery.body_sha256 for plan in plans})
    pks = [plan.delivery.pk for plan in plans]
    sha = sql.column("body_sha256")
    # The status written out, as the partial index that serves this lookup names it
    # (a planner may not match a parameter). SQLite, without statistics, guesses that
    # the index of statuses finds fewer rows than this one does for many bodies, and
    # reads every processed delivery: told which index to use. Identifiers are our
    # own, quoted.
    hint = (
        f" INDEXED BY {connection.ops.quote_name(PROCESSED_BODY_INDEX)}"
        if connection.vendor == "sqlite"
        else ""
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {sha}, MIN({sql.pk}) FROM {sql.table}{hint} "  # noqa: S608
            f"WHERE {sha} IN ({_placeholders(shas)}) "
            f"AND {sql.column('status')} = '{DeliveryStatus.PROCESSED.value}' "
            f"AND {sql.pk} NOT IN ({_placeholders(pks)}) GROUP BY {sha}",
            [*shas, *pks],
        )
        return {digest: int(pk) for digest, pk in cursor.fetchall()}


def _records_for_update(plans: list[_Plan]) -> dict[tuple[type[WebhookRecord], str], Any]:
    """The records of `plans`' keys, locked until the transaction ends (on PostgreSQL, in
    the order of their keys, the same in every run; SQLite's transaction holds the
    whole database). Not the ORM's `filter`, which compiled its SQL each time, at
    twice the cost of running it."""
    found: dict[tuple[type[WebhookRecord], str], Any] = {}
    lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
    for model in (Fine, Notification):
        keys = sorted({plan.event.key for plan in plans if plan.model is model and plan.event})
        if not keys:
            continue
        sql = _sql(model)
        names = [field.attname for field in model._meta.concrete_fields]
        tail = f"WHERE {sql.column('key')} IN ({_placeholders(keys)}) ORDER BY {sql.column('key')}"
        for record in sql.instances(names, f"{tail}{lock}", keys):
            found[model, record.key] = record
    return found


def _records_write(
    records: Mapping[tuple[type[WebhookRecord], str], WebhookRecord],
    changed: Mapping[tuple[type[WebhookRecord], int], set[str]],
) -> None:
    """Write the fields that changed, one statement per model and set of fields."""
    by_pk = {(type(record), record.pk): record for record in records.values()}
    groups: dict[tuple[type[WebhookRecord], tuple[str, ...]], list[WebhookRecord]] = {}
    for (model, pk), fields in changed.items():
        groups.setdefault((model, tuple(sorted(fields))), []).append(by_pk[model, pk])
    for (model, names), group in groups.items():
        _sql(model).update_rows(
            [(record.pk, {name: getattr(record, name) for name in names}) for record in group]
        )


def _placeholders(values: Sequence[Any]) -> str:
    return ", ".join(["%s"] * len(values))


def _record_new(event: webhooks.Event, delivery: WebhookDelivery) -> dict[str, Any]:
    now = timezone.now()
    values = {
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
    if event.kind == webhooks.FINE:
        values |= {"link_frame": event.link_frame or "", "link": event.link or ""}
    return values


def _record_update(
    record: WebhookRecord, event: webhooks.Event, delivery: WebhookDelivery
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
        if isinstance(record, Fine) and event.link is not None:
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


def _observation(event: webhooks.Event, delivery: WebhookDelivery) -> dict[str, Any]:
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


# --- Bookkeeping ---------------------------------------------------------------


class _Marks:
    """How processing went, for many deliveries: on their rows, in one statement, and
    on the `WebhookDelivery` objects."""

    def __init__(self) -> None:
        self.rows: list[tuple[WebhookDelivery, dict[str, Any]]] = []

    def add(self, delivery: WebhookDelivery, status: DeliveryStatus, **fields: Any) -> None:
        # Every column, always in this order: one statement serves every mark.
        values = {
            "status": status,
            "kind": "",
            "error": "",
            "processed_at": timezone.now(),
            "duplicate_of_id": None,
            "fine_id": None,
            "notification_id": None,
        } | fields
        self.rows.append((delivery, values))

    def write(self) -> None:
        if not self.rows:
            return
        _sql(WebhookDelivery).update_rows(
            [(delivery.pk, values) for delivery, values in self.rows], increment="attempts"
        )
        for delivery, values in self.rows:
            delivery.attempts += 1
            for name, value in values.items():
                setattr(delivery, name, value)
        self.rows = []


def _mark_kept(delivery: WebhookDelivery, status: DeliveryStatus, **fields: Any) -> None:
    """Mark a delivery kept for replay; if even that cannot be written (the database
    went away), it stays `received`, which the replay also picks up."""
    try:
        # A savepoint: inside a batch, a failed write must not end the batch's transaction.
        with _writer(), transaction.atomic():
            marks = _Marks()
            marks.add(delivery, status, **fields)
            marks.write()
    except DatabaseError:
        logger.exception(
            "webhook delivery %s stays received: its status cannot be written", delivery.pk
        )


class _SeenKeys:
    """Unknown keys this process has already recorded: most deliveries add none."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.paths: set[str] = set()

    def clear(self) -> None:
        with self.lock:
            self.paths.clear()


_seen_keys = _SeenKeys()


def _unknown_keys_record(found: Mapping[str, str], delivery: WebhookDelivery) -> None:
    """Remember when each unknown key was first seen (the admin's report)."""
    fresh = {path: sample for path, sample in found.items() if path not in _seen_keys.paths}
    if not fresh:
        return
    try:
        with transaction.atomic():  # a savepoint inside a batch's transaction
            UnknownWebhookKey.objects.bulk_create(
                [
                    UnknownWebhookKey(path=path[:200], first_delivery=delivery, sample=sample)
                    for path, sample in fresh.items()
                ],
                ignore_conflicts=True,  # the first one seen stays first
            )
    except Exception:  # a report, not the delivery: log it and go on
        logger.exception("could not record the unknown webhook keys of delivery %s", delivery.pk)
        return
    with _seen_keys.lock:
        _seen_keys.paths.update(fresh)


def _safe_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The request's headers without any that might hold a credential."""
    kept: dict[str, str] = {}
    for name, value in headers.items():
        if len(kept) >= _MAX_HEADERS:
            break
        if _header_kept(name):
            kept[name] = value[:_MAX_HEADER_LENGTH]
    return kept


@functools.lru_cache(maxsize=1024)  # a sender sends the same few names every time
def _header_kept(name: str) -> bool:
    lowered = name.lower()
    return not any(part in lowered for part in _SECRET_HEADER_PARTS)


# --- SQL of the receiver's path --------------------------------------------------


class _SqliteWriter:
    """The queue of SQLite writers: threads on a lock, processes on a file lock.

    SQLite has one writer; a connection that finds the database locked sleeps
    1, 2, 5, 10… up to 100 ms before it looks again, so under load deliveries
    waited far longer than the writes they waited for. Queued here, the next
    writer of any worker starts as soon as the last one is done. The file
    lock sits beside the database file; an in-memory database (tests) is one
    process's, so the thread lock is enough.
    """

    def __init__(self) -> None:
        # Reentrant: a batch holds it around its transaction, and each delivery's
        # processing inside it asks again. Only the holder touches `depth`.
        self.lock = threading.RLock()
        self.depth = 0
        self.files: dict[str, int] = {}

    @contextmanager
    def held(self) -> Iterator[None]:
        with self.lock:
            name = str(connection.settings_dict["NAME"])
            if self.depth or name.startswith("file:") or name == ":memory:":
                self.depth += 1
                try:
                    yield
                finally:
                    self.depth -= 1
                return
            if name not in self.files:
                self.files[name] = os.open(f"{name}.writer-lock", os.O_RDWR | os.O_CREAT, 0o600)
            descriptor = self.files[name]
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            self.depth = 1
            try:
                yield
            finally:
                self.depth = 0
                fcntl.flock(descriptor, fcntl.LOCK_UN)


_sqlite_writer = _SqliteWriter()


@contextmanager
def _writer() -> Iterator[None]:
    """Around each write of the receiver: on SQLite, wait in `_SqliteWriter`'s queue."""
    if connection.vendor != "sqlite":
        yield
        return
    with _sqlite_writer.held():
        yield


class _Waiting:
    """One delivery waiting in `_GroupCommit`: its statement, then its id or its error."""

    __slots__ = ("error", "pk", "statement", "written")

    def __init__(self, statement: _Statement) -> None:
        self.statement = statement
        self.pk: int | None = None
        self.error: BaseException | None = None
        self.written = False


class _GroupCommit:
    """The deliveries this process's threads store at the same moment, in one transaction.

    The first thread to arrive while no write is under way writes, on its own
    connection, every delivery waiting by then, commits once, and wakes the
    others; a thread that arrives during a write waits for the next one. Alone
    (a test, a quiet night), a thread writes its own delivery at once. A
    delivery is answered only once its commit has returned, so "stored" still
    means stored; if the transaction fails, every delivery in it gets the error
    (nothing of it was stored) and its sender is told to send it again.

    On SQLite only: PostgreSQL takes concurrent commits of many connections in
    one flush of its log, and there a thread that waited for another's
    connection to run everyone's statements one after the other answered later
    (bench.webhooks: 1.16x the deliveries a second without it).
    """

    def __init__(self) -> None:
        self.changed = threading.Condition()
        self.waiting: list[_Waiting] = []
        self.writing = False
        self.writes = 0  # transactions written, for tests and benchmarks

    def store(self, statement: _Statement) -> int:
        if connection.vendor != "sqlite":
            return statement.run()  # committed as it runs (autocommit)
        mine = _Waiting(statement)
        with self.changed:
            self.waiting.append(mine)
            while self.writing and not mine.written:
                self.changed.wait()
            if not mine.written:  # no write under way: this thread writes
                batch, self.waiting, self.writing = self.waiting, [], True
        if not mine.written:
            try:
                self._write(batch)
            finally:
                with self.changed:
                    self.writing = False
                    self.changed.notify_all()
        if mine.error is not None:
            raise mine.error
        assert mine.pk is not None
        return mine.pk

    def _write(self, batch: list[_Waiting]) -> None:
        self.writes += 1  # one writer at a time: `writing` is set
        try:
            with _writer():
                if len(batch) == 1:  # alone: one statement, committed as it runs
                    ids = [batch[0].statement.run()]
                else:
                    with transaction.atomic():
                        ids = [waiting.statement.run() for waiting in batch]
        except BaseException as error:
            for waiting in batch:
                waiting.error, waiting.written = error, True
            return
        for waiting, pk in zip(batch, ids, strict=True):
            waiting.pk, waiting.written = pk, True


_group_commit = _GroupCommit()


class _Sql:
    """Single statements on one model's table, values prepared by its fields.

    What `Model.objects.create()` and `.update()` send, without compiling a
    query each time: on the receiver's path that compiling cost more than the
    database did. Statements are built once per set of columns. Identifiers
    come from our own models, quoted by the connection; every value is a
    parameter.
    """

    def __init__(self, model: type[models.Model]) -> None:
        self.model = model
        self.table = connection.ops.quote_name(model._meta.db_table)
        self.pk = self.column(model._meta.pk.name) if model._meta.pk else "id"
        self._statements: dict[tuple[str, ...], tuple[str, list[_Column]]] = {}
        self._columns: dict[tuple[str, ...], list[_Column]] = {}
        self._read: dict[tuple[str, ...], list[tuple[int, Any, list[Callable[..., Any]]]]] = {}
        # Statements of many rows, by (kind, columns, rows, option): multi-row INSERTs
        # and PostgreSQL's UPDATE FROM VALUES.
        self._sized: dict[tuple[str, tuple[str, ...], int, str], str] = {}

    def column(self, name: str) -> str:
        column = self._field(name).column
        assert column is not None
        return connection.ops.quote_name(column)

    def insert_statement(self, values: Mapping[str, Any]) -> _Statement:
        """An INSERT of `values`, ready to run: it returns the new id."""
        sql, columns = self._statement(("insert", "", *values), self._insert_sql)
        return _Statement(sql, self._prepared(columns, values.values()))

    def row(self, values: Mapping[str, Any]) -> _Row:
        """`values` prepared for `insert_rows`; `values["key"]`, if any, names it."""
        names = tuple(values)
        params = self._prepared(self._columns_of(names), values.values())
        return _Row(names, params, str(values.get("key", "")))

    def insert_rows(
        self, rows: Sequence[_Row], *, unless_exists: str, returning: str
    ) -> list[tuple[Any, ...]]:
        """INSERT `rows` (made by `row()`, with the same columns) in one statement, but
        those whose `unless_exists` column holds a value already; for each row
        inserted, its id and its `returning` column."""
        found: list[tuple[Any, ...]] = []
        for start in range(0, len(rows), _ROWS_PER_STATEMENT):
            chunk = rows[start : start + _ROWS_PER_STATEMENT]
            names = chunk[0].names
            assert all(row.names == names for row in chunk)
            key = ("insert", names, len(chunk), f"{unless_exists} {returning}")
            if key not in self._sized:
                self._sized[key] = self._insert_rows_sql(
                    names, len(chunk), unless_exists, returning
                )
            sql = self._sized[key]
            with connection.cursor() as cursor:
                cursor.execute(sql, [value for row in chunk for value in row.params])
                found.extend(cursor.fetchall())
        return found

    def instances(self, names: Sequence[str], tail: str, params: Sequence[Any]) -> list[Any]:
        """Instances of the model, with the fields `names` loaded (the others deferred),
        from `SELECT <names> FROM <table> <tail>`: the rows converted as the ORM
        would (`from_db`), without compiling a query each time."""
        key = ("select", tail, *names)
        if key not in self._statements:
            selected = ", ".join(self.column(name) for name in names)
            sql = f"SELECT {selected} FROM {self.table} {tail}"  # noqa: S608
            self._statements[key] = (sql, self._columns_of(tuple(names)))
        sql, columns = self._statements[key]
        converters = self._converters(key, columns)
        alias = connection.alias
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            rows = cursor.fetchall()
        found = []
        for row in rows:
            values = list(row)
            for position, expression, functions in converters:
                for function in functions:
                    values[position] = function(values[position], expression, connection)
            found.append(self.model.from_db(alias, names, values))
        return found

    def _converters(
        self, key: tuple[str, ...], columns: list[_Column]
    ) -> list[tuple[int, Any, list[Callable[..., Any]]]]:
        # What the ORM's compiler applies to each column it reads (`get_converters`).
        if key not in self._read:
            found = []
            for position, column in enumerate(columns):
                expression = column.field.get_col(self.model._meta.db_table)
                functions = connection.ops.get_db_converters(
                    expression
                ) + expression.get_db_converters(connection)
                if functions:
                    found.append((position, expression, functions))
            self._read[key] = found
        return self._read[key]

    def update_rows(
        self, rows: Sequence[tuple[int, Mapping[str, Any]]], *, increment: str = ""
    ) -> None:
        """UPDATE many rows, each with the same columns (and `increment` one more).

        On SQLite, one statement run for each row (`executemany`, prepared once).
        PostgreSQL would parse and plan each of those again: there, a batch is
        one `UPDATE … FROM (VALUES …)`, `_ROWS_PER_STATEMENT` rows at a time.
        """
        names = tuple(rows[0][1])
        params = [
            [*self._prepared(self._columns_of(names), values.values()), pk] for pk, values in rows
        ]
        if connection.vendor != "postgresql":
            sql, _columns = self._statement(("update", increment, *names), self._update_sql)
            with connection.cursor() as cursor:
                cursor.executemany(sql, params)
            return
        for start in range(0, len(params), _ROWS_PER_STATEMENT):
            chunk = params[start : start + _ROWS_PER_STATEMENT]
            sql = self._update_from_values_sql(names, len(chunk), increment)
            with connection.cursor() as cursor:
                cursor.execute(sql, [value for row in chunk for value in row])

    def _update_from_values_sql(self, names: tuple[str, ...], count: int, increment: str) -> str:
        key = ("update", names, count, increment)
        if key not in self._sized:
            # The values arrive as literals of no declared type: each is cast to its column's.
            assignments = [
                f"{self.column(name)} = v.c{n}::{self._field(name).db_type(connection)}"
                for n, name in enumerate(names)
            ]
            if increment:
                column = self.column(increment)
                assignments.append(f"{column} = {self.table}.{column} + 1")
            row = f"({', '.join(['%s'] * (len(names) + 1))})"
            aliases = ", ".join([*(f"c{n}" for n in range(len(names))), "pk"])
            self._sized[key] = (
                f"UPDATE {self.table} SET {', '.join(assignments)} "  # noqa: S608
                f"FROM (VALUES {', '.join([row] * count)}) AS v({aliases}) "
                f"WHERE {self.table}.{self.pk} = v.pk::{self._pk_type()}"
            )
        return self._sized[key]

    def _statement(
        self, key: tuple[str, ...], build: Callable[[str, list[str]], str]
    ) -> tuple[str, list[_Column]]:
        """The SQL of `key` ((kind, option, *column names)), built once, and its columns."""
        if key not in self._statements:
            names = key[2:]
            self._statements[key] = (build(key[1], list(names)), self._columns_of(names))
        return self._statements[key]

    def _columns_of(self, names: tuple[str, ...]) -> list[_Column]:
        """The columns of `names`, with how their values are prepared (built once)."""
        if names not in self._columns:
            self._columns[names] = [
                _Column(field, isinstance(field, _ADAPTED), _sqlite_adapter(field))
                for field in (self._field(name) for name in names)
            ]
        return self._columns[names]

    def _insert_sql(self, _option: str, names: list[str]) -> str:
        columns = ", ".join(self.column(name) for name in names)
        placeholders = ", ".join(["%s"] * len(names))
        # SQLite tells the new id without RETURNING (`_Statement.run`), and a RETURNING
        # costs a second step: on the receiver's path, in the write lock, a second
        # wait for the interpreter's lock, which the other threads hold meanwhile.
        returning = "" if connection.vendor == "sqlite" else f" RETURNING {self.pk}"
        return f"INSERT INTO {self.table} ({columns}) VALUES ({placeholders}){returning}"  # noqa: S608

    def _insert_rows_sql(
        self, names: tuple[str, ...], count: int, unless_exists: str, returning: str
    ) -> str:
        columns = ", ".join(self.column(name) for name in names)
        row = f"({', '.join(['%s'] * len(names))})"
        return (
            f"INSERT INTO {self.table} ({columns}) VALUES {', '.join([row] * count)}"  # noqa: S608
            f" ON CONFLICT ({self.column(unless_exists)}) DO NOTHING"
            f" RETURNING {self.pk}, {self.column(returning)}"
        )

    def _update_sql(self, increment: str, names: list[str]) -> str:
        assignments = [f"{self.column(name)} = %s" for name in names]
        if increment:
            assignments.append(f"{self.column(increment)} = {self.column(increment)} + 1")
        return f"UPDATE {self.table} SET {', '.join(assignments)} WHERE {self.pk} = %s"  # noqa: S608

    def _pk_type(self) -> str:
        pk = self.model._meta.pk
        assert pk is not None
        return str(pk.db_type(connection))

    def _field(self, name: str) -> models.Field[Any, Any]:
        field = self.model._meta.get_field(name)
        assert isinstance(field, models.Field)
        return field

    @staticmethod
    def _prepared(columns: list[_Column], values: Iterable[Any]) -> list[Any]:
        # A string, number or None goes to the database as it is, except into the fields
        # that encode or adapt them (JSON, dates, addresses): as `get_db_prep_save`
        # would, without its cost for most of the values.
        return [
            value
            if type(value) in _AS_IS and not column.adapted
            else column.adapt(value)
            if column.adapt is not None
            else column.field.get_db_prep_save(value, connection)
            for column, value in zip(columns, values, strict=True)
        ]


# Rows in one statement (INSERT, UPDATE FROM VALUES): well under the parameters a
# statement may carry.
_ROWS_PER_STATEMENT = 64


class _Row(NamedTuple):
    """One row to insert, its values prepared ahead (`_Sql.row`)."""

    names: tuple[str, ...]
    params: list[Any]
    key: str


class _Column(NamedTuple):
    field: models.Field[Any, Any]
    adapted: bool  # its values must go through `get_db_prep_save`
    adapt: Callable[[Any], Any] | None = None  # the same, quicker (`_sqlite_adapter`)


def _sqlite_adapter(field: models.Field[Any, Any]) -> Callable[[Any], Any] | None:
    """What `get_db_prep_save` makes of a value on SQLite, for the two kinds of field that
    cost most there (a third of processing a delivery): None for any other.

    A time: the text of the naive UTC time (with `USE_TZ`, the connection in UTC). A
    JSON value: its text, by orjson; a value orjson refuses, by Django's encoder.
    """
    if connection.vendor != "sqlite":
        return None
    if type(field) is models.DateTimeField and settings.USE_TZ and connection.timezone == UTC:

        def moment(value: Any) -> Any:
            if isinstance(value, datetime) and value.tzinfo is not None:
                return str(value.astimezone(UTC).replace(tzinfo=None))
            return field.get_db_prep_save(value, connection)

        return moment
    if type(field) is models.JSONField and field.encoder is None:

        def document(value: Any) -> Any:
            if value is None:
                return field.get_db_prep_save(value, connection)
            try:
                return orjson.dumps(value).decode()
            except TypeError:  # orjson.JSONEncodeError: a type or a number it does not write
                return field.get_db_prep_save(value, connection)

        return document
    return None


_AS_IS = frozenset({str, int, bool, type(None)})
_ADAPTED = (
    models.JSONField,
    models.DateField,  # DateTimeField too
    models.TimeField,
    models.DecimalField,
    models.GenericIPAddressField,
    models.UUIDField,
    models.BinaryField,
    models.DurationField,
)


@dataclass(frozen=True, slots=True)
class _Statement:
    sql: str
    params: list[Any]

    def run(self) -> int:
        """Execute; the id of the row it inserted."""
        if (
            connection.vendor == "postgresql"
            and not connection.in_atomic_block
            # With DEBUG (or a test capturing queries), through Django's cursor, which
            # logs it (`django.db.backends`, connection.queries) like every other.
            and not connection.queries_logged
        ):
            return self._run_as_health_check()
        return self._run_on_cursor()

    def _run_on_cursor(self) -> int:
        with connection.cursor() as cursor:
            cursor.execute(self.sql, self.params)
            if cursor.description is None:  # SQLite: no RETURNING (`_insert_sql`)
                return int(cursor.lastrowid)
            row = cursor.fetchone()
        return int(row[0])

    def _run_as_health_check(self) -> int:
        """The receiver's INSERT on PostgreSQL, its own connection check.

        With CONN_HEALTH_CHECKS, Django sends `SELECT 1` before a request's first
        statement through its cursors: for a delivery, a round trip and about a
        fifth of the portal's CPU (in one process, 0.52 to 0.61 ms a delivery
        without it, 0.69 to 0.73 ms with it). On the connection's own cursor, the
        INSERT is the check instead: if it finds the connection dead, the
        connection is closed and the INSERT sent once more on a new one. At worst
        a delivery stored just before the connection died is stored twice, and its
        second copy is processed as a duplicate.
        """
        try:
            return self._run_on_connection()
        except (OperationalError, InterfaceError):
            if connection.is_usable():
                raise  # the connection works: the INSERT itself failed
            connection.close()
            return self._run_on_connection()

    def _run_on_connection(self) -> int:
        # Not through Django's cursor, which runs the health check first.
        connection.ensure_connection()
        with connection.wrap_database_errors, connection.connection.cursor() as cursor:
            cursor.execute(self.sql, self.params)
            row = cursor.fetchone()
        return int(row[0])


_sqls: dict[tuple[str, type[models.Model]], _Sql] = {}


def _sql(model: type[models.Model]) -> _Sql:
    # Per database vendor: tests switch between SQLite and PostgreSQL only across runs,
    # but quoting belongs to the connection.
    key = (connection.vendor, model)
    if key not in _sqls:
        _sqls[key] = _Sql(model)
    return _sqls[key]


def _execute(sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
    """Run one statement; its first row, if it returns any."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone() if cursor.description else None
