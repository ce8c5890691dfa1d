"""The history of who had each vehicle, taken in from the refreshes of the vehicle list.

`history_observe` is called by the one worker of the deployment that refreshed the list
(`fleet.services.vehicle_cache`, holding the refresh lock, once the new version is
stored): the list's drivers are compared with the previous observation's, and only what
changed is written (`fleet.models.DriverSpan`), with one `DriverObservation` row.

- **What it is compared with.** The version the refresh replaced, when this process
  holds it and it is the latest observation's: two lists in memory (the same plates in
  the same order: two arrays compared in C, then the rows that differ). Otherwise (the
  first observation, a failed one, another host's version) the open spans in the
  database: slower (every vehicle read), and right whatever happened before.
- **Once.** The observation's `seq` is the latest's plus one and unique, and a vehicle
  has one open span by constraint: a second process taking in the same refresh (while
  the cache cannot hold the refresh lock) fails its transaction whole and writes nothing.
- **Short transactions.** Up to `ONE_TRANSACTION` changes go in one; more (the first
  observation of a large fleet) in chunks, the observation row last: a run that stops
  half-way leaves no observation, so the next compares with the database.
- **Out of the page's way.** A refresh a page started writes at most
  FLEET_DRIVER_HISTORY_PAGE_CHANGES changes itself, after the response; more (the first
  observation of a large fleet: minutes) go to the worker (`vehicle_list_take_in`),
  where no web server's timeout stops them half-way. There too a run writes at most
  FLEET_DRIVER_HISTORY_TASK_CHANGES (seconds of work) and asks for the next, at a lower
  priority than the fines and notifications received: the worker stays theirs.
- **Late observations.** The fines committed since the previous observation are
  attributed again by the worker (`fleet.services.attribution.fine_drivers_follow`):
  their answer is the one that can change.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import NamedTuple

from django.db import DatabaseError, IntegrityError, transaction
from django.db.models import Count, QuerySet

from fleet import plates
from fleet.models import DriverObservation, DriverSpan, Fine
from fleet.services.drivers import driver_names
from fleet.services.scopes import VehicleScope
from fleet.services.vehicle_index import Snapshot
from portal.lib import worker

logger = logging.getLogger("fleet.services.driver_history")

# Changes written in one transaction; more are written in chunks of `CHUNK`.
ONE_TRANSACTION = 20_000
CHUNK = 5_000

# A vehicle's driver as the history keeps it: None when it has none.
type Holder = int | None


@dataclass(frozen=True, slots=True)
class Observed:
    """What an observation wrote: rows of spans opened and closed, how it compared."""

    seq: int
    opened: int
    closed: int
    compared_with: str  # "previous list", "database"
    took_ms: float

    @property
    def rows_written(self) -> int:
        return 1 + self.opened + self.closed


@dataclass(frozen=True, slots=True)
class _Changes:
    # Vehicles whose open period ends (their driver changed, or they left the list).
    closes: set[str]
    # Vehicles with a new open period: its driver, and the period it follows, if any
    # (None: the vehicle is new to the list), by that period's driver.
    opens: dict[str, tuple[Holder, Follows | None]]

    def __len__(self) -> int:
        return len(self.closes) + len(self.opens)


class Follows(NamedTuple):
    """The period a new one follows: its driver."""

    driver: Holder


def history_observe(
    snapshot: Snapshot,
    *,
    previous: Snapshot | None = None,
    at_most: int | None = None,
    written_at_most: int | None = None,
) -> Observed | None:
    """Take the vehicle list `snapshot` into the history; `previous`, the version it
    replaced, if this process holds it. None when it was not taken in (yet): older than
    the latest observation, taken in by another process meanwhile, more than `at_most`
    changes (handed to the worker, `driver_history_take_in_run`), or more than
    `written_at_most`, of which that many were written and the rest asked of the worker's
    next run (each said in the log)."""
    started = time.perf_counter()
    at = datetime.fromtimestamp(snapshot.fetched_at, UTC)
    latest = DriverObservation.objects.order_by("-seq").first()
    if latest is not None and at <= latest.at:
        logger.info(
            "vehicle list of %s not taken into the history: not newer than #%d", at, latest.seq
        )
        return None
    if latest is not None and previous is not None and previous.version == latest.version:
        changes, compared_with = _compared(previous, snapshot), "previous list"
    else:
        changes, compared_with = _compared_with_database(snapshot), "database"
    if at_most is not None and len(changes) > at_most:
        _take_in_ask(at, len(changes))
        return None
    seq = 1 if latest is None else latest.seq + 1
    try:
        capped = written_at_most is not None and len(changes) > written_at_most
        if len(changes) <= ONE_TRANSACTION and not capped:
            with transaction.atomic():
                _write(changes.closes, changes.opens, at=at, before=latest)
                observation = _observation(seq, at, snapshot, changes, started)
        else:
            written, size = 0, min(CHUNK, written_at_most or CHUNK)
            for closes, opens in _chunks(changes, size):
                if written_at_most is not None and written >= written_at_most:
                    # The rest in the worker's next run, which compares with the database.
                    _take_in_ask(at, len(changes) - written)
                    return None
                with transaction.atomic():
                    _write(closes, opens, at=at, before=latest)
                written += len(closes | opens.keys())
            observation = _observation(seq, at, snapshot, changes, started)
    except (IntegrityError, DatabaseError) as error:
        logger.warning(
            "vehicle list of %s not taken into the history: %s (another process took it in?)",
            at,
            type(error).__name__,
        )
        return None
    if changes and latest is not None:
        _follow_ask(latest.at)
    observed = Observed(
        seq=observation.seq,
        opened=len(changes.opens),
        closed=len(changes.closes),
        compared_with=compared_with,
        took_ms=(time.perf_counter() - started) * 1000,
    )
    logger.info(
        "vehicle list #%d taken into the history: %d periods opened, %d closed "
        "(compared with the %s) in %.0f ms",
        observed.seq,
        observed.opened,
        observed.closed,
        compared_with,
        observed.took_ms,
    )
    return observed


def _observation(
    seq: int, at: datetime, snapshot: Snapshot, changes: _Changes, started: float
) -> DriverObservation:
    return DriverObservation.objects.create(
        seq=seq,
        at=at,
        version=snapshot.version,
        vehicles=snapshot.count,
        opened=len(changes.opens),
        closed=len(changes.closes),
        took_ms=round((time.perf_counter() - started) * 1000),
    )


def _write(
    closes: set[str],
    opens: dict[str, tuple[Holder, Follows | None]],
    *,
    at: datetime,
    before: DriverObservation | None,
) -> None:
    """End the open periods of `closes` (last seen at the observation `before`, the next
    driver first seen `at`: the same two moments for all, an UPDATE a thousand vehicles)
    and open those of `opens`, inside the caller's transaction."""
    if closes:
        assert before is not None  # nothing is open before the first observation
        for chunk in _slices(sorted(closes), 1000):
            DriverSpan.objects.filter(registration__in=chunk, next_seen__isnull=True).update(
                last_seen=before.at, next_seen=at
            )
    DriverSpan.objects.bulk_create(
        [
            DriverSpan(
                registration=registration,
                driver_id=driver,
                first_seen=at,
                previous_driver_id=None if follows is None else follows.driver,
                previous_seen=None if follows is None or before is None else before.at,
            )
            for registration, (driver, follows) in sorted(opens.items())
        ],
        batch_size=1000,
    )


def _chunks(
    changes: _Changes, size: int = CHUNK
) -> Iterator[tuple[set[str], dict[str, tuple[Holder, Follows | None]]]]:
    """The changes a vehicle at a time, `size` vehicles to a transaction: a vehicle's
    period closed in the same transaction as its next one opens."""
    vehicles = sorted(changes.closes | changes.opens.keys())
    for chunk in _slices(vehicles, size):
        yield (
            {r for r in chunk if r in changes.closes},
            {r: changes.opens[r] for r in chunk if r in changes.opens},
        )


def _slices[T](items: list[T], size: int) -> Iterator[list[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


# --- What changed -------------------------------------------------------------------


def _compared(previous: Snapshot, snapshot: Snapshot) -> _Changes:
    """The changes from the list `previous` to `snapshot`: by row when both have the same
    plates in the same order (as an unchanged fleet comes back), else by plate."""
    if previous.plates == snapshot.plates:
        if previous.drivers == snapshot.drivers and previous.has_driver == snapshot.has_driver:
            return _Changes(set(), {})
        rows = [
            row
            for row, (a, b, had, has) in enumerate(
                zip(
                    previous.drivers,
                    snapshot.drivers,
                    previous.has_driver,
                    snapshot.has_driver,
                    strict=True,
                )
            )
            if a != b or had != has
        ]
        before = _holders(previous, rows)
        after = _holders(snapshot, rows)
    else:
        before = _holders(previous, range(previous.count))
        after = _holders(snapshot, range(snapshot.count))
    return _difference(before, after)


def _compared_with_database(snapshot: Snapshot) -> _Changes:
    """The changes from the open spans to `snapshot`: every vehicle compared."""
    before: dict[str, Holder] = dict(
        DriverSpan.objects.filter(next_seen__isnull=True)
        .values_list("registration", "driver_id")
        .iterator(chunk_size=10_000)
    )
    return _difference(before, _holders(snapshot, range(snapshot.count)))


def _holders(snapshot: Snapshot, rows: Iterable[int]) -> dict[str, Holder]:
    """Each vehicle's driver in these rows, by registration (`plates.registration`: a plate
    in either format). A vehicle listed under both its plates is read as the portal reads
    it elsewhere (`Snapshot.drivers_of`): its Mercosul plate's row, else its first."""
    found: dict[str, Holder] = {}
    listed: set[str] | None = None
    for row in rows:
        plate = snapshot.plates[row]
        registration = plates.registration(plate)
        if registration == plate:
            found[registration] = snapshot.driver(row)
        elif registration not in found:
            if listed is None:
                listed = set(snapshot.plates)
            if registration not in listed:  # else that row is the vehicle's
                found[registration] = snapshot.driver(row)
    return found


def _difference(before: dict[str, Holder], after: dict[str, Holder]) -> _Changes:
    closes: set[str] = set()
    opens: dict[str, tuple[Holder, Follows | None]] = {}
    for registration, driver in after.items():
        if registration not in before:
            opens[registration] = (driver, None)
        elif (previous := before[registration]) != driver:
            closes.add(registration)
            opens[registration] = (driver, Follows(previous))
    closes.update(before.keys() - after.keys())  # left the list
    return _Changes(closes, opens)


def _take_in_ask(at: datetime, changes: int) -> None:
    """Have the worker take in the list of `at`: too many changes to write here."""
    logger.info("vehicle list of %s: %d changes, taken into the history by the worker", at, changes)
    try:
        worker.enqueue_unless_waiting("driver_history_take_in_run")
    except Exception:
        logger.exception("could not ask the worker to take the vehicle list into the history")


def _follow_ask(since: datetime) -> None:
    """Have the worker attribute again the fines committed after `since` (the previous
    observation), once this observation is committed."""

    def ask() -> None:
        try:
            worker.enqueue("fine_drivers_follow_run", since.isoformat())
        except Exception:
            logger.exception("could not ask the worker to attribute recent fines again")

    transaction.on_commit(ask)


# --- Reading ------------------------------------------------------------------------


def latest_observation() -> DriverObservation | None:
    return DriverObservation.objects.order_by("-seq").first()


def history_driver_ids() -> list[int]:
    """Every driver the history holds (the demo names them: `demo_drivers`)."""
    found = (
        DriverSpan.objects.filter(driver_id__isnull=False)
        .order_by("driver_id")
        .values_list("driver_id", flat=True)
        .distinct()
    )
    return [driver_id for driver_id in found if driver_id is not None]


# Periods a page lists, latest first.
PERIODS_SHOWN = 20


class Period(NamedTuple):
    """A period of the history as the pages list it: the vehicle, the driver (id, name),
    from when to when it was seen (`still`: open, `until` being the latest refresh), and
    the refresh that first saw the next driver."""

    registration: str
    driver_id: int | None
    name: str
    since: datetime
    until: datetime | None
    still: bool
    next_seen: datetime | None
    fines: int = 0  # the driver's fines read from this period (a driver's page)


def vehicle_periods(plate: str, *, limit: int = PERIODS_SHOWN) -> list[Period]:
    """Who had the vehicle `plate` (either format), latest first."""
    spans = DriverSpan.objects.filter(registration=plates.registration(plate))
    return _periods(list(spans.order_by("-first_seen")[:limit]))


def driver_periods(
    driver_id: int, *, scope: VehicleScope, fines: QuerySet[Fine], limit: int = PERIODS_SHOWN
) -> list[Period]:
    """The driver's periods with the vehicles `scope` sees, latest first, each with how
    many of `fines` (the driver's) were read from it."""
    spans = scope.records(DriverSpan.objects.filter(driver_id=driver_id))
    found = list(spans.order_by("-first_seen")[:limit])
    counts = dict(
        fines.filter(driver_span_id__in=[span.pk for span in found])
        .order_by()
        .values("driver_span_id")
        .annotate(count=Count("pk"))
        .values_list("driver_span_id", "count")
    )
    return [
        period._replace(fines=counts.get(span.pk, 0))
        for span, period in zip(found, _periods(found), strict=True)
    ]


def _periods(spans: list[DriverSpan]) -> list[Period]:
    names = driver_names([span.driver_id for span in spans if span.driver_id is not None])
    latest = latest_observation() if any(span.next_seen is None for span in spans) else None
    latest_at = latest.at if latest is not None else None
    return [
        Period(
            registration=span.registration,
            driver_id=span.driver_id,
            name=names.get(span.driver_id, "") if span.driver_id is not None else "",
            since=span.first_seen,
            until=span.last_seen if span.next_seen is not None else latest_at,
            still=span.next_seen is None,
            next_seen=span.next_seen,
        )
        for span in spans
    ]
