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

Each vehicle group has the same tallies of its vehicles' fines (`GroupTally`), written
in the same transactions: a region's dashboard reads a few rows, not its millions of
fines. The groups that hold a fine's vehicle are read under the version's lock, which
a change of a group's plates also takes (`fleet.services.scopes.vehicle_groups_changed`):
a writer adds to the groups as they are before that change commits, or after it. Such a
change makes the group's tallies wrong for its new plates: they are counted again from
the fines by the worker (`group_tallies_catch_up`, in a snapshot, as a rebuild), and
read only once they are of the group's revision (`group_tallies_current`).

It is one module because the fleet's and the groups' tallies are written in the same
transactions, under one lock taken first and one version, and counted again the same
way: apart, each half would have to keep the other's lock order and snapshot.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime, timedelta, tzinfo
from decimal import Decimal
from typing import Any, Final

from django.db import IntegrityError, connection, transaction
from django.db.models import CharField, Count, Func, Q, QuerySet, Sum, Value
from django.db.models.expressions import F
from django.db.models.functions import Substr
from django.utils import timezone

from fleet.models import (
    DriverBasis,
    Fine,
    FineTally,
    GroupTally,
    Indication,
    TallyDimension,
    VehicleGroup,
    VehicleGroupPlate,
)

# (dimension, key): a tally's row.
TallyKey = tuple[str, str]
# Where a change adds (a plate, or "" for the whole fleet; a group), its dimension and key.
type _Deltas[P] = dict[tuple[P, str, str], tuple[int, int]]
# What the tallies read of a fine (`FineState.of`).
FINE_FIELDS: Final = (
    "treated",
    "amount",
    "registration",
    "driver_id",
    "driver_basis",
    "occurred_at",
    "received_at",
    "link_frame",
    "indication",
    "indication_due",
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
    # The day by which its driver is (or was: missed) to be indicated; None when no
    # indication is needed or one was made.
    to_indicate_by: date | None = None
    # How its driver is known (`DriverBasis`' value): only a driver the history or a
    # person established counts by driver; a guess counts apart, by how.
    driver_basis: str = DriverBasis.HISTORY

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
            to_indicate_by=(fine.indication_due if fine.indication == Indication.NEEDED else None),
            driver_basis=fine.driver_basis,
        )


# The fines whose driver is a guess: the vehicle list's driver (one it names), or two
# candidates. A fine whose vehicle had no driver in the list names nobody: not a guess.
GUESSED_FINES: Final = Q(driver_basis=DriverBasis.LIST, driver_id__isnull=False) | Q(
    driver_basis=DriverBasis.UNCERTAIN
)


def guess_of(basis: str, driver_id: int | None) -> str:
    """How a fine's driver is guessed (`DriverBasis.LIST` or `UNCERTAIN`'s value, as the
    GUESSED tallies key it), or "" where it is not a guess (`GUESSED_FINES`)."""
    if basis == DriverBasis.UNCERTAIN or (basis == DriverBasis.LIST and driver_id is not None):
        return str(basis)
    return ""


def fine_contributions(state: FineState) -> list[tuple[str, str, int, int]]:
    """What one fine adds to the tallies: (dimension, key, count, cents) for each it counts in.

    As the dashboard shows them: all fines by day received and by month committed (if
    that time could be read), those without their document, and the untreated ones in
    total, by vehicle (if the fine names one) and by driver (if the history or a person
    established one; a guess, the vehicle list's driver or two candidates, by how
    instead). An amount that could not be read counts as 0.
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
        if guessed := guess_of(state.driver_basis, state.driver_id):
            found.append((TallyDimension.GUESSED, guessed, 1, cents))
        elif state.driver_id is not None:
            found.append((TallyDimension.DRIVER, driver_key(state.driver_id), 1, cents))
        if state.to_indicate_by is not None:
            found.append((TallyDimension.TO_INDICATE, day_key(state.to_indicate_by), 1, cents))
    return [(str(dimension), key, count, amount) for dimension, key, count, amount in found]


def fine_tallies_apply(changes: Iterable[tuple[FineState | None, FineState | None]]) -> bool:
    """Count fines' changes, each as (before, after); None for a fine that did not exist
    (or no longer does): in the whole fleet's tallies and in those of the groups that
    hold each fine's vehicle. In the caller's transaction (one of its own outside any),
    which must have read each `before` under the fine's lock. Whether any tally changed."""
    changes = list(changes)
    fleet = _deltas(changes, lambda state: "")
    by_plate = {
        where: delta
        for where, delta in _deltas(changes, lambda state: state.registration).items()
        if where[0]
    }
    if not fleet and not by_plate:
        if any(before != after for before, after in changes):
            # A change the lists select by that no tally counts (a driver confirmed by
            # hand: had the vehicle → set by a person): the version moves all the same,
            # as the lists' counts by how a driver is known are kept under it.
            fine_tallies_touch()
        return False
    with transaction.atomic(savepoint=False):
        _add((TallyDimension.VERSION, ""), (1, 0))  # first: see the module's docstring
        for (_fleet, dimension, key), delta in sorted(fleet.items()):
            _add((dimension, key), delta)
        for (group, dimension, key), delta in sorted(_by_group(by_plate).items()):
            _add((dimension, key), delta, group=group)
    return True


def _deltas[P](
    changes: list[tuple[FineState | None, FineState | None]], where: Callable[[FineState], P]
) -> _Deltas[P]:
    """What `changes` add to each tally, by `where` each fine counts (none that add 0)."""
    deltas: _Deltas[P] = {}
    for before, after in changes:
        for state, sign in ((before, -1), (after, 1)):
            if state is None:
                continue
            part = where(state)
            for dimension, key, count, cents in fine_contributions(state):
                had_count, had_cents = deltas.get((part, dimension, key), (0, 0))
                deltas[part, dimension, key] = (had_count + sign * count, had_cents + sign * cents)
    return {tally: delta for tally, delta in deltas.items() if delta != (0, 0)}


def _by_group(by_plate: _Deltas[str]) -> _Deltas[int]:
    """What is added by plate, added to each group that holds the plate (one query)."""
    groups: dict[str, list[int]] = {}
    held = VehicleGroupPlate.objects.filter(registration__in={plate for plate, _, _ in by_plate})
    for registration, group in held.values_list("registration", "group_id"):
        groups.setdefault(registration, []).append(group)
    summed: _Deltas[int] = {}
    for (plate, dimension, key), (count, cents) in by_plate.items():
        for group in groups.get(plate, ()):
            had_count, had_cents = summed.get((group, dimension, key), (0, 0))
            summed[group, dimension, key] = (had_count + count, had_cents + cents)
    return {tally: delta for tally, delta in summed.items() if delta != (0, 0)}


# The key of the version row that counts only the changes of untreated notifications.
NOTIFICATIONS: Final = "notifications"


def fine_tallies_touch(*, notifications: bool = False) -> None:
    """A change the dashboard's figures show that no tally counts: one more version, in
    the caller's transaction, as a tally's change would make. `notifications`: a
    notification received or treated (a part of the fleet's figures count its untreated
    ones, kept under their own version too, `fine_tallies_version(NOTIFICATIONS)`)."""
    with transaction.atomic(savepoint=False):
        _add((TallyDimension.VERSION, ""), (1, 0))  # first: see the module's docstring
        if notifications:
            _add((TallyDimension.VERSION, NOTIFICATIONS), (1, 0))


def fine_tallies_version(key: str = "") -> int:
    """How many times the tallies changed: the version of the figures they make (with
    `NOTIFICATIONS`, how many times the untreated notifications did)."""
    found = FineTally.objects.filter(dimension=TallyDimension.VERSION, key=key).values_list(
        "count", flat=True
    )
    return next(iter(found), 0)


def fine_tallies_counted(
    fines: QuerySet[Fine] | None = None, *, dimensions: frozenset[str] | None = None
) -> dict[TallyKey, tuple[int, int]]:
    """Every tally (of `dimensions`, or all) as the fines (`fines`, or all) sum up now,
    from scratch (those that count some fine)."""
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
            untreated.filter(driver_id__isnull=False)
            .exclude(driver_basis=DriverBasis.LIST)
            .values_list("driver_id"),
            driver_key,
        ),
        (
            TallyDimension.GUESSED,
            untreated.filter(GUESSED_FINES).values_list("driver_basis"),
            str,
        ),
        (
            TallyDimension.TO_INDICATE,
            untreated.filter(
                indication=Indication.NEEDED, indication_due__isnull=False
            ).values_list("indication_due"),
            day_key,
        ),
    ]
    counted: dict[TallyKey, tuple[int, int]] = {}
    for dimension, grouped, key_of in groups:
        if dimensions is not None and dimension not in dimensions:
            continue
        if key_of is None:  # a total
            found = grouped.aggregate(**sums)
            rows = [("", found["count"], found["amount"])]
        else:
            rows = [(key_of(key), count, amount) for key, count, amount in grouped.annotate(**sums)]
        for key, count, amount in rows:
            if count:
                counted[str(dimension), key] = (count, tally_cents(amount))
    for dimension, field, local_key in (
        (TallyDimension.MONTH, "occurred_at", lambda moment: month_key(moment.date())),
        (TallyDimension.DAY, "received_at", lambda moment: day_key(moment.date())),
    ):
        if dimensions is not None and dimension not in dimensions:
            continue
        for key, (count, cents) in _by_local_time(fines, field, local_key, zone).items():
            counted[str(dimension), key] = (count, cents)
    return counted


def _by_local_time(
    fines: QuerySet[Fine], field: str, local_key: Any, zone: tzinfo
) -> dict[str, tuple[int, int]]:
    """The count and cents of `fines` by the local day or month (`local_key` of a local
    moment) of `field`, those without it left out.

    Grouped by the hour in UTC, as stored, which the database does on its own (SQLite
    would call Python for each of ten million fines to put them in their time zone),
    then each hour put in the local day or month it falls in: all of an hour falls in
    one where the zone's offset is whole hours, as Brazil's are; an hour that falls in
    two (offsets of half an hour, or at a change of offset) is grouped again by the
    minute, the few fines in it."""
    sums: dict[str, Any] = {"count": Count("pk"), "amount": Sum("amount")}
    counted: dict[str, tuple[int, int]] = {}

    def add(key: str, count: int, amount: Decimal | None) -> None:
        had = counted.get(key, (0, 0))
        counted[key] = (had[0] + count, had[1] + tally_cents(amount))

    def grouped(records: QuerySet[Fine], length: int) -> Any:
        return (
            records.filter(**{f"{field}__isnull": False})
            .annotate(moment=_utc_text(field, length))
            .values_list("moment")
            .annotate(**sums)
        )

    for hour, count, amount in grouped(fines, len("2026-11-27 18")):
        start = _utc(hour)
        first, last = (
            local_key(timezone.localtime(moment, zone))
            for moment in (start, start + timedelta(hours=1, microseconds=-1))
        )
        if first == last:
            add(first, count, amount)
            continue
        within = fines.filter(
            **{f"{field}__gte": start, f"{field}__lt": start + timedelta(hours=1)}
        )
        for minute, minute_count, minute_amount in grouped(within, len("2026-11-27 18:05")):
            add(local_key(timezone.localtime(_utc(minute), zone)), minute_count, minute_amount)
    return counted


def _utc_text(field: str, length: int) -> Any:
    """The moment in `field` as text in UTC to its first `length` characters: SQLite
    keeps it as that text ("2026-11-27 18:05:59.123456"); PostgreSQL writes it so
    under the connection's time zone, UTC."""
    if connection.vendor == "sqlite":
        return Substr(field, 1, length, output_field=CharField())
    return Func(F(field), Value(_PG_FORMATS[length]), function="to_char", output_field=CharField())


# PostgreSQL's formats of the text `_utc_text` cuts to its first 13 or 16 characters.
_PG_FORMATS: Final = {13: "YYYY-MM-DD HH24", 16: "YYYY-MM-DD HH24:MI"}


def _utc(text: str) -> datetime:
    """The moment an hour's or a minute's text in UTC begins."""
    hour, _, minute = text.partition(":")
    return datetime.fromisoformat(f"{hour}:{minute or '00'}:00+00:00")


def fine_tallies_rebuild() -> int:
    """Recompute every tally from the fines, without making writers wait: the sums are
    counted in one snapshot of the database, beside the tallies as they were in it;
    then what each tally was off by is added to it (`_add`), a chunk of tallies to a
    short transaction. Writers meanwhile added their own changes to the same rows,
    which stay: each tally ends as the fines sum up to. Then each group's, the same way
    (`group_tallies_count`). How many of the fleet's tallies count some fine."""
    stored, counted = _snapshot_read()
    _corrections_add(stored, counted)
    group_tallies_catch_up(every=True)
    return len(counted)


def group_tallies_catch_up(*, every: bool = False) -> int:
    """Count again the tallies of each group whose plates changed since they were counted
    (of every group with `every`), one group at a time, each as a rebuild is made: what
    the worker runs after a group's plates changed. How many groups were counted."""
    groups = VehicleGroup.objects.order_by("pk")
    if not every:
        groups = groups.filter(_not_current())
    return sum(group_tallies_count(pk) for pk in groups.values_list("pk", flat=True))


def group_tallies_count(group_id: int) -> bool:
    """Count a group's tallies from its vehicles' fines, in one snapshot with the group's
    revision and its tallies as they were, and add what each was off by; then mark them
    of that revision (unless it changed meanwhile: then they are counted again, as the
    change asked). Whether the group was there."""
    read = _group_snapshot_read(group_id)
    if read is None:
        return False
    revision, stored, counted = read
    _corrections_add(stored, counted, group=group_id)
    with transaction.atomic():
        _add((TallyDimension.VERSION, ""), (1, 0))  # its figures are read from them now
        VehicleGroup.objects.filter(pk=group_id, revision=revision).update(
            tallied_revision=revision
        )
    return True


def group_tallies_differences() -> dict[tuple[int, str, str], tuple[tuple[int, int], ...]]:
    """The tallies of the groups whose tallies are read (of their plates as they are) that
    are not what their fines sum up to: (group, dimension, key): (count, cents) stored
    and counted; each group read in one snapshot."""
    found: dict[tuple[int, str, str], tuple[tuple[int, int], ...]] = {}
    current = VehicleGroup.objects.exclude(_not_current()).order_by("pk")
    for group_id in current.values_list("pk", flat=True):
        read = _group_snapshot_read(group_id)
        if read is None:
            continue
        _revision, stored, counted = read
        for dimension, key in sorted(stored.keys() | counted.keys()):
            if stored.get((dimension, key)) != counted.get((dimension, key)):
                found[group_id, dimension, key] = (
                    stored.get((dimension, key), (0, 0)),
                    counted.get((dimension, key), (0, 0)),
                )
    return found


def _group_snapshot_read(
    group_id: int,
) -> tuple[int, dict[TallyKey, tuple[int, int]], dict[TallyKey, tuple[int, int]]] | None:
    """A group's revision, its tallies stored and as its vehicles' fines sum up, read in
    one snapshot (`_snapshot`); None if there is no such group."""
    with _snapshot():
        revision = (
            VehicleGroup.objects.filter(pk=group_id).values_list("revision", flat=True).first()
        )
        if revision is None:
            return None
        stored = {
            (dimension, key): (count, cents)
            for dimension, key, count, cents in GroupTally.objects.filter(
                group_id=group_id
            ).values_list("dimension", "key", "count", "cents")
            if count or cents
        }
        plates = VehicleGroupPlate.objects.filter(group_id=group_id).values("registration")
        counted = fine_tallies_counted(
            Fine.objects.exclude(registration="").filter(registration__in=plates)
        )
    return revision, stored, counted


def group_tallies_current(group_id: int) -> bool:
    """Whether a group's tallies count its fines as its plates are now."""
    return not VehicleGroup.objects.filter(_not_current(), pk=group_id).exists()


def _not_current() -> Q:
    return Q(tallied_revision__isnull=True) | ~Q(tallied_revision=F("revision"))


def _corrections_add(
    stored: dict[TallyKey, tuple[int, int]],
    counted: dict[TallyKey, tuple[int, int]],
    *,
    group: int | None = None,
) -> None:
    """Add to each tally (of `group`, or the whole fleet's) what `stored` was off by from
    `counted`, a chunk of tallies to a transaction."""
    corrections = [
        (key, (found[0] - had[0], found[1] - had[1]))
        for key in sorted(stored.keys() | counted.keys())
        if (found := counted.get(key, (0, 0))) != (had := stored.get(key, (0, 0)))
    ]
    for start in range(0, len(corrections), REBUILD_CHUNK):
        with transaction.atomic():
            _add((TallyDimension.VERSION, ""), (1, 0))  # first: see the module's docstring
            _correct(dict(corrections[start : start + REBUILD_CHUNK]), group=group)


def _correct(corrections: dict[TallyKey, tuple[int, int]], *, group: int | None = None) -> None:
    """Add each correction to its tally (of `group`, or the whole fleet's): the tallies
    there are, one UPDATE each; those not there yet (all of them after a bulk load: a
    million vehicles' own), created in one INSERT, unless a writer created one of them
    meanwhile (then each is added to or created on its own, `_add`)."""
    existing: set[TallyKey] = set()
    for dimension in {dimension for dimension, _key in corrections}:
        keys = [key for tally_dimension, key in corrections if tally_dimension == dimension]
        existing.update(
            _tallies(group)
            .filter(dimension=dimension, key__in=keys)
            .values_list("dimension", "key")
        )
    for key in existing:
        _add(key, corrections[key], group=group)
    new = {key: delta for key, delta in corrections.items() if key not in existing}
    try:
        with transaction.atomic():  # a savepoint: a clash undoes these INSERTs alone
            if group is None:
                FineTally.objects.bulk_create(
                    FineTally(dimension=dimension, key=name, count=count, cents=cents)
                    for (dimension, name), (count, cents) in new.items()
                )
            else:
                GroupTally.objects.bulk_create(
                    GroupTally(
                        group_id=group, dimension=dimension, key=name, count=count, cents=cents
                    )
                    for (dimension, name), (count, cents) in new.items()
                )
    except IntegrityError:  # a writer created one since the check
        for key, delta in new.items():
            _add(key, delta, group=group)


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


def _tallies(group: int | None) -> QuerySet[Any]:
    """The whole fleet's tallies, or `group`'s."""
    return FineTally.objects.all() if group is None else GroupTally.objects.filter(group_id=group)


def _add(key: TallyKey, delta: tuple[int, int], *, group: int | None = None) -> None:
    """Add `delta` (count, cents) to the tally `key` (of `group`, or the whole fleet's),
    created if it is not there yet."""
    (dimension, name), (count, cents) = key, delta
    rows = _tallies(group).filter(dimension=dimension, key=name)
    for _attempt in range(_CREATE_ATTEMPTS):
        if rows.update(count=F("count") + count, cents=F("cents") + cents):
            return
        try:
            with transaction.atomic():  # a savepoint: a clash undoes this INSERT alone
                if group is None:
                    FineTally.objects.create(
                        dimension=dimension, key=name, count=count, cents=cents
                    )
                else:
                    GroupTally.objects.create(
                        group_id=group, dimension=dimension, key=name, count=count, cents=cents
                    )
        except IntegrityError:  # another writer created it since: add to theirs
            continue
        return
    raise RuntimeError(f"the tally {key} could neither be added to nor created")
