"""How a page of a list of fines or notifications reads its records: by walking the index
of the list's order, each record checked against what selects it, or by finding every
selected record through an index of their own and sorting them.

Walking stops at the page's last record: it reads the page's records and those in
between that are not selected, so it is right when they are many (a region that holds
most of the fleet, a month of three years, a word most infractions have). Finding reads
and sorts every selected record: right when they are few (a vehicle, a notice number).
Each decision is made per page, from figures that cost a query or none: the
dashboard's tallies, the ends of the ids' index, and counts through an index that stop
where the answer no longer changes (a part of the fleet's kept an hour).

SQLite's planner cannot make it: it has no figures of how many records a value or a
range selects, and always finds them. There the portal decides, and a condition to be
checked is put in an EXISTS on the record's own key (`checked`), which no index can
drive: the only index left is the order's. PostgreSQL's planner makes the same choice
from its statistics (kept by autovacuum), for the page's LIMIT and OFFSET: its filters
are left as they are (an EXISTS would only hide them from it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from django.db import connection
from django.db.models import Exists, Max, Min, OuterRef, Q, QuerySet

from fleet.models import Fine, Notification, TallyDimension
from fleet.services.dashboard import COUNTED, fine_tallies_total
from fleet.services.scopes import VehicleScope
from portal.lib.caches import KeptValues

# How long what a walk is decided on is kept: the share of the fleet a part holds.
WALKED_SECONDS = 3600

# What a page decides how to read its records by, for each part of the fleet.
_walked = KeptValues("lists.scope_walked", timeout=WALKED_SECONDS)
_scope_past = KeptValues("lists.scope_past_counted", timeout=WALKED_SECONDS)


def scope_walked(scope: VehicleScope) -> bool:
    """Whether the lists of a part of the fleet walk the list's index, checking each
    fine against the part's plates (`VehicleScope.records`), rather than find the
    part's fines by their plates and sort them all.

    Finding and sorting costs what the part holds, F; walking costs, for the deepest
    page a list counts to, COUNTED of the whole T for each of the part's F: so a part
    walks once F * F > COUNTED * T. F is counted up to there (an index's entries, once
    an hour per part), T is the dashboard's tally; notifications follow the fines."""
    if scope.whole_fleet or scope.empty:
        return False
    threshold = math.isqrt(COUNTED * fine_tallies_total(TallyDimension.DAY).count)

    def walked() -> bool:
        return scope.records(Fine.objects.order_by())[: threshold + 1].count() > threshold

    return _walked.get_or_compute(walked, threshold.bit_length(), scope=scope)


def scope_past_counted(model: type[Fine] | type[Notification], scope: VehicleScope) -> bool:
    """Whether a part of the fleet holds more of `model`'s records than a list counts
    (`COUNTED`): then its unfiltered list says "more than" without counting them (a
    region's count read ten thousand fines through its plates, at every page). Counted
    once an hour per part: past the cap only deleting records changes the answer, and
    records are kept (the README's "What grows"); a part that grows past it meanwhile
    is counted with its list until then, as below it."""
    if scope.whole_fleet or scope.empty:
        return False

    def past() -> bool:
        return scope.records(model.objects.order_by())[: COUNTED + 1].count() > COUNTED

    return _scope_past.get_or_compute(past, model._meta.model_name, scope=scope)


def conditions_walked(
    model: type[Fine] | type[Notification],
    *,
    read: int,
    conditions: Mapping[str, Q],
    selected: Mapping[str, int] | None = None,
) -> frozenset[str]:
    """The names of `conditions` (the filters of a list that may select many records)
    that a page checks record by record while walking the list's index: all of them,
    or none.

    `read` is how many selected records the page's walk reads to its last (its number
    times the page's size). Of T records (`_span`), condition i selects F_i
    (`selected[name]` where the caller knows it, as the tallies count a month; else
    counted through the condition's index, `_selected`), together F = T * the product
    of F_i / T (as if independent). Walking reads `read` * T / F records; finding
    reads the smallest F_i and sorts them. The page walks when walking reads fewer.
    On SQLite only (the module's docstring)."""
    if not conditions or connection.vendor != "sqlite":
        return frozenset()
    total = _span(model)
    if not total:
        return frozenset()
    known = selected or {}
    enough = math.isqrt(read * total) + 1
    found = {
        name: known[name] if name in known else _selected(model, name, condition, enough)
        for name, condition in conditions.items()
    }
    share = math.prod(min(count, total) / total for count in found.values())
    if share and read / share < min(found.values()):
        return frozenset(conditions)
    return frozenset()


def _span(model: type[Fine] | type[Notification]) -> int:
    """How many records there are, about: the span of their ids, which are given in
    order (the oldest deleted first, if any is), read from the ends of the key's index
    (two queries: SQLite reads a whole table for a MIN and a MAX together)."""
    first: int | None = model.objects.aggregate(first=Min("pk"))["first"]
    last: int | None = model.objects.aggregate(last=Max("pk"))["last"]
    return 0 if first is None or last is None else last - first + 1


def _selected(model: type[Fine] | type[Notification], name: str, condition: Q, enough: int) -> int:
    """How many records `condition` selects, counted up to `enough` (the square root of
    the records a page reads times all of them: past it, walking reads fewer for that
    page; a first page counts to 22,000 of ten million)."""
    return model.objects.filter(condition).order_by()[:enough].count()


def states_checked() -> bool:
    """Whether a list whose records another index finds (a vehicle's, a driver's, a
    notice number's) checks their states (treated or not, with a document or not) one
    by one rather than filter by them: on SQLite, whose planner otherwise walks the
    list's index from its state (`treated = ?`, its first column), reading every
    untreated fine for the few it looks for, to spare sorting them."""
    return connection.vendor == "sqlite"


def checked[R: (Fine, Notification)](records: QuerySet[R], conditions: list[Q]) -> QuerySet[R]:
    """`records` that meet `conditions`, each record checked as it is read (an EXISTS on
    its own key, which no index drives): the database walks the index of the order."""
    if not conditions:
        return records
    model = records.model
    return records.filter(Exists(model.objects.filter(*conditions, pk=OuterRef("pk"))))
