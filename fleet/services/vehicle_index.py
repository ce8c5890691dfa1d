"""One version of the fleet in memory: its columns, its sort orders, and search.

A `Snapshot` holds the vehicle list as columns in the API's order (ids and
driver ids in arrays, plates, model numbers, a byte per row for active and for
having a driver: a million vehicles in tens of megabytes). What a page asks of
it is answered in C wherever possible: filters are masks of one byte per row,
a plate search is a substring search of the plates joined by line breaks, and
a filtered result is counted and sliced without listing its matches. Sort
orders and search columns are built on first use, once per process and
version; the pages asked for are kept, since a version never changes.

How a snapshot is shared between workers is `fleet.services.vehicle_cache`.
It is one module because a snapshot's columns, orders, masks and kept pages are
one structure, each part read through the others' rows: apart, each would
reach into the others.
"""

from __future__ import annotations

import heapq
import logging
import math
import operator
import re
import threading
import unicodedata
from array import array
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import reduce
from itertools import compress, repeat
from typing import Any, Final, NamedTuple, overload

from fleet import plates
from fleet.api.resources import VehicleColumns
from portal.lib.bounded import bounded_put

# The vehicle list's one logger, whichever of its modules logs.
logger = logging.getLogger("fleet.services.vehicles")

SORTS: Final = ("plate", "-plate", "model", "-model", "active", "-active")
DEFAULT_SORT: Final = "plate"
SNAPSHOT_FORMAT: Final = 3  # of the cached snapshot; part of every cache key
PAGES_KEPT: Final = 256  # pages of results each process keeps per version

_FLIP: Final = bytes.maketrans(b"\x00\x01", b"\x01\x00")
# Up to this many rows, the first rows of the whole fleet in plate order come from
# a heap rather than a sort of every plate (`Snapshot.page`).
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


def _fold(text: str) -> str:
    """Lower case, without accents, single spaces: what model search compares."""
    decomposed = unicodedata.normalize("NFKD", text)
    bare = "".join(c for c in decomposed if not unicodedata.combining(c))
    return " ".join(bare.casefold().split())


def _normalized_plates(raw: list[str]) -> list[str]:
    # One `normalize` of the joined plates rather than one call per plate; a plate
    # with a line break in it (never seen) falls back to those calls. Plates sent
    # normalized are kept as they are (a million strings not made twice).
    joined = "\n".join(raw)
    normalized_text = plates.normalize(joined)
    if normalized_text == joined:
        return raw
    normalized = normalized_text.split("\n")
    return normalized if len(normalized) == len(raw) else [plates.normalize(p) for p in raw]


def mask_or(a: bytes, b: bytes) -> bytes:
    """Two masks of a byte per row (1: the row is in), either."""
    return (int.from_bytes(a) | int.from_bytes(b)).to_bytes(len(a))


def mask_and(a: bytes, b: bytes) -> bytes:
    """Two masks of a byte per row (1: the row is in), both."""
    return (int.from_bytes(a) & int.from_bytes(b)).to_bytes(len(a))


@dataclass(frozen=True, slots=True)
class Within:
    """A part of the fleet: the rows whose registration (`plates.registration`) is in
    `registrations`, or with `inside=False` those whose is not. `key` names the set."""

    key: str
    registrations: frozenset[str]
    inside: bool = True


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


class Snapshot:
    """One version of the fleet, as columns in the API's order, and its sort orders."""

    def __init__(
        self,
        *,
        scope: str,
        version: str,
        fetched_at: float,
        ids: array[int],
        plates: list[str],
        model_names: list[str],
        model_codes: array[int],
        actives: bytes,
        drivers: array[int],
        has_driver: bytes,
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
        self.drivers = drivers  # a row's driver id, if its byte in `has_driver` is 1
        self.has_driver = has_driver
        # Built on first use, once per process and version: a page without a
        # search needs only its order, which the first page pays for.
        self._orders: dict[str, array[int]] = {}
        self._columns: dict[str, _Columns] = {}
        self._build_lock = threading.RLock()
        # Each row's position in a sort order, by sort (built when a search needs it).
        self._ranks: dict[str, array[int]] = {}
        # Parts of the fleet (`Within`) as masks in each sort order, by key and sort.
        self._within: dict[tuple[str, str], bytes] = {}
        # The pages asked for, by filter: a version never changes, so neither do they.
        self._pages: dict[tuple[str, bool | None, str, int, int, str, tuple[int, ...]], _Page] = {}

    def __repr__(self) -> str:
        return f"<Snapshot {self.version} of {self.count} vehicles>"

    @property
    def orders_built(self) -> frozenset[str]:
        """The sorts whose order this process has built so far (each on first use)."""
        return frozenset(self._orders)

    @property
    def pages_kept(self) -> int:
        """How many pages of results this process keeps for the version (`PAGES_KEPT` at most)."""
        return len(self._pages)

    @classmethod
    def from_columns(
        cls, fleet: VehicleColumns, *, scope: str, version: str, fetched_at: float
    ) -> Snapshot:
        return cls(
            scope=scope,
            version=version,
            fetched_at=fetched_at,
            ids=fleet.ids,
            plates=_normalized_plates(fleet.plates),
            model_names=fleet.model_names,
            model_codes=fleet.model_codes,
            actives=fleet.actives,
            drivers=fleet.drivers,
            has_driver=fleet.has_driver,
        )

    def encode(self) -> tuple[Any, ...]:
        """Plain columns: the cache backend pickles arrays, bytes and lists of str quickly."""
        return (
            SNAPSHOT_FORMAT,
            self.ids,
            self.plates,
            self.model_names,
            self.model_codes,
            self.actives,
            self.drivers,
            self.has_driver,
        )

    @classmethod
    def decode(
        cls, payload: object, *, scope: str, version: str, fetched_at: float
    ) -> Snapshot | None:
        """The snapshot `encode` wrote, or None if `payload` is not one."""
        if not isinstance(payload, tuple) or len(payload) != 8 or payload[0] != SNAPSHOT_FORMAT:
            if payload is not None:
                logger.error("the cached vehicle list %s is unreadable; fetching it again", version)
            return None
        _, ids, plate_list, model_names, model_codes, actives, drivers, has_driver = payload
        if (
            not all(isinstance(column, bytes) for column in (actives, has_driver))
            or not all(isinstance(column, list) for column in (plate_list, model_names))
            or not all(isinstance(column, array) for column in (ids, model_codes, drivers))
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
            has_driver=has_driver,
        )
        columns = (
            snapshot.plates,
            snapshot.model_codes,
            snapshot.actives,
            snapshot.drivers,
            snapshot.has_driver,
        )
        if (
            any(len(c) != snapshot.count for c in columns)
            or snapshot.actives.translate(None, b"\x00\x01")
            or snapshot.has_driver.translate(None, b"\x00\x01")
            or (snapshot.count and max(snapshot.model_codes) >= len(snapshot.model_names))
        ):
            logger.error("the cached vehicle list %s is inconsistent; fetching it again", version)
            return None
        return snapshot

    def drivers_of(self, registrations: Iterable[str]) -> dict[str, int]:
        """The driver of each vehicle among `registrations` (plates in the Mercosul format,
        `plates.registration`) that has one: found by plate, in either format."""
        found = {}
        for registration in registrations:
            index = self.find(registration)
            if index is None and (old := plates.old_plate(registration)) is not None:
                index = self.find(old)
            if index is not None and (driver := self.driver(index)) is not None:
                found[registration] = driver
        return found

    def rows_of_driver(self, driver_id: int) -> list[int]:
        """The rows whose driver is `driver_id`, in order: its id's bytes looked for in the
        column's (a search in C, a million rows in under 3 ms, where a loop over them took
        30), each find kept only where a row begins and has a driver."""
        return self.rows_of_drivers((driver_id,))

    def rows_of_drivers(self, driver_ids: Iterable[int]) -> list[int]:
        """The rows whose driver is one of `driver_ids`, in order: one search of the column
        for any of their ids' bytes (one pass, where a search per driver reads it per driver).

        The search reads the array's own bytes (`re` takes any buffer: no 8 MB copy, and
        faster than `bytes.find` at this size); each search starts one byte after the last
        find, so that a find across two rows cannot hide a row's own that overlaps it."""
        ids = []
        for driver_id in driver_ids:
            try:
                ids.append(array(self.drivers.typecode, [driver_id]).tobytes())
            except OverflowError:  # an id the column's width cannot hold: nobody's
                continue
        if not ids:
            return []
        wanted = re.compile(b"|".join(map(re.escape, ids)))
        width, found = self.drivers.itemsize, []
        match = wanted.search(self.drivers)
        while match is not None:
            at = match.start()
            if at % width == 0 and self.has_driver[at // width]:
                found.append(at // width)
            match = wanted.search(self.drivers, at + 1)
        return found

    def driver(self, index: int) -> int | None:
        """The driver id of row `index`; None when it has none."""
        return self.drivers[index] if self.has_driver[index] else None

    def row(self, index: int) -> VehicleRow:
        plate = self.plates[index]
        return VehicleRow(
            id=self.ids[index],
            plate=plate,
            plate_display=plates.display(plate),
            model=self.model_names[self.model_codes[index]],
            active=self.actives[index] == 1,
            driver_id=self.driver(index),
        )

    def page(
        self,
        *,
        query: str,
        active: bool | None,
        sort: str,
        page: int,
        per_page: int,
        within: Within | None = None,
        drivers: tuple[int, ...] = (),
    ) -> _Page:
        """The rows of page `page` (clamped) of the filter, and its counts; kept by filter."""
        key = (query, active, sort, page, per_page, within.key if within else "", drivers)
        found = self._pages.get(key)
        if found is None:
            leading = within is None and self._leading(
                query=query, active=active, sort=sort, upto=page * per_page
            )
            matches: Sequence[int] = (
                range(self.count)  # every row, only counted: the page comes from a heap
                if leading
                else self.select(
                    query=query, active=active, sort=sort, within=within, drivers=drivers
                )
            )
            pages = max(1, math.ceil(len(matches) / per_page))
            page = min(max(page, 1), pages)
            start = (page - 1) * per_page
            if leading:
                # The first rows by plate without sorting the fleet: what a new version's
                # first page needs.
                # `nsmallest` is `sorted(...)[:n]`, ties in row order as the sort has them.
                first = heapq.nsmallest(start + per_page, matches, key=self.plates.__getitem__)
                shown = first[start:]
            else:
                shown = list(matches[start : start + per_page])
            rows = tuple(map(self.row, shown))
            found = _Page(rows, len(matches), page, pages)
            with self._build_lock:
                bounded_put(self._pages, key, found, size=PAGES_KEPT)
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

    def select(
        self,
        *,
        query: str,
        active: bool | None,
        sort: str,
        within: Within | None = None,
        drivers: tuple[int, ...] = (),
    ) -> Sequence[int]:
        """Row numbers matching the filter, in `sort` order: one pass, no sorting. The query
        also finds the vehicles of `drivers` (those whose names it fits).

        A filtered result stays a mask over the order: a page counts it and
        slices the rows it shows, without listing thousands of matches.
        """
        sort = sort if sort in SORTS else DEFAULT_SORT
        text = _fold(query)
        if not text and active is None and within is None:
            return self.order(sort)
        mask = self.within_mask(within, sort) if within is not None else None
        if text or active is not None:
            columns = self.columns(sort)
            if text and (found := self._query_mask(columns, text, sort, drivers)) is not None:
                mask = found if mask is None else mask_and(mask, found)
            if active is not None:
                wanted = columns.active if active else columns.inactive
                mask = wanted if mask is None else mask_and(mask, wanted)
        return self.order(sort) if mask is None else _Matches(self.order(sort), mask)

    def registrations(self) -> Iterator[str]:
        """Each row's plate in the Mercosul format (`plates.registration`)."""
        return map(plates.registration, self.plates)

    def within_mask(self, within: Within, sort: str | None = DEFAULT_SORT) -> bytes:
        """One byte per row in `sort` order (None: the list's), 1 for the rows of `within`;
        kept by its key."""
        key = (within.key, sort or "")
        mask = self._within.get(key)
        if mask is None:
            # A row is inside when its registration is, that is when its plate is one of
            # them or the old plate one of them replaced (the rows' plates as they are:
            # no registration worked out for each of a million rows).
            wanted = set(within.registrations)
            wanted.update(filter(None, map(plates.old_plate, within.registrations)))
            with self._build_lock:
                inside = bytes(map(wanted.__contains__, self.plates))
                if not within.inside:
                    inside = inside.translate(_FLIP)
                mask = inside if sort is None else bytes(map(inside.__getitem__, self.order(sort)))
                bounded_put(self._within, key, mask, size=PAGES_KEPT)
        return mask

    def _query_mask(
        self, columns: _Columns, text: str, sort: str, drivers: tuple[int, ...] = ()
    ) -> bytes | None:
        """Rows whose plate or model matches the folded query, or whose driver is one of
        `drivers`; None when every row does."""
        models = [n for n, folded in enumerate(self.model_folds) if text in folded]
        if len(models) == len(self.model_folds):
            return None
        masks = []
        # A whole plate finds the vehicle under either format: the list may hold the old
        # plate of a vehicle a notice names by its Mercosul one, or the other way round.
        plate_part = plates.normalize(text)
        for part in filter(None, (plate_part, plates.other_spelling(plate_part))):
            if (plate_mask := self._plate_mask(columns, part)) is not None:
                masks.append(plate_mask)
        if models and isinstance(columns.models, bytes):
            masks.append(columns.models.translate(bytes(n in models for n in range(256))))
        elif models:
            masks.append(bytes(map(set(models).__contains__, columns.models)))
        if drivers:
            masks.append(self._drivers_mask(drivers, sort))
        return reduce(mask_or, masks) if masks else bytes(self.count)

    def _drivers_mask(self, drivers: tuple[int, ...], sort: str) -> bytes:
        """Rows whose driver is one of `drivers`, in `sort` order: their rows found in C
        (`rows_of_drivers`), placed by their position in the order (`rank`)."""
        mask = bytearray(self.count)
        rank = self.rank(sort)
        for row in self.rows_of_drivers(drivers):
            mask[rank[row]] = 1
        return bytes(mask)

    def rank(self, sort: str) -> array[int]:
        """Each row's position in `sort` order (the order's inverse)."""
        rank = self._ranks.get(sort)
        if rank is None:
            with self._build_lock:
                rank = self._ranks.get(sort)
                if rank is None:
                    rank = array("i", [0]) * self.count
                    for position, row in enumerate(self.order(sort)):
                        rank[row] = position
                    self._ranks[sort] = rank
        return rank

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

    def order(self, sort: str) -> array[int]:
        """Row numbers in `sort` order: four bytes each (a million rows, 4 MB)."""
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

    def _columns_in(self, order: array[int]) -> _Columns:
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

    def _sorted(self, sort: str) -> array[int]:
        return array("i", self._sorted_rows(sort))

    def _sorted_rows(self, sort: str) -> Sequence[int]:
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

    def __init__(self, order: array[int], mask: bytes) -> None:
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
