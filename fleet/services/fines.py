"""Fines and notifications as the pages show them: lists, filters, totals, saved views.

Records come only from webhooks (`fleet.webhooks.processing`); these are reads (the
attribution of fines to their drivers writes: `fleet.services.attribution`). Untreated
records come first, then the most recently changed. A user's saved filters of the
list: `fleet.services.saved_views`.

One module: the lists of fines and of notifications select through the same records
(`_records`), walks and counts, and each export reads exactly what its list shows.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any, Final, cast

from django.core.paginator import Page
from django.db.models import Count, F, Q, QuerySet, Sum

from fleet import plates
from fleet.models import (
    DriverBasis,
    Fine,
    Notification,
    TallyDimension,
    Wording,
    of_vehicle,
)
from fleet.services.dashboard import (
    COUNTED,
    fine_tallies_total,
    fine_totals,
    local_midnight,
    month_start,
)
from fleet.services.drivers import fines_named, prefix_end
from fleet.services.figures import Total
from fleet.services.list_walks import (
    WALKED_SECONDS,
    checked,
    conditions_walked,
    scope_past_counted,
    scope_walked,
    states_checked,
)
from fleet.services.paging import CappedPaginator, streamed
from fleet.services.scopes import VehicleScope
from fleet.services.tallies import (
    day_key,
    fine_tallies_version,
    month_key,
)
from portal.lib.caches import KeptValues

PER_PAGE = 50
# Untreated first, then the latest changed.
LIST_ORDER = ("treated", "-updated_at", "-id")


# Records a vehicle's page lists of each kind; the lists it links to have them all.
VEHICLE_LISTED = 10


@dataclass(frozen=True, slots=True)
class VehicleRecords:
    """A vehicle's fines and notifications, as its page sums them up and lists the first."""

    fines: int
    untreated_fines: int
    fines_amount: Decimal  # R$, the fines whose amount could be read
    untreated_amount: Decimal
    notifications: int
    untreated_notifications: int
    # The first VEHICLE_LISTED of each, in the lists' order (untreated first).
    listed_fines: list[Fine]
    listed_notifications: list[Notification]


def vehicle_records(plate: str, *, scope: VehicleScope) -> VehicleRecords:
    """How many fines and notifications name the vehicle `plate`, in either plate format,
    and the first of each: four queries at most. A vehicle outside `scope` has none."""
    registration = plates.registration(plate)  # the records' key for the vehicle
    if not scope.covers(registration):
        registration = "-"  # no record has it
    untreated = Q(treated=False)
    counts = {
        model: model.objects.filter(of_vehicle(registration)).aggregate(
            all=Count("pk"), untreated=Count("pk", filter=untreated), **sums
        )
        for model, sums in (
            (
                Fine,
                {
                    "amount_all": Sum("amount", default=Decimal(0)),
                    "untreated_amount": Sum("amount", filter=untreated, default=Decimal(0)),
                },
            ),
            (Notification, {}),
        )
    }
    fines = Fine.objects.filter(of_vehicle(registration)).order_by(*LIST_ORDER)
    notifications = Notification.objects.filter(of_vehicle(registration)).order_by(*LIST_ORDER)
    listed_fines = list(fines[:VEHICLE_LISTED]) if counts[Fine]["all"] else []
    fines_named(listed_fines)
    return VehicleRecords(
        fines=counts[Fine]["all"],
        untreated_fines=counts[Fine]["untreated"],
        fines_amount=counts[Fine]["amount_all"],
        untreated_amount=counts[Fine]["untreated_amount"],
        notifications=counts[Notification]["all"],
        untreated_notifications=counts[Notification]["untreated"],
        listed_fines=listed_fines,
        listed_notifications=(
            list(notifications[:VEHICLE_LISTED]) if counts[Notification]["all"] else []
        ),
    )


# How the fines list may be sorted besides its default (untreated first, latest changed).
FINE_SORTS = {
    "-occurred_at": (F("occurred_at").desc(nulls_last=True), "-id"),
    "occurred_at": (F("occurred_at").asc(nulls_last=True), "id"),
    "-amount": (F("amount").desc(nulls_last=True), "-id"),
    "amount": (F("amount").asc(nulls_last=True), "id"),
}


@dataclass(frozen=True, slots=True)
class ListTotal:
    """How many records a list's filters select and their R$: `more` when there are more
    than `count` (`COUNTED`), and `amount` then None (unless the tallies have it)."""

    count: int
    amount: Decimal | None
    more: bool = False


# What one page of the list looks up more than once while `fine_list_page` builds it
# (a search's wordings, a tally), by what was looked up; None outside.
_looked_up: ContextVar[dict[Hashable, Any] | None] = ContextVar(
    "fleet_fines_looked_up", default=None
)


def _once[T](key: Hashable, look_up: Callable[[], T]) -> T:
    """`look_up()`, done once per key while `fine_list_page` builds a page; else each time."""
    found = _looked_up.get()
    if found is None:
        return look_up()
    if key not in found:
        found[key] = look_up()
    return cast(T, found[key])


def fine_list_page(
    *, scope: VehicleScope, page: int = 1, **filters: Any
) -> tuple[Page[Fine], ListTotal]:
    """A page of the fines `filters` select (`fine_search`) and the count and R$ of all of
    them (`fine_list_total`), each looking up what both need once: the wordings a search
    finds, the tallies, the count (up to `COUNTED`)."""
    with _looking_up_once():
        listed = fine_search(scope=scope, page=page, **filters)
        listed.object_list = list(listed.object_list)
        fines_named(listed.object_list)
        return listed, fine_list_total(scope=scope, listed=listed, **filters)


@contextmanager
def _looking_up_once() -> Iterator[None]:
    """Within, `_once` looks each thing up once (and not beyond: a list's next page looks
    again)."""
    unset = _looked_up.set({})
    try:
        yield
    finally:
        _looked_up.reset(unset)


def fine_search(*, scope: VehicleScope, page: int = 1, **filters: Any) -> Page[Fine]:
    """One page of fines; `fine_filtered` says what `filters` select and in which order,
    `_fines_walked` how the page reads them."""
    walked = _fines_walked(scope=scope, page=page, **filters)
    tallied = _whole_fleet_tally(scope, filters)
    past = _part_past_counted(scope, filters) or _search_past_counted(scope, filters)
    by_basis = None if past else _basis_total(scope, filters)
    known = COUNTED + 1 if past else (by_basis[0] if by_basis is not None else None)
    return CappedPaginator(
        fine_filtered(scope=scope, walked=walked, **filters),
        PER_PAGE,
        counted=fine_filtered(scope=scope, counting=True, **filters),
        known=known if tallied is None else tallied.count,
    ).get_page(page)


# The basis filter's value for a driver the history or a person established (a fact):
# what the dashboard's drivers count, and its links to their fines select.
ESTABLISHED = "established"
ESTABLISHED_BASES: Final = (DriverBasis.HISTORY.value, DriverBasis.MANUAL.value)

# How many of a part's fines a list by how their driver is known holds, by version.
_basis_kept = KeptValues("lists.basis_counted", timeout=WALKED_SECONDS)

# Sorts in which a filter's own index gives the fines in order: a filter never walked.
_SORTED_BY = {"month": ("occurred_at", "-occurred_at"), "amount": ("amount", "-amount")}


def _fines_walked(
    *,
    scope: VehicleScope,
    page: int,
    plate: str = "",
    driver: int | None = None,
    basis: str = "",
    sort: str = "",
    **filters: Any,
) -> frozenset[str]:
    """Which filters a page of fines checks fine by fine as it walks the list's index
    (`conditions_walked`): none for a vehicle's or a driver's fines (few), nor for a
    small part of the fleet (found by its plates), nor for those by how their driver is
    known (their own index, in the list's order); a month and the fines received since a
    day are counted by the tallies."""
    own_index = basis and basis != ESTABLISHED
    _q, plate = searched_plate(filters.get("q") or "", plate)  # a plate searched: its filter
    found = plate or driver is not None or own_index
    if found or not (scope.whole_fleet or scope_walked(scope)):
        return frozenset()
    conditions = {
        name: condition
        for name, condition in _fine_conditions(
            **_walkable(filters), established=basis == ESTABLISHED
        ).items()
        if sort not in _SORTED_BY.get(name, ())
    }
    selected = {}
    if "month" in conditions:
        key = month_key(filters["month"])
        selected["month"] = _tally(TallyDimension.MONTH, key).count
    if "received_from" in conditions:
        since = day_key(filters["received_from"])
        selected["received_from"] = _tally(TallyDimension.DAY, since=since).count
    return conditions_walked(
        Fine, read=_page_number(page) * PER_PAGE, conditions=conditions, selected=selected
    )


def _walkable(filters: dict[str, Any]) -> dict[str, Any]:
    names = ("q", "month", "amount_min", "amount_max", "received_from")
    return {name: filters[name] for name in names if name in filters}


def _page_number(page: int | str) -> int:
    """The page asked for, as the paginator will read it (a wrong one: the first)."""
    try:
        return max(int(page), 1)
    except (TypeError, ValueError):
        return 1


def fine_list_total(
    *, scope: VehicleScope, listed: Page[Fine] | None = None, **filters: Any
) -> ListTotal:
    """The count and R$ of the fines `filters` select: from the tallies (a few rows) when
    the whole fleet is filtered as the dashboard counts it (nothing, untreated, a month,
    without document, received since a day); else summed over them if they are
    `COUNTED` or fewer. `listed`: a page of the same fines (`fine_search`), counted
    already for the page (up to `COUNTED`): they are not counted again."""
    if (tallied := _whole_fleet_tally(scope, filters)) is not None:
        return ListTotal(tallied.count, tallied.amount)
    if _part_past_counted(scope, filters):
        return ListTotal(COUNTED, None, more=True)
    if (by_basis := _basis_total(scope, filters)) is not None:
        count, amount = by_basis
        if count > COUNTED:
            return ListTotal(COUNTED, None, more=True)
        return ListTotal(count, amount)
    fines = fine_filtered(scope=scope, counting=True, **filters).order_by()
    paginator = None if listed is None else listed.paginator
    if isinstance(paginator, CappedPaginator):
        counted, past = paginator.count, paginator.capped  # the same fines, for the page
    else:
        counted = fines[: COUNTED + 1].count()
        past = counted > COUNTED
    if past:
        return ListTotal(COUNTED, None, more=True)
    return ListTotal(counted, fine_totals(fines).amount)


def _whole_fleet_tally(scope: VehicleScope, filters: dict[str, Any]) -> Total | None:
    """The dashboard's tally of what `filters` select, if one counts exactly that."""
    return _tallied(_chosen(filters)) if scope.whole_fleet else None


def _chosen(filters: dict[str, Any]) -> dict[str, Any]:
    """The filters given a value: those that select (the sort, which only orders, left out)."""
    return {
        name: value for name, value in filters.items() if value not in (None, "") and name != "sort"
    }


def _part_past_counted(scope: VehicleScope, filters: dict[str, Any]) -> bool:
    """Whether the unfiltered list of a part of the fleet holds more fines than a list
    counts, known without counting them (`scope_past_counted`)."""
    return not _chosen(filters) and scope_past_counted(Fine, scope)


def _search_past_counted(scope: VehicleScope, filters: dict[str, Any]) -> bool:
    """Whether the fines of a search's infractions alone, with the other filters, are more
    than a list counts: then the search's are too, and they are not counted. A search
    finds in several ways at once (`records_searched`), and PostgreSQL reads every
    fine of each way into one bitmap before it counts the first: 21 ms at ten million
    fines for a word most infractions have, where the infractions' index alone gives
    ten thousand of them in one or two."""
    q = filters.get("q")
    wordings = _wordings_found(q) if q else []
    if not wordings:
        return False
    others = _chosen(filters)
    del others["q"]
    fines = fine_filtered(scope=scope, counting=True, **others)
    found = fines.filter(infraction_id__in=wordings)
    return found.order_by()[: COUNTED + 1].count() > COUNTED


def _basis_total(scope: VehicleScope, filters: dict[str, Any]) -> tuple[int, Decimal | None] | None:
    """How many fines of a part of the fleet a list by how their driver is known (and
    treated or not) holds, up to one past `COUNTED`, and their R$ (when not past it);
    None for other filters. Kept under the tallies' version (`fine_tallies_version`),
    which every writer of fines moves in its transaction: exact whenever read, counted
    again after any change. Counting read the basis index's entries of the fleet, each
    checked against a region's plates, and the sum each fine's row: 78 ms on PostgreSQL
    at ten million fines for a region's probable drivers (10,001 of them), 22 ms on
    SQLite for the fleet's 4,165 uncertain ones, where the page itself takes 2."""
    chosen = _chosen(filters)
    if not chosen.get("basis") or set(chosen) - {"basis", "treated"}:
        return None

    def counted() -> tuple[int, Decimal | None]:
        fines = fine_filtered(scope=scope, counting=True, **chosen).order_by()
        count = int(fines[: COUNTED + 1].count())
        return count, (fine_totals(fines).amount if count <= COUNTED else None)

    version = _once(("version",), fine_tallies_version)
    count, amount = _basis_kept.get_or_compute(
        counted, chosen["basis"], chosen.get("treated"), version, scope=scope
    )
    return int(count), amount


def _tally(dimension: TallyDimension, key: str | None = None, *, since: str = "") -> Total:
    """`fine_tallies_total`, once per page (`_once`)."""
    return _once(
        ("tally", dimension, key, since), lambda: fine_tallies_total(dimension, key, since=since)
    )


def _tallied(chosen: dict[str, Any]) -> Total | None:
    """The dashboard's tally of these filters, if one counts exactly them."""
    if not chosen:
        return _tally(TallyDimension.DAY)
    if chosen == {"treated": False}:
        return _tally(TallyDimension.UNTREATED, "")
    if chosen == {"document": False}:
        return _tally(TallyDimension.WITHOUT_DOCUMENT, "")
    if set(chosen) == {"month"}:
        return _tally(TallyDimension.MONTH, month_key(chosen["month"]))
    if set(chosen) == {"received_from"}:
        since = day_key(chosen["received_from"])
        return _tally(TallyDimension.DAY, since=since)
    return None


def fine_get(*, scope: VehicleScope, fine_id: int) -> Fine | None:
    """The fine `fine_id` if `scope` sees it."""
    return scope.records(Fine.objects.filter(pk=fine_id)).first()


def notification_get(*, scope: VehicleScope, notification_id: int) -> Notification | None:
    """The notification `notification_id` if `scope` sees it."""
    return scope.records(Notification.objects.filter(pk=notification_id)).first()


def fine_filtered(
    *,
    scope: VehicleScope,
    q: str = "",
    treated: bool | None = None,
    document: bool | None = None,
    plate: str = "",
    driver: int | None = None,
    month: date | None = None,
    amount_min: Decimal | None = None,
    amount_max: Decimal | None = None,
    received_from: date | None = None,
    basis: str = "",
    sort: str = "",
    walked: frozenset[str] = frozenset(),
    counting: bool = False,
) -> QuerySet[Fine]:
    """The fines the list's filters select, in the list's order.

    `q` looks in the notice number, the infraction and the platform's id; `treated`;
    `document` (has its official document); `plate` (the vehicle, in either plate
    format); `driver` (the driver id the fine was attributed to); `month` (committed
    in that month, local time; its first day); `amount_min`/`amount_max` (R$, both
    included); `received_from` (received on or after that local day); `basis`
    (how the driver is known, `DriverBasis`' value: "list", probable, only where the
    vehicle list named one; `ESTABLISHED`, a fact: the history's or a person's); `sort`,
    one of
    `FINE_SORTS` (else the default order); only those `scope` sees. The filters named
    in `walked` are checked fine by fine as the list's index is walked (`fine_search`);
    `counting`: to be counted, not listed (a part of the fleet found by its plates).
    A plate typed in the search is the vehicle's plate filter (`searched_plate`).
    """
    q, plate = searched_plate(q, plate)
    conditions = _fine_conditions(
        q=q,
        month=month,
        amount_min=amount_min,
        amount_max=amount_max,
        received_from=received_from,
        established=basis == ESTABLISHED,
    )
    if driver is not None:
        conditions["driver"] = Q(driver_id=driver)
    if basis in DriverBasis.values and basis:
        conditions["basis"] = Q(driver_basis=basis)
        if basis == DriverBasis.LIST:
            conditions["basis"] &= Q(driver_id__isnull=False)
    states = _states(treated)
    if document is not None:
        states.append(~Q(link_frame="") if document else Q(link_frame=""))
    fines = _records(
        Fine,
        scope=scope,
        states=states,
        plate=plate,
        conditions=conditions,
        walked=walked,
        counting=counting,
    )
    return fines.order_by(*FINE_SORTS.get(sort, LIST_ORDER))


def _fine_conditions(
    *,
    q: str = "",
    month: date | None = None,
    amount_min: Decimal | None = None,
    amount_max: Decimal | None = None,
    received_from: date | None = None,
    established: bool = False,
) -> dict[str, Q]:
    """What the filters that may select many fines select, by name. `established`: the
    fines whose driver the history or a person established (most of them: walked, or
    checked, as a month is; no index gives two bases in the list's order)."""
    conditions = {}
    if established:
        conditions["established"] = Q(driver_basis__in=ESTABLISHED_BASES)
    if q:
        conditions["q"] = records_searched(Fine, q)
    if month is not None:
        conditions["month"] = Q(
            occurred_at__gte=local_midnight(month),
            occurred_at__lt=local_midnight(month_start(month, back=-1)),
        )
    amounts = Q()
    if amount_min is not None:
        amounts &= Q(amount__gte=amount_min)
    if amount_max is not None:
        amounts &= Q(amount__lte=amount_max)
    if amounts:
        conditions["amount"] = amounts
    if received_from is not None:
        conditions["received_from"] = Q(received_at__gte=local_midnight(received_from))
    return conditions


def notification_search(
    *,
    scope: VehicleScope,
    q: str = "",
    treated: bool | None = None,
    plate: str = "",
    page: int = 1,
) -> Page[Notification]:
    """One page of the notifications `scope` sees; `q` (in the title, or the
    platform's id), `treated` and `plate` (the vehicle) filter. A search that finds
    many is checked notification by notification as the list's index is walked
    (`conditions_walked`)."""
    q, plate = searched_plate(q, plate)
    searched = {"q": records_searched(Notification, q)} if q else {}
    walked = (
        conditions_walked(Notification, read=_page_number(page) * PER_PAGE, conditions=searched)
        if searched and not plate and (scope.whole_fleet or scope_walked(scope))
        else frozenset()
    )
    listed, counted = (
        _records(
            Notification,
            scope=scope,
            states=_states(treated),
            plate=plate,
            conditions=searched,
            walked=walked if not counting else frozenset(),
            counting=counting,
        ).order_by(*LIST_ORDER)
        for counting in (False, True)
    )
    unfiltered = not (q or plate) and treated is None
    known = COUNTED + 1 if unfiltered and scope_past_counted(Notification, scope) else None
    return CappedPaginator(listed, PER_PAGE, counted=counted, known=known).get_page(page)


def notification_export(
    *, scope: VehicleScope, q: str = "", treated: bool | None = None, plate: str = ""
) -> Iterator[Notification]:
    """Every notification `notification_search` would list, in its order."""
    q, plate = searched_plate(q, plate)
    searched = {"q": records_searched(Notification, q)} if q else {}
    notifications = _records(
        Notification,
        scope=scope,
        states=_states(treated),
        plate=plate,
        conditions=searched,
    )
    return streamed(notifications.order_by(*LIST_ORDER))


# Wordings a search looks for at most: a word most infractions have finds these.
SEARCHED_WORDINGS = 20


def _states(treated: bool | None) -> list[Q]:
    return [] if treated is None else [Q(treated=treated)]


def _records[R: (Fine, Notification)](
    model: type[R],
    *,
    scope: VehicleScope,
    states: list[Q],
    plate: str,
    conditions: dict[str, Q],
    walked: frozenset[str] = frozenset(),
    counting: bool = False,
) -> QuerySet[R]:
    """The records of `scope` of the vehicle `plate` that `conditions` select, those
    named in `walked` checked one by one as the list's index is walked, and in the
    `states` (treated or not, with a document or not): filters of the list's own
    indexes, checked too where the records are found by another
    (`fleet.services.list_walks`). A part of the fleet that holds many records walks
    the list with a check of its plates, unless `counting` (up to COUNTED: found by its
    plates, through their index, it reads no record it does not count). The fines by how
    their driver is known are read from their own index (`fleet_fine_basis`, in the
    list's order), each checked against the part's plates, counted too (found by the
    plates, a large part's count read every fine it holds: 37 s at ten million)."""
    few = "basis" in conditions
    walked_scope = not plate and (few or not counting) and scope_walked(scope)
    if plate:
        # One vehicle: in the part of the fleet (its plates, kept per part) or not at all;
        # through the plate index alone. With the part's plates in the query, SQLite read
        # them all (56 ms for a region of a million vehicles' fleet) for each count.
        registration = plates.registration(plate)
        records = model.objects.filter(of_vehicle(registration))
        if not scope.covers(registration):
            records = records.none()
    else:
        records = scope.records(model.objects.all(), walked=walked_scope)
    records = records.filter(
        *(condition for name, condition in conditions.items() if name not in walked)
    )
    checks = [condition for name, condition in conditions.items() if name in walked]
    found = plate or len(checks) < len(conditions) or not (scope.whole_fleet or walked_scope)
    if found and states_checked():
        return checked(records, checks + states)
    return checked(records.filter(*states), checks)


def searched_plate(q: str, plate: str) -> tuple[str, str]:
    """A search that is a plate, in either format, as the list's plate filter (`q` then
    empty), unless the plate filter is set already: a vehicle's few records through the
    plate index. As a search, a region's count read every fine of the region's plates
    for the few of one vehicle: 16 s on SQLite at ten million fines. No notice number,
    platform id or wording has a plate's shape."""
    if q and not plate and plates.is_valid(q):
        return "", q
    return q, plate


def records_searched(model: type[Fine] | type[Notification], q: str) -> Q:
    """The records `q` finds, each way through an index: the platform's id; a fine's
    notice number or its beginning (as typed, or in capitals); a wording (a fine's
    infraction, a notification's title) that has `q` (`Wording`: a few rows, not one per
    record); a vehicle's records when `q` is its plate, in either format (the records
    keep its registration, `plates.registration`)."""
    found = Q(key=f"id:{q}")
    if plates.is_valid(q):
        found |= of_vehicle(plates.registration(q))
    if model is Fine:
        for typed in dict.fromkeys((q, q.upper())):
            found |= Q(reference__gte=typed, reference__lt=prefix_end(typed))
    if wordings := _wordings_found(q):
        found |= Q(**{f"{'infraction' if model is Fine else 'heading'}_id__in": wordings})
    return found


def _wordings_found(q: str) -> list[int]:
    """The wordings (`SEARCHED_WORDINGS` at most) that have `q`: infractions and titles."""
    wordings = Wording.objects.filter(text__icontains=q).values_list("pk", flat=True)
    return _once(("wordings", q), lambda: list(wordings[:SEARCHED_WORDINGS]))
