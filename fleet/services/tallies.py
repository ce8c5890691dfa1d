"""The dashboard's running sums of fines (`FineTally`), kept in the transaction that
writes the fines they count.

A fine counts in a few tallies (`fine_contributions`: untreated in total, by vehicle
and by driver; by month committed; by day received; without its document). Whatever
writes fines reads each one it changes as committed (under its row lock; SQLite has
one writer at a time) and calls `fine_tallies_apply` in the same transaction with its
state before and after: the before is taken away and the after added by UPDATEs that
add to the rows (`F()`), so that writers at once add up instead of overwriting each
other, and a write undone undoes its sums. Processing (`fleet.webhooks.processing`)
and the attribution of drivers (`fleet.services.attribution`) are those writers; the
admin cannot change or delete a fine.

Each such transaction first adds one to the version row: the dashboard keys its cached
figures by it; and its lock, taken first, puts the writers' tally updates in one order
(no deadlock). `fine_tallies_rebuild` recomputes every tally from scratch (after a bulk
load, or if `fine_tallies_differences` finds one off) without making them wait: it
counts in a snapshot and adds each tally's correction, as they add their changes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any, Final

from django.db import IntegrityError, transaction
from django.db.models import Count, QuerySet, Sum
from django.db.models.expressions import F
from django.db.models.functions import TruncDate, TruncMonth
from django.utils import timezone

from fleet.models import Fine, FineTally, TallyDimension

# (dimension, key): a tally's row.
TallyKey = tuple[str, str]
# What the tallies read of a fine (`FineState.of`).
FINE_FIELDS: Final = (
    "treated",
    "amount",
    "registration",
    "driver_id",
    "occurred_at",
    "received_at",
    "link_frame",
)
_CREATE_ATTEMPTS: Final = 3
# Tallies a rebuild corrects in one transaction.
REBUILD_CHUNK: Final = 500


@dataclass(frozen=True, slots=True)
class FineState:
    """A fine as the tallies count it."""

    treated: bool
    amount: Decimal | None
    registration: str
    driver_id: int | None
    occurred_at: datetime | None
    received_at: datetime
    has_document: bool

    @classmethod
    def of(cls, fine: Fine) -> FineState:
        return cls(
            treated=fine.treated,
            amount=fine.amount,
            registration=fine.registration,
            driver_id=fine.driver_id,
            occurred_at=fine.occurred_at,
            received_at=fine.received_at,
            has_document=bool(fine.link_frame),
        )


def fine_contributions(state: FineState) -> list[tuple[str, str, int, int]]:
    """What one fine adds to the tallies: (dimension, key, count, cents) for each it counts in.

    As the dashboard shows them: all fines by day received and by month committed (if
    that time could be read), those without their document, and the untreated ones in
    total, by vehicle (if the fine names one) and by driver (if it has one). An amount
    that could not be read counts as 0.
    """
    cents = tally_cents(state.amount)
    found = [(TallyDimension.DAY, day_key(_local(state.received_at)), 1, cents)]
    if state.occurred_at is not None:
        found.append((TallyDimension.MONTH, month_key(_local(state.occurred_at)), 1, cents))
    if not state.has_document:
        found.append((TallyDimension.WITHOUT_DOCUMENT, "", 1, cents))
    if not state.treated:
        found.append((TallyDimension.UNTREATED, "", 1, cents))
        if state.registration:
            found.append((TallyDimension.VEHICLE, state.registration, 1, cents))
        if state.driver_id is not None:
            found.append((TallyDimension.DRIVER, driver_key(state.driver_id), 1, cents))
    return [(str(dimension), key, count, amount) for dimension, key, count, amount in found]


def fine_tallies_apply(changes: Iterable[tuple[FineState | None, FineState | None]]) -> bool:
    """Count fines' changes, each as (before, after); None for a fine that did not exist
    (or no longer does). In the caller's transaction (one of its own outside any), which
    must have read each `before` under the fine's lock. Whether any tally changed."""
    deltas: dict[TallyKey, tuple[int, int]] = {}
    for before, after in changes:
        for state, sign in ((before, -1), (after, 1)):
            if state is None:
                continue
            for dimension, key, count, cents in fine_contributions(state):
                had_count, had_cents = deltas.get((dimension, key), (0, 0))
                deltas[dimension, key] = (had_count + sign * count, had_cents + sign * cents)
    changed = sorted((tally, delta) for tally, delta in deltas.items() if delta != (0, 0))
    if not changed:
        return False
    with transaction.atomic(savepoint=False):
        _add((TallyDimension.VERSION, ""), (1, 0))  # first: see the module's docstring
        for tally, delta in changed:
            _add(tally, delta)
    return True


def fine_tallies_version() -> int:
    """How many times the tallies changed: the version of the figures they make."""
    found = FineTally.objects.filter(dimension=TallyDimension.VERSION, key="").values_list(
        "count", flat=True
    )
    return next(iter(found), 0)


def fine_tallies_counted(fines: QuerySet[Fine] | None = None) -> dict[TallyKey, tuple[int, int]]:
    """Every tally as the fines (`fines`, or all) sum up now, from scratch (those that
    count some fine)."""
    zone = timezone.get_default_timezone()
    fines = (Fine.objects.all() if fines is None else fines).order_by()
    untreated = fines.filter(treated=False)
    sums: dict[str, Any] = {"count": Count("pk"), "amount": Sum("amount")}
    groups: list[tuple[str, QuerySet[Any, Any], Any]] = [
        (TallyDimension.UNTREATED, untreated, None),
        (TallyDimension.WITHOUT_DOCUMENT, fines.filter(link_frame=""), None),
        (
            TallyDimension.VEHICLE,
            untreated.exclude(registration="").values_list("registration"),
            str,
        ),
        (
            TallyDimension.DRIVER,
            untreated.filter(driver_id__isnull=False).values_list("driver_id"),
            driver_key,
        ),
        (
            TallyDimension.MONTH,
            fines.filter(occurred_at__isnull=False)
            .annotate(month=TruncMonth("occurred_at", tzinfo=zone))
            .values_list("month"),
            month_key,
        ),
        (
            TallyDimension.DAY,
            fines.annotate(day=TruncDate("received_at", tzinfo=zone)).values_list("day"),
            day_key,
        ),
    ]
    counted: dict[TallyKey, tuple[int, int]] = {}
    for dimension, grouped, key_of in groups:
        if key_of is None:  # a total
            found = grouped.aggregate(**sums)
            rows = [("", found["count"], found["amount"])]
        else:
            rows = [(key_of(key), count, amount) for key, count, amount in grouped.annotate(**sums)]
        for key, count, amount in rows:
            if count:
                counted[str(dimension), key] = (count, tally_cents(amount))
    return counted


def fine_tallies_rebuild() -> int:
    """Recompute every tally from the fines, without making writers wait: the sums are
    counted in one snapshot of the database, beside the tallies as they were in it;
    then what each tally was off by is added to it (`_add`), a chunk of tallies to a
    short transaction. Writers meanwhile added their own changes to the same rows,
    which stay: each tally ends as the fines sum up to. How many tallies count some
    fine."""
    stored, counted = _snapshot_read()
    corrections = [
        (key, (found[0] - had[0], found[1] - had[1]))
        for key in sorted(stored.keys() | counted.keys())
        if (found := counted.get(key, (0, 0))) != (had := stored.get(key, (0, 0)))
    ]
    for start in range(0, len(corrections), REBUILD_CHUNK):
        with transaction.atomic():
            _add((TallyDimension.VERSION, ""), (1, 0))  # first: see the module's docstring
            for key, delta in corrections[start : start + REBUILD_CHUNK]:
                _add(key, delta)
    return len(counted)


def fine_tallies_differences() -> dict[TallyKey, tuple[tuple[int, int], tuple[int, int]]]:
    """The tallies that are not what the fines sum up to: (count, cents) stored and
    counted from scratch, for each; read in one snapshot, writers never wait for it."""
    stored, counted = _snapshot_read()
    return {
        key: (stored.get(key, (0, 0)), counted.get(key, (0, 0)))
        for key in sorted(stored.keys() | counted.keys())
        if stored.get(key) != counted.get(key)
    }


def _snapshot_read() -> tuple[dict[TallyKey, tuple[int, int]], dict[TallyKey, tuple[int, int]]]:
    """The tallies stored and as the fines sum up, both read in one snapshot of the
    database (`_snapshot`)."""
    with _snapshot():
        stored = {
            (tally.dimension, tally.key): (tally.count, tally.cents)
            for tally in FineTally.objects.exclude(dimension=TallyDimension.VERSION)
            if tally.count or tally.cents
        }
        return stored, fine_tallies_counted()


@contextmanager
def _snapshot() -> Iterator[None]:
    """A transaction whose reads all see the database as it was at its first, holding no
    lock that a writer waits for: SQLite's deferred transaction (the portal's are
    IMMEDIATE, which take the write lock: `settings.DATABASES`), whose reads in WAL
    mode keep their snapshot; PostgreSQL's REPEATABLE READ, READ ONLY. Inside a transaction
    already, that one."""
    connection = transaction.get_connection()
    if connection.in_atomic_block:  # the caller's transaction, as it is (a test's)
        with transaction.atomic():
            yield
        return
    if connection.vendor != "sqlite":
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            yield
        return
    connection.ensure_connection()  # connecting sets the mode from the settings
    mode = connection.transaction_mode
    connection.transaction_mode = "DEFERRED"
    try:
        with transaction.atomic():
            yield
    finally:
        connection.transaction_mode = mode


def tally_cents(amount: Decimal | None) -> int:
    """R$ in whole cents; an unknown amount is 0."""
    return 0 if amount is None else int(amount.scaleb(2).to_integral_value())


def tally_amount(cents: int) -> Decimal:
    """Whole cents in R$, with its two decimals."""
    return Decimal(cents).scaleb(-2)


def month_key(day: date) -> str:
    return f"{day.year:04d}-{day.month:02d}"


def day_key(day: date) -> str:
    return f"{day.year:04d}-{day.month:02d}-{day.day:02d}"


def driver_key(driver_id: int) -> str:
    return f"{driver_id:020d}"


def _local(moment: datetime) -> date:
    """The day of `moment` in the portal's time zone (TIME_ZONE)."""
    return timezone.localtime(moment, timezone.get_default_timezone()).date()


def _add(key: TallyKey, delta: tuple[int, int]) -> None:
    """Add `delta` (count, cents) to the tally `key`, created if it is not there yet."""
    (dimension, name), (count, cents) = key, delta
    rows = FineTally.objects.filter(dimension=dimension, key=name)
    for _attempt in range(_CREATE_ATTEMPTS):
        if rows.update(count=F("count") + count, cents=F("cents") + cents):
            return
        try:
            with transaction.atomic():  # a savepoint: a clash undoes this INSERT alone
                FineTally.objects.create(dimension=dimension, key=name, count=count, cents=cents)
        except IntegrityError:  # another writer created it since: add to theirs
            continue
        return
    raise RuntimeError(f"the tally {key} could neither be added to nor created")
