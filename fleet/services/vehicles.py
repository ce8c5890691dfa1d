"""The fleet's vehicles for the portal's pages: search, export, one plate, drivers.

Every selector reads one snapshot of the whole fleet: shared by every worker
and refreshed by one of them (`fleet.services.vehicle_cache`), searched in
memory (`fleet.services.vehicle_index`). A page says how fresh the list it
shows is (`Freshness`); with no list at all, `FleetDataUnavailable` says why.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import compress, islice
from typing import Final

from django.conf import settings

from fleet import plates
from fleet.services.connection import fleet_cache_scope
from fleet.services.drivers import driver_names, drivers_find
from fleet.services.scopes import WHOLE_FLEET, VehicleScope, scope_within

# Re-exported: the pages name these without knowing how the list is kept.
from fleet.services.vehicle_cache import FleetDataUnavailable as FleetDataUnavailable
from fleet.services.vehicle_cache import Freshness as Freshness
from fleet.services.vehicle_cache import cached_snapshot, current_snapshot, vehicle_list_version
from fleet.services.vehicle_index import DEFAULT_SORT as DEFAULT_SORT
from fleet.services.vehicle_index import SORTS as SORTS
from fleet.services.vehicle_index import VehicleRow as VehicleRow
from fleet.services.vehicle_index import Within, mask_and
from portal.lib import after_response
from portal.lib.caches import KeptValues, caches_on

MAX_PER_PAGE: Final = 200
# Drivers whose vehicles a search by name finds at most: a name that fits more says so.
DRIVERS_SEARCHED: Final = 20


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
    part: str  # which part of the fleet it shows (`Within.key`); "" for the whole fleet
    # The query fits more drivers' names than it looked for (`DRIVERS_SEARCHED`).
    drivers_cut: bool = False


def vehicle_search(
    *,
    query: str = "",
    active: bool | None = None,
    sort: str = DEFAULT_SORT,
    page: int = 1,
    per_page: int = 50,
    scope: VehicleScope = WHOLE_FLEET,
    group: str = "",
) -> VehiclePage:
    """The page `page` of the vehicles of `scope` (narrowed to one of its groups by
    `group`, `scope_within`) matching `query` and `active`, in `sort` order.

    `query` matches a plate ignoring case, spaces and hyphens (a whole plate in either
    format), a model ignoring case and accents, or the name of the vehicle's driver
    (`drivers_named`). An unknown `sort` is the default; `page` is clamped to the pages
    there are; `per_page` to 1..MAX_PER_PAGE.
    """
    snapshot, freshness = current_snapshot()
    per_page = min(max(per_page, 1), MAX_PER_PAGE)
    within = scope_within(scope, group)
    drivers, cut = drivers_named(query, scope=scope)
    found = snapshot.page(
        query=query,
        active=active,
        sort=sort,
        page=page,
        per_page=per_page,
        within=within,
        drivers=drivers,
    )
    whole = within if not group else scope_within(scope)
    in_scope = snapshot.count if whole is None else snapshot.within_mask(whole).count(1)
    return VehiclePage(
        rows=found.rows,
        total=found.total,
        fleet_total=in_scope,
        page=found.page,
        pages=found.pages,
        per_page=per_page,
        freshness=freshness,
        version=snapshot.version,
        part=within.key if within is not None else "",
        drivers_cut=cut,
    )


def drivers_named(query: str, *, scope: VehicleScope = WHOLE_FLEET) -> tuple[tuple[int, ...], bool]:
    """The ids of the drivers of `scope` whose names a vehicle search fits (each word
    begins a word of the name: `drivers_find`, through the names' word index), in id order,
    `DRIVERS_SEARCHED` at most; and whether it fits more. A query with a digit is a plate's
    or a model's, never a name's."""
    if not any(char.isalpha() for char in query) or any(char.isdigit() for char in query):
        return (), False
    found = drivers_find(text=query, scope=scope, limit=DRIVERS_SEARCHED + 1)
    ids = sorted(choice.driver_id for choice in found[:DRIVERS_SEARCHED])
    return tuple(ids), len(found) > DRIVERS_SEARCHED


def vehicle_export(
    *,
    query: str = "",
    active: bool | None = None,
    sort: str = DEFAULT_SORT,
    scope: VehicleScope = WHOLE_FLEET,
    group: str = "",
) -> tuple[Iterator[VehicleRow], Freshness]:
    """Every vehicle of `scope` matching the filter, in order, made one at a time (for CSV)."""
    snapshot, freshness = current_snapshot()
    within = scope_within(scope, group)
    drivers, _cut = drivers_named(query, scope=scope)
    found = snapshot.select(query=query, active=active, sort=sort, within=within, drivers=drivers)
    return map(snapshot.row, found), freshness


# Rows whose drivers' names are read together (`vehicles_named`).
_NAMED_TOGETHER = 500


def vehicles_named(rows: Iterable[VehicleRow]) -> Iterator[tuple[VehicleRow, str]]:
    """Each row with its driver's name ("" without a driver or a known name): the names read
    for `_NAMED_TOGETHER` rows at a time, as an export streams them."""
    iterator = iter(rows)
    while batch := list(islice(iterator, _NAMED_TOGETHER)):
        names = driver_names([row.driver_id for row in batch if row.driver_id is not None])
        for row in batch:
            yield row, names.get(row.driver_id, "") if row.driver_id is not None else ""


def vehicle_get(*, plate: str, scope: VehicleScope = WHOLE_FLEET) -> VehicleRow | None:
    """The vehicle of `scope` with this plate (typed any way `plates.normalize` accepts), if
    any; found under the plate's other format too (`plates.other_spelling`): a vehicle the
    fleet lists under its old plate by its registration (the Mercosul form its fines
    name), one it lists under its Mercosul plate by the old plate a record was issued to."""
    if not scope.covers(plate):
        return None
    snapshot, _freshness = current_snapshot()
    index = snapshot.find(plates.normalize(plate))
    if index is None and (other := plates.other_spelling(plate)) is not None:
        index = snapshot.find(other)
    return None if index is None else snapshot.row(index)


def vehicle_outside(*, plate: str, scope: VehicleScope) -> bool:
    """Whether the fleet lists the vehicle `plate` (either format) and `scope` does not
    hold it: what its page tells a person outside the vehicle's groups, rather than that
    the fleet has no such vehicle. False without a list to read."""
    if scope.whole_fleet or scope.covers(plate):
        return False
    try:
        return vehicle_get(plate=plate) is not None
    except FleetDataUnavailable:
        return False


def fleet_registrations() -> frozenset[str] | None:
    """The registration of every vehicle of the list (`plates.registration`); None when
    there is no list to read."""
    try:
        snapshot, _freshness = current_snapshot()
    except FleetDataUnavailable:
        return None
    return frozenset(snapshot.registrations())


def vehicles_ungrouped() -> int | None:
    """How many vehicles of the list are in no vehicle group; None without a list, or
    while it is being counted.

    At a million vehicles counting takes seconds (every grouped registration read and
    looked up, the list decoded in a process that has not yet), so a request leaves it
    for after its response and a later one shows it: the request reads two small cache
    keys. The count is kept for every worker by the list's version and the groups' key.
    """
    within = scope_within(WHOLE_FLEET, "none")
    if within is None:
        return 0
    version = vehicle_list_version()
    if version is not None and isinstance(found := _ungrouped.get(*_of(version, within)), int):
        return found

    def count() -> int | None:
        try:
            snapshot, _freshness = current_snapshot()
        except FleetDataUnavailable:
            return None
        counted = snapshot.within_mask(within, None).count(1)
        _ungrouped.set(counted, *_of(snapshot.version, within))
        return counted

    # Left for after the response only when it will be kept for the next one to show.
    if after_response.in_request() and caches_on(_ungrouped.name):
        after_response.later(count)
        return None
    return count()


# The whole fleet's count of vehicles in no group, by the list's version and the groups'
# key: the same for whoever is shown it. Kept as long as the list's version may be.
_ungrouped = KeptValues(
    "vehicles.ungrouped",
    timeout=lambda: math.ceil(settings.FLEET_VEHICLES_KEEP),
    for_everyone=True,
)


def _of(version: str, within: Within) -> tuple[str, str, str]:
    return (fleet_cache_scope(), version, within.key)


def vehicle_drivers(*, registrations: Iterable[str], fetch: bool = True) -> dict[str, int] | None:
    """The driver of each vehicle among `registrations` (plates in the Mercosul format,
    `plates.registration`) that has one in the vehicle list.

    None when there is no list to read: with `fetch=False` (inside a transaction, where
    no API call may wait) only a list this process or the cache already holds is read.
    """
    if fetch:
        try:
            snapshot, _freshness = current_snapshot()
        except FleetDataUnavailable:
            return None
    else:
        found = cached_snapshot()
        if found is None:
            return None
        snapshot = found
    return snapshot.drivers_of(registrations)


def fleet_driver_ids(*, scope: VehicleScope = WHOLE_FLEET) -> list[int]:
    """Every driver id the vehicle list gives a vehicle of `scope`, in order."""
    snapshot, _freshness = current_snapshot()
    present = snapshot.has_driver
    if (within := scope_within(scope)) is not None:
        present = mask_and(present, snapshot.within_mask(within, None))
    return sorted(set(compress(snapshot.drivers, present)))


def driver_vehicles(*, driver_id: int, scope: VehicleScope = WHOLE_FLEET) -> list[VehicleRow]:
    """The vehicles of `scope` the vehicle list gives to driver `driver_id`, in plate order."""
    snapshot, _freshness = current_snapshot()
    found = map(snapshot.row, snapshot.rows_of_driver(driver_id))
    return sorted(
        (row for row in found if scope.covers(row.plate)), key=operator.attrgetter("plate")
    )


def vehicles_refresh() -> Freshness:
    """Fetch the list now (the page's refresh button), unless the route is
    cooling down or another worker is already fetching it."""
    _snapshot, freshness = current_snapshot(force=True)
    return freshness
