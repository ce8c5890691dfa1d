"""The fleet's vehicles for the portal's pages: one snapshot, shared by every worker.

`GET /key/list-cars` answers with the whole fleet at once (spec 4.1), tens of
thousands of vehicles and no paging or filters. So the portal keeps a snapshot:

- in Django's cache (Redis in production), as plain columns (lists the cache
  pickles and unpickles in a few milliseconds) under a key per version, beside
  a small metadata key that names the current version and when it was fetched;
- in each process, decoded once per version (`_memo`) with its sort orders
  built on first use: a request reads only the metadata key, then filters,
  counts and slices in memory, creating objects only for the rows it shows;
- refreshed after `FLEET_VEHICLES_TTL` by exactly one request of the whole
  deployment, the holder of a lock taken with `cache.add`; the others serve
  the stale copy or, with nothing to serve, wait briefly for that one, which
  serves its page first and stores the new version after (`fleet.afterwards`),
  holding the lock until it is stored;
- served stale, saying since when and why, while the API fails or the route
  cools down after a Retry-After (`fleet.services.cooldown`, the same pause
  the client honours).

Cache keys, under `fleet:vehicles:1:<scope>` (`fleet_cache_scope()`):

| key | holds | read |
|---|---|---|
| `meta` | `{"version", "fetched_at", "count"}` | by every request |
| `data:<version>` | the snapshot | once per version by each process |
| `lock` | the refreshing worker's random token | when stale |
| `failure` | the last failed refresh: outcome, Retry-After, when | when stale |
"""

from __future__ import annotations

import heapq
import logging
import math
import operator
import secrets
import threading
import time
import unicodedata
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import reduce
from itertools import compress, repeat
from typing import Any, Final, NamedTuple, overload

from django.conf import settings
from django.core.cache import cache

from fleet import afterwards, plates
from fleet.api import errors
from fleet.api.client import LIST_VEHICLES, FleetClient
from fleet.api.errors import Outcome
from fleet.api.resources import VehicleColumns
from fleet.services.connection import fleet_cache_scope, fleet_client

logger = logging.getLogger(__name__)

SORTS: Final = ("plate", "-plate", "model", "-model", "active", "-active")
DEFAULT_SORT: Final = "plate"
MAX_PER_PAGE: Final = 200

_FORMAT: Final = 2  # of the cached snapshot; part of every key
_POLL: Final = 0.05  # seconds between looks at another worker's refresh
_LOCK_MARGIN: Final = 10  # seconds the lock outlives the longest possible API call
_FLIP: Final = bytes.maketrans(b"\x00\x01", b"\x01\x00")
_PAGES_KEPT: Final = 256  # pages of results each process keeps per version
# Up to this many rows, the first rows of the whole fleet in plate order come from
# a heap rather than a sort of every plate (`_Snapshot.page`).
_LEADING_ROWS: Final = 500


@dataclass(frozen=True, slots=True)
class VehicleRow:
    """One vehicle as the pages show it."""

    id: int
    plate: str  # normalized: "ABC1234", "ABC1D23"
    plate_display: str  # "ABC-1234" (old format), "ABC1D23" (Mercosul)
    model: str
    active: bool
    driver_id: int | None


class FleetDataUnavailable(Exception):
    """There is no vehicle list to show at all: `outcome` says why.

    `retry_after`: seconds before the API may be called again, when it asked to wait.
    """

    def __init__(self, outcome: Outcome, *, retry_after: float | None = None) -> None:
        when = "" if retry_after is None else f", retry after {math.ceil(retry_after)} s"
        super().__init__(f"no vehicle list to show: {outcome}{when}")
        self.outcome: Outcome = outcome
        self.retry_after = retry_after


@dataclass(frozen=True, slots=True)
class Freshness:
    """How old the list shown is, and why it was not refreshed.

    `stale`: older than `FLEET_VEHICLES_TTL`. `problem`: why the list was not
    replaced by a newer one; None when nothing went wrong, which a stale list
    also is while another worker is fetching its successor. `retry_after`:
    seconds before the API may be called again, while the route cools down.
    """

    fetched_at: datetime  # aware, UTC
    stale: bool
    problem: Outcome | None = None
    retry_after: float | None = None


@dataclass(frozen=True, slots=True)
class VehiclePage:
    """One page of the vehicles matching a filter."""

    rows: Sequence[VehicleRow]
    total: int  # vehicles matching the filter
    fleet_total: int
    page: int
    pages: int
    per_page: int
    freshness: Freshness
    version: str  # of the fleet's snapshot: what was rendered from it can be kept by it


# --- The selectors the pages call ----------------------------------------------


def vehicle_search(
    *,
    query: str = "",
    active: bool | None = None,
    sort: str = DEFAULT_SORT,
    page: int = 1,
    per_page: int = 50,
) -> VehiclePage:
    """The page `page` of the vehicles matching `query` and `active`, in `sort` order.

    `query` matches a plate ignoring case, spaces and hyphens, or a model
    ignoring case and accents. An unknown `sort` is the default; `page` is
    clamped to the pages there are; `per_page` to 1..MAX_PER_PAGE.
    """
    snapshot, freshness = _current()
    per_page = min(max(per_page, 1), MAX_PER_PAGE)
    found = snapshot.page(query=query, active=active, sort=sort, page=page, per_page=per_page)
    return VehiclePage(
        rows=found.rows,
        total=found.total,
        fleet_total=snapshot.count,
        page=found.page,
        pages=found.pages,
        per_page=per_page,
        freshness=freshness,
        version=snapshot.version,
    )


def vehicle_export(
    *, query: str = "", active: bool | None = None, sort: str = DEFAULT_SORT
) -> tuple[Iterator[VehicleRow], Freshness]:
    """Every vehicle matching the filter, in order, made one at a time (for CSV)."""
    snapshot, freshness = _current()
    return map(snapshot.row, snapshot.select(query=query, active=active, sort=sort)), freshness


def vehicle_get(*, plate: str) -> VehicleRow | None:
    """The vehicle with this plate (typed any way `plates.normalize` accepts), if any."""
    snapshot, _freshness = _current()
    index = snapshot.find(plates.normalize(plate))
    return None if index is None else snapshot.row(index)


def vehicle_drivers(*, registrations: Iterable[str], fetch: bool = True) -> dict[str, int] | None:
    """The driver of each vehicle among `registrations` (plates in the Mercosul format,
    `plates.registration`) that has one in the vehicle list.

    None when there is no list to read: with `fetch=False` (inside a transaction, where
    no API call may wait) only a list this process or the cache already holds is read.
    """
    if fetch:
        try:
            snapshot, _freshness = _current()
        except FleetDataUnavailable:
            return None
    else:
        found = _load(_Keys(fleet_cache_scope()))
        if found is None:
            return None
        snapshot = found
    drivers = snapshot.drivers_by_registration()
    return {
        registration: drivers[registration]
        for registration in registrations
        if registration in drivers
    }


def driver_vehicles(*, driver_id: int) -> list[VehicleRow]:
    """The vehicles the vehicle list gives to driver `driver_id`, in plate order."""
    snapshot, _freshness = _current()
    rows = [index for index, driver in enumerate(snapshot.drivers) if driver == driver_id]
    return sorted(map(snapshot.row, rows), key=operator.attrgetter("plate"))


def vehicles_refresh() -> Freshness:
    """Fetch the list now (the page's refresh button), unless the route is
    cooling down or another worker is already fetching it."""
    _snapshot, freshness = _current(force=True)
    return freshness


# --- The snapshot of one version of the fleet ----------------------------------


def _fold(text: str) -> str:
    """Lower case, without accents, single spaces: what model search compares."""
    decomposed = unicodedata.normalize("NFKD", text)
    bare = "".join(c for c in decomposed if not unicodedata.combining(c))
    return " ".join(bare.casefold().split())


def _normalized_plates(raw: list[str]) -> list[str]:
    # One `normalize` of the joined plates costs a tenth of one call per plate;
    # a plate with a line break in it (never seen) falls back to those calls.
    normalized = plates.normalize("\n".join(raw)).split("\n")
    return normalized if len(normalized) == len(raw) else [plates.normalize(p) for p in raw]


def _or(a: bytes, b: bytes) -> bytes:
    return (int.from_bytes(a) | int.from_bytes(b)).to_bytes(len(a))


def _and(a: bytes, b: bytes) -> bytes:
    return (int.from_bytes(a) & int.from_bytes(b)).to_bytes(len(a))


class _Page(NamedTuple):
    rows: tuple[VehicleRow, ...]
    total: int  # vehicles matching the filter
    page: int
    pages: int


@dataclass(frozen=True, slots=True)
class _Columns:
    """What search scans, in one sort order. Filters are masks: a byte per row, 1 if it matches."""

    plates: list[str]
    plate_text: str  # the plates joined by "\n": C's substring search finds the matches
    plate_width: int | None  # when every plate has this length (they all do, normalized)
    models: bytes | list[int]  # model numbers; bytes (for `translate`) up to 256 models
    active: bytes
    inactive: bytes


class _Snapshot:
    """One version of the fleet, as columns in the API's order, and its sort orders."""

    def __init__(
        self,
        *,
        scope: str,
        version: str,
        fetched_at: float,
        ids: list[int],
        plates: list[str],
        model_names: list[str],
        model_codes: list[int],
        actives: bytes,
        drivers: list[int | None],
    ) -> None:
        self.scope = scope
        self.version = version
        self.fetched_at = fetched_at
        self.fetched_at_utc = datetime.fromtimestamp(fetched_at, UTC)
        self.count = len(ids)
        self.ids = ids
        self.plates = plates  # normalized
        # A fleet has few models: each row holds its model's number, and
        # search folds each model once, not each row's.
        self.model_names = model_names
        self.model_codes = model_codes
        self.model_folds = [_fold(name) for name in model_names]
        self.actives = actives  # 1 per active vehicle
        self.drivers = drivers
        # Built on first use, once per process and version: a page without a
        # search needs only its order, which the first page pays for.
        self._orders: dict[str, list[int]] = {}
        self._columns: dict[str, _Columns] = {}
        self._build_lock = threading.RLock()
        self._drivers: dict[str, int] | None = None
        # The pages asked for, by filter: a version never changes, so neither do they.
        self._pages: dict[tuple[str, bool | None, str, int, int], _Page] = {}

    def __repr__(self) -> str:
        return f"<_Snapshot {self.version} of {self.count} vehicles>"

    @classmethod
    def from_columns(
        cls, fleet: VehicleColumns, *, scope: str, version: str, fetched_at: float
    ) -> _Snapshot:
        # Each distinct model once, in order of appearance; rows hold its number.
        names = list(dict.fromkeys(fleet.models))
        number = {name: code for code, name in enumerate(names)}
        return cls(
            scope=scope,
            version=version,
            fetched_at=fetched_at,
            ids=fleet.ids,
            plates=_normalized_plates(fleet.plates),
            model_names=names,
            model_codes=list(map(number.__getitem__, fleet.models)),
            actives=fleet.actives,
            drivers=fleet.driver_ids,
        )

    def encode(self) -> tuple[Any, ...]:
        """Plain columns: the cache backend pickles lists of str and int quickly."""
        return (
            _FORMAT,
            self.ids,
            self.plates,
            self.model_names,
            self.model_codes,
            self.actives,
            self.drivers,
        )

    @classmethod
    def decode(
        cls, payload: object, *, scope: str, version: str, fetched_at: float
    ) -> _Snapshot | None:
        """The snapshot `encode` wrote, or None if `payload` is not one."""
        if not isinstance(payload, tuple) or len(payload) != 7 or payload[0] != _FORMAT:
            if payload is not None:
                logger.error("the cached vehicle list %s is unreadable; fetching it again", version)
            return None
        _, ids, plate_list, model_names, model_codes, actives, drivers = payload
        if not isinstance(actives, bytes) or not all(
            isinstance(column, list)
            for column in (ids, plate_list, model_names, model_codes, drivers)
        ):
            logger.error("the cached vehicle list %s is unreadable; fetching it again", version)
            return None
        snapshot = cls(
            scope=scope,
            version=version,
            fetched_at=fetched_at,
            ids=ids,
            plates=plate_list,
            model_names=model_names,
            model_codes=model_codes,
            actives=actives,
            drivers=drivers,
        )
        columns = (snapshot.plates, snapshot.model_codes, snapshot.actives, snapshot.drivers)
        if (
            any(len(c) != snapshot.count for c in columns)
            or snapshot.actives.translate(None, b"\x00\x01")
            or (snapshot.count and max(snapshot.model_codes) >= len(snapshot.model_names))
        ):
            logger.error("the cached vehicle list %s is inconsistent; fetching it again", version)
            return None
        return snapshot

    def drivers_by_registration(self) -> dict[str, int]:
        """Each vehicle's driver by its plate in the Mercosul format (how fines name a
        vehicle, `plates.registration`); vehicles without a driver left out. Built once."""
        with self._build_lock:
            if self._drivers is None:
                self._drivers = {
                    plates.registration(plate): driver
                    for plate, driver in zip(self.plates, self.drivers, strict=True)
                    if driver is not None
                }
            return self._drivers

    def row(self, index: int) -> VehicleRow:
        plate = self.plates[index]
        return VehicleRow(
            id=self.ids[index],
            plate=plate,
            plate_display=plates.display(plate),
            model=self.model_names[self.model_codes[index]],
            active=self.actives[index] == 1,
            driver_id=self.drivers[index],
        )

    def page(
        self, *, query: str, active: bool | None, sort: str, page: int, per_page: int
    ) -> _Page:
        """The rows of page `page` (clamped) of the filter, and its counts; kept by filter."""
        key = (query, active, sort, page, per_page)
        found = self._pages.get(key)
        if found is None:
            leading = self._leading(query=query, active=active, sort=sort, upto=page * per_page)
            matches: Sequence[int] = (
                range(self.count)  # every row, only counted: the page comes from a heap
                if leading
                else self.select(query=query, active=active, sort=sort)
            )
            pages = max(1, math.ceil(len(matches) / per_page))
            page = min(max(page, 1), pages)
            start = (page - 1) * per_page
            if leading:
                # The first rows by plate without sorting the fleet: what a new version's
                # first page needs (50,000 plates sort in about 11 ms, the heap takes 2).
                # `nsmallest` is `sorted(...)[:n]`, ties in row order as the sort has them.
                first = heapq.nsmallest(start + per_page, matches, key=self.plates.__getitem__)
                shown = first[start:]
            else:
                shown = list(matches[start : start + per_page])
            rows = tuple(map(self.row, shown))
            found = _Page(rows, len(matches), page, pages)
            with self._build_lock:
                while len(self._pages) >= _PAGES_KEPT:
                    del self._pages[next(iter(self._pages))]
                self._pages[key] = found
        return found

    def _leading(self, *, query: str, active: bool | None, sort: str, upto: int) -> bool:
        """Whether the page is among the first rows of the whole fleet in plate order,
        with that order not built yet (then a heap finds them quicker than a sort)."""
        return (
            upto <= _LEADING_ROWS
            and (sort == DEFAULT_SORT or sort not in SORTS)
            and active is None
            and not _fold(query)
            and DEFAULT_SORT not in self._orders
        )

    def find(self, plate: str) -> int | None:
        """The row of a normalized plate, by binary search in plate order."""
        order = self.order(DEFAULT_SORT)
        position = bisect_left(order, plate, key=self.plates.__getitem__)
        if position < len(order) and self.plates[order[position]] == plate:
            return order[position]
        return None

    def select(self, *, query: str, active: bool | None, sort: str) -> Sequence[int]:
        """Row numbers matching the filter, in `sort` order: one pass, no sorting.

        A filtered result stays a mask over the order: a page counts it and
        slices the rows it shows, without listing thousands of matches.
        """
        sort = sort if sort in SORTS else DEFAULT_SORT
        text = _fold(query)
        if not text and active is None:
            return self.order(sort)
        columns = self.columns(sort)
        mask = self._query_mask(columns, text) if text else None
        if active is not None:
            wanted = columns.active if active else columns.inactive
            mask = wanted if mask is None else _and(mask, wanted)
        return self.order(sort) if mask is None else _Matches(self.order(sort), mask)

    def _query_mask(self, columns: _Columns, text: str) -> bytes | None:
        """Rows whose plate or model matches the folded query; None when every row does."""
        models = [n for n, folded in enumerate(self.model_folds) if text in folded]
        if len(models) == len(self.model_folds):
            return None
        masks = []
        plate_part = plates.normalize(text)
        if plate_part and (plate_mask := self._plate_mask(columns, plate_part)) is not None:
            masks.append(plate_mask)
        if models and isinstance(columns.models, bytes):
            masks.append(columns.models.translate(bytes(n in models for n in range(256))))
        elif models:
            masks.append(bytes(map(set(models).__contains__, columns.models)))
        return reduce(_or, masks) if masks else bytes(self.count)

    def _plate_mask(self, columns: _Columns, part: str) -> bytes | None:
        """Rows whose plate contains `part`; None when none does."""
        hits = columns.plate_text.count(part)  # one pass in C: most plate searches find few
        if not hits:
            return None
        width = columns.plate_width
        if width is None or hits > self.count // 32:
            return bytes(map(operator.contains, columns.plates, repeat(part)))
        # Plates of one width joined by "\n": a match at offset i is on row
        # i // (width + 1); jumping to the next row counts a plate only once.
        mask = bytearray(self.count)
        find, stride = columns.plate_text.find, width + 1
        position = find(part)
        while position >= 0:
            row = position // stride
            mask[row] = 1
            position = find(part, (row + 1) * stride)
        return bytes(mask)

    def order(self, sort: str) -> list[int]:
        """Row numbers in `sort` order."""
        order = self._orders.get(sort)
        if order is None:
            with self._build_lock:
                order = self._orders.get(sort)
                if order is None:
                    order = self._orders[sort] = self._sorted(sort)
        return order

    def columns(self, sort: str) -> _Columns:
        """The search columns in `sort` order."""
        columns = self._columns.get(sort)
        if columns is None:
            with self._build_lock:
                columns = self._columns.get(sort)
                if columns is None:
                    columns = self._columns[sort] = self._columns_in(self.order(sort))
        return columns

    def _columns_in(self, order: list[int]) -> _Columns:
        in_order = list(map(self.plates.__getitem__, order))
        width = len(in_order[0]) if in_order else 0
        codes = map(self.model_codes.__getitem__, order)
        active = bytes(map(self.actives.__getitem__, order))
        return _Columns(
            plates=in_order,
            plate_text="\n".join(in_order),
            plate_width=width if all(len(p) == width for p in in_order) else None,
            models=bytes(codes) if len(self.model_names) <= 256 else list(codes),
            active=active,
            inactive=active.translate(_FLIP),
        )

    def _sorted(self, sort: str) -> list[int]:
        if sort == "plate":
            return sorted(range(self.count), key=self.plates.__getitem__)
        # Stable sorts of the plate order: ties stay in plate order, even
        # descending, so "-model" lists each model's plates A to Z.
        by_plate = self.order("plate")
        field, descending = sort.removeprefix("-"), sort.startswith("-")
        if field == "plate":
            return by_plate[::-1]
        if field == "model":
            names, folds = self.model_names, self.model_folds
            ranked = sorted(range(len(names)), key=lambda n: (folds[n], names[n]))
            rank = [0] * len(names)
            for position, n in enumerate(ranked):
                rank[n] = position
            keys = list(map(rank.__getitem__, self.model_codes))
            return sorted(by_plate, key=keys.__getitem__, reverse=descending)
        return sorted(by_plate, key=self.actives.__getitem__, reverse=descending)


class _Matches(Sequence[int]):
    """The rows of `order` whose byte in `mask` is 1, counted and sliced in C.

    A page needs the count and 50 rows: `bytes.count` and `bytes.find` give
    both without building the list of every match (thousands for a model).
    """

    def __init__(self, order: list[int], mask: bytes) -> None:
        self._order = order
        self._mask = mask
        self._count = mask.count(1)

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[int]:
        return compress(self._order, self._mask)

    @overload
    def __getitem__(self, index: int) -> int: ...
    @overload
    def __getitem__(self, index: slice) -> list[int]: ...
    def __getitem__(self, index: int | slice) -> int | list[int]:
        if isinstance(index, int):
            if not -self._count <= index < self._count:
                raise IndexError(index)
            return self[index % self._count : index % self._count + 1][0]
        start, stop, step = index.indices(self._count)
        if step != 1:
            return list(self)[index]
        mask, rows = self._mask, []
        # The match before `start` ends the shortest prefix holding `start`
        # matches: a binary search of counts, each one pass in C (none for the first page).
        position = (
            bisect_left(range(len(mask) + 1), start, key=lambda end: mask.count(1, 0, end)) - 1
            if start
            else -1
        )
        for _ in range(max(0, stop - start)):
            position = mask.find(1, position + 1)
            rows.append(self._order[position])
        return rows


class _Memo:
    """This process's decoded snapshot, shared by its threads, decoded once per version."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.snapshot: _Snapshot | None = None

    def clear(self) -> None:
        with self.lock:
            self.snapshot = None


_memo = _Memo()


# --- The shared cache -----------------------------------------------------------


class _Keys:
    def __init__(self, scope: str) -> None:
        self.scope = scope
        prefix = f"fleet:vehicles:{_FORMAT}:{scope}"
        self.meta = f"{prefix}:meta"
        self.lock = f"{prefix}:lock"
        self.failure = f"{prefix}:failure"
        self._data = f"{prefix}:data"

    def data(self, version: str) -> str:
        return f"{self._data}:{version}"


class _Meta(NamedTuple):
    version: str
    fetched_at: float

    @classmethod
    def parse(cls, value: Any) -> _Meta | None:
        if isinstance(value, dict):
            version, fetched_at = value.get("version"), value.get("fetched_at")
            if isinstance(version, str) and isinstance(fetched_at, int | float):
                return cls(version, float(fetched_at))
        return None


class _Failure(NamedTuple):
    """The last refresh that failed: why, the Retry-After it carried, when (wall clock)."""

    outcome: Outcome
    retry_after: float | None
    at: float

    @classmethod
    def parse(cls, value: Any) -> _Failure | None:
        if isinstance(value, tuple | list) and len(value) == 3:
            outcome, retry_after, at = value
            if (
                outcome in Outcome
                and (retry_after is None or isinstance(retry_after, int | float))
                and isinstance(at, int | float)
            ):
                return cls(Outcome(outcome), retry_after, at)
        return None

    def backing_off(self, now: float) -> bool:
        """Whether workers should not call again yet (a Retry-After is the cooldown's)."""
        return self.retry_after is None and now - self.at < settings.FLEET_VEHICLES_FAILURE_BACKOFF


def _keep_seconds() -> int:
    return math.ceil(settings.FLEET_VEHICLES_KEEP)


def _load(keys: _Keys) -> _Snapshot | None:
    """The current snapshot: the memo while the version is unchanged, else decoded."""
    for _attempt in range(3):
        meta = _Meta.parse(cache.get(keys.meta))
        if meta is None:
            break
        memo = _memo.snapshot
        if memo is not None and memo.version == meta.version:
            return memo
        with _memo.lock:
            memo = _memo.snapshot
            if memo is not None and memo.version == meta.version:
                return memo
            started = time.perf_counter()
            snapshot = _Snapshot.decode(
                cache.get(keys.data(meta.version)),
                scope=keys.scope,
                version=meta.version,
                fetched_at=meta.fetched_at,
            )
            if snapshot is not None:
                _memo.snapshot = snapshot
                logger.debug(
                    "decoded vehicle list %s (%d vehicles) in %.0f ms",
                    snapshot.version,
                    snapshot.count,
                    (time.perf_counter() - started) * 1000,
                )
                return snapshot
        # The version was replaced between the two reads, or evicted: look again.
    # The cache lost the list (flushed, evicted): this process's copy is still good.
    memo = _memo.snapshot
    if (
        memo is not None
        and memo.scope == keys.scope
        and time.time() - memo.fetched_at <= settings.FLEET_VEHICLES_KEEP
    ):
        return memo
    return None


def _store(keys: _Keys, snapshot: _Snapshot, *, replaces: str | None) -> None:
    """Store a new version for every worker, in place of version `replaces`.

    The data and the meta naming it are written together (`set_many`: one MSET
    on Redis, the data first elsewhere), then the failure and the replaced
    data are deleted together: two round trips. A worker that read the old meta
    reads it again when the data is gone.
    """
    cache.set_many(
        {
            keys.data(snapshot.version): snapshot.encode(),
            keys.meta: {
                "version": snapshot.version,
                "fetched_at": snapshot.fetched_at,
                "count": snapshot.count,
            },
        },
        timeout=_keep_seconds(),
    )
    cache.delete_many([keys.failure, *([keys.data(replaces)] if replaces else [])])


@dataclass(slots=True)
class _Lock:
    """The refresh lock as `_refresh_lock` yields it: whether this worker holds it,
    and, once `hand_over` is called, who releases it (not the `with` block)."""

    owned: bool
    release: Callable[[], None]
    handed_over: bool = False

    def hand_over(self) -> Callable[[], None]:
        self.handed_over = True
        return self.release


@contextmanager
def _refresh_lock(keys: _Keys, client: FleetClient) -> Iterator[_Lock]:
    """Try to become the one worker fetching the list; yields whether this one is.

    The lock expires after the longest the client can spend on one call, in
    case its holder dies; it is released only by its owner, and only while it
    is surely still that owner's: when the block ends, or, if the block handed
    it over (`_fetch`, to store the list after the response), by whoever took it.
    """
    seconds = (client.connect_timeout + client.read_timeout) * client.max_attempts
    timeout = math.ceil(seconds + client.retry_budget) + _LOCK_MARGIN
    token = secrets.token_hex(16)
    taken = time.monotonic()

    def release() -> None:
        if time.monotonic() - taken < timeout - 1 and cache.get(keys.lock) == token:
            cache.delete(keys.lock)

    lock = _Lock(owned=cache.add(keys.lock, token, timeout=timeout), release=release)
    try:
        yield lock
    finally:
        if lock.owned and not lock.handed_over:
            lock.release()


def _fetch(
    keys: _Keys, client: FleetClient, *, replaces: str | None, lock: _Lock, force: bool
) -> _Snapshot:
    """Call the API; its answer is this worker's copy now and every worker's once
    stored, in place of version `replaces` (the one this worker, holding the
    refresh `lock`, found current). On failure, record it for every worker.

    Storing waits until this request's response is out (`afterwards.later`):
    the person who asked does not wait for it, and the lock is held until it is
    done, so other workers wait for the stored copy rather than fetch one. A
    forced refresh (the button) stores before answering: its answer is a
    redirect, and the page it leads to may be served by another worker.
    """
    started = time.perf_counter()
    try:
        fleet = client.list_vehicle_columns()
    except errors.FleetError as error:
        # A plain str in the cache: any version of the portal can read it.
        failure = (error.outcome.value, error.retry_after, time.time())
        cache.set(keys.failure, failure, timeout=_keep_seconds())
        logger.warning(
            "vehicle list refresh failed after %.0f ms (%s): %s",
            (time.perf_counter() - started) * 1000,
            error.outcome,
            error,
        )
        raise
    fetched = time.perf_counter()
    snapshot = _Snapshot.from_columns(
        fleet,
        scope=keys.scope,
        version=f"{time.time_ns():x}-{secrets.token_hex(4)}",
        fetched_at=time.time(),
    )
    built = time.perf_counter()
    with _memo.lock:
        _memo.snapshot = snapshot
    release = lock.hand_over()

    def store() -> None:
        storing = time.perf_counter()
        try:
            _store(keys, snapshot, replaces=replaces)
        finally:
            release()
        logger.info(
            "vehicle list refreshed: %d vehicles (API %.0f ms, building %.0f ms, storing %.0f ms)",
            snapshot.count,
            (fetched - started) * 1000,
            (built - fetched) * 1000,
            (time.perf_counter() - storing) * 1000,
        )

    if force:
        store()
    else:
        afterwards.later(store)
    return snapshot


# --- Fresh, stale or none --------------------------------------------------------


def _freshness(
    snapshot: _Snapshot, *, problem: Outcome | None = None, retry_after: float | None = None
) -> Freshness:
    return Freshness(
        fetched_at=snapshot.fetched_at_utc,
        stale=time.time() - snapshot.fetched_at > settings.FLEET_VEHICLES_TTL,
        problem=problem,
        retry_after=retry_after,
    )


def _current(*, force: bool = False) -> tuple[_Snapshot, Freshness]:
    """The snapshot to serve and its freshness; `FleetDataUnavailable` when there is none.

    The usual path is one read of the small meta key. `force` refreshes a list
    that is still fresh, as long as no pause or other refresh is in the way.
    """
    keys = _Keys(fleet_cache_scope())
    snapshot = _load(keys)
    if snapshot is None:
        return _first(keys, force=force)
    if not force and time.time() - snapshot.fetched_at <= settings.FLEET_VEHICLES_TTL:
        return snapshot, _freshness(snapshot)
    return _refreshed(keys, snapshot, force=force)


def _refreshed(keys: _Keys, snapshot: _Snapshot, *, force: bool) -> tuple[_Snapshot, Freshness]:
    """A newer snapshot if this worker may fetch one now, else `snapshot` and why not."""
    client = fleet_client()
    failure = _Failure.parse(cache.get(keys.failure))
    if (pause := client.cooldown.remaining(LIST_VEHICLES)) > 0:
        outcome = failure.outcome if failure and failure.retry_after is not None else None
        return snapshot, _freshness(
            snapshot, problem=outcome or Outcome.RATE_LIMITED, retry_after=pause
        )
    if failure and not force and failure.backing_off(time.time()):
        return snapshot, _freshness(snapshot, problem=failure.outcome)
    with _refresh_lock(keys, client) as lock:
        if not lock.owned:  # another worker is fetching: serve this one meanwhile
            return snapshot, _freshness(snapshot, problem=failure.outcome if failure else None)
        latest = _load(keys)
        if latest is not None and latest.version != snapshot.version:
            return latest, _freshness(latest)  # published while this one looked
        try:
            latest = _fetch(keys, client, replaces=snapshot.version, lock=lock, force=force)
        except errors.FleetError as error:
            return snapshot, _freshness(
                snapshot, problem=error.outcome, retry_after=error.retry_after
            )
    return latest, _freshness(latest)


def _first(keys: _Keys, *, force: bool) -> tuple[_Snapshot, Freshness]:
    """The first snapshot, with none to serve meanwhile: fetch it, or wait for the
    worker fetching it (up to `FLEET_VEHICLES_WAIT`)."""
    client = fleet_client()
    started, give_up = time.time(), time.monotonic() + settings.FLEET_VEHICLES_WAIT
    failure = _Failure.parse(cache.get(keys.failure))
    if failure and not force and failure.backing_off(started):
        raise FleetDataUnavailable(failure.outcome)
    while True:
        # Longer than the client may wait for: refuse now rather than hold the lock.
        if (pause := client.cooldown.remaining(LIST_VEHICLES)) > client.retry_budget:
            outcome = failure.outcome if failure and failure.retry_after is not None else None
            raise FleetDataUnavailable(outcome or Outcome.RATE_LIMITED, retry_after=pause)
        with _refresh_lock(keys, client) as lock:
            if lock.owned:
                snapshot = _load(keys)  # published just before the lock was free
                if snapshot is None:
                    try:
                        snapshot = _fetch(keys, client, replaces=None, lock=lock, force=force)
                    except errors.FleetError as error:
                        pause = client.cooldown.remaining(LIST_VEHICLES)
                        raise FleetDataUnavailable(
                            error.outcome, retry_after=pause or None
                        ) from error
                return snapshot, _freshness(snapshot)
        time.sleep(_POLL)
        if (snapshot := _load(keys)) is not None:
            return snapshot, _freshness(snapshot)
        failure = _Failure.parse(cache.get(keys.failure))
        if failure and failure.at >= started:  # the worker fetching it failed
            pause = client.cooldown.remaining(LIST_VEHICLES)
            raise FleetDataUnavailable(failure.outcome, retry_after=pause or None)
        if time.monotonic() >= give_up:
            raise FleetDataUnavailable(Outcome.UNAVAILABLE)
