"""The dashboard's figures: untreated fines in R$ and their count, fines by month, the
vehicles and drivers with the most untreated R$, the fines received lately, the fines
without their document, the vehicles with the most untreated fines, and the fines whose
driver is still to be indicated (overdue, due within a week, the NICs they would bring).

Every figure is read from the running sums that the writes of fines keep in their own
transaction (`fleet.services.tallies`): a few rows each, however many fines there are.
The figures are kept in the cache under the tallies' version and today's date, so that
a dashboard reads one row while no fine changed, and a handful of small indexed
queries, never the fines, once one did: a fine written shows at once. A vehicle group
(a region) has tallies of its own, read the same way once they count its plates as
they are; until then, and for a part of the fleet made of several groups, the figures
are summed from its fines by the worker and shown from the cache (`_scoped_figures`):
a page never waits for that sum. The writers of
fines read them and render their fragment for the cache themselves: processing in the
transaction that writes a run's last batch, for the moment it commits
(`fine_figures_publish`), the others once they are done (`fine_figures_prepare`). With
a cache the portal's processes share, the next dashboard finds them ready.

It is one module because the figures are read, kept and published together, under one
version: apart, each part would have to agree with the others on it.
"""

from __future__ import annotations

import dataclasses
import logging
import operator
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import Decimal
from functools import reduce
from typing import Any, Final, cast

from django.conf import settings
from django.core.cache import cache, caches
from django.db import transaction
from django.db.models import Count, DecimalField, Min, Q, QuerySet, Sum, Value
from django.db.models.functions import Coalesce
from django.template.loader import render_to_string
from django.urls import get_script_prefix
from django.utils import timezone, translation

from fleet.models import (
    DriverBasis,
    Fine,
    FineTally,
    GroupTally,
    Notification,
    TallyDimension,
    VehicleGroupPlate,
)
from fleet.services.drivers import driver_names, driver_names_version
from fleet.services.figures import (
    NIC_MULTIPLIER,
    DriverFigure,
    FinedVehicle,
    FineFigures,
    MonthFigure,
    Total,
    VehicleFigure,
)
from fleet.services.scopes import WHOLE_FLEET, VehicleScope, scope_of_groups
from fleet.services.tallies import (
    day_key,
    fine_tallies_counted,
    fine_tallies_version,
    group_tallies_current,
    month_key,
    tally_amount,
)
from fleet.webhooks.payloads import payload_plate
from portal.lib import worker
from portal.lib.caches import KeptValues, caches_on

logger = logging.getLogger(__name__)

TOP: Final = 5  # vehicles and drivers listed
MONTHS: Final = 12
RECENT_DAYS: Final = 7
# "To indicate within 7 days": the fines whose deadline is today or in the next 7 days.
INDICATE_SOON_DAYS: Final = 7
_CACHE_SECONDS: Final = 300
_CACHE_FORMAT: Final = 5
_READ_ATTEMPTS: Final = 3
# A part of the fleet's figures are kept a day (shown, then read again, once a fine
# changed).
_SCOPED_CACHE_SECONDS: Final = 86_400
# One task counts a part's figures at a time; asked again after this long without its
# answer (a worker stopped mid-way).
_SCOPED_COUNTING_SECONDS: Final = 1800
_GENERATION: Final = "fleet:fine-figures:generation"

# The figures of the whole fleet and of a group, by when they were read (`_read_at`).
_figures_kept = KeptValues("dashboard.figures", timeout=_CACHE_SECONDS)
# A part of several groups' figures with when they were read: shown, then read again.
# Summed by the worker, so kept where every process reads (`CACHES["shared"]`).
_scoped_kept = KeptValues("dashboard.scoped_figures", timeout=_SCOPED_CACHE_SECONDS, alias="shared")
# The fragment about money, by the figures it shows (whose key names their part of the
# fleet) and the script prefix its links start with, which a worker's may not share.
_money_kept = KeptValues("dashboard.money_html", timeout=_CACHE_SECONDS, for_everyone=True)
_ZERO: Final = Decimal("0.00")

type Tallies = dict[tuple[str, str], tuple[int, int]]


@dataclass(frozen=True, slots=True)
class _Tallies:
    """Where figures are read: the whole fleet's tallies, or a group's (`part`, the
    condition of its rows)."""

    model: type[FineTally] | type[GroupTally]
    part: Q = field(default_factory=Q)

    def any_of(self, *conditions: Q) -> QuerySet[Any]:
        """Its rows that meet any of `conditions`, each with the part's condition: SQLite
        reads each through the index of the keys (with the part's condition apart, it read
        every row of the group, a million at a region of a million vehicles' fleet)."""
        return self.model.objects.filter(reduce(operator.or_, (self.part & c for c in conditions)))


# A list counts its records up to this many: past it, "10,000 or more" (and that many
# pages), so that a page of ten million fines costs what one of ten thousand does. The
# dashboard's count of untreated notifications (which have no tallies) likewise.
COUNTED = 10_000


@dataclass(frozen=True, slots=True)
class RecordCounts:
    untreated_fines: int
    fines_without_document: int
    untreated_notifications: int  # at most COUNTED
    most_fined: list[FinedVehicle]
    more_untreated_notifications: bool = False  # than COUNTED
    behind: datetime | None = None  # as the figures they come from (`FineFigures.behind`)


def record_counts(
    *, scope: VehicleScope = WHOLE_FLEET, figures: FineFigures | None = None
) -> RecordCounts:
    """The counts the dashboard polls for `scope`: the fines' from the cached figures
    (`figures`, if the caller has them); the untreated notifications, up to `COUNTED`,
    the whole fleet's counted on their list's index, a part of the fleet's kept with its
    figures (`_untreated_notifications`)."""
    figures = figures or fine_figures(scope=scope)
    counted = figures.untreated_notifications
    if counted is None:
        counted = _untreated_notifications(scope)
    return RecordCounts(
        untreated_fines=figures.untreated.count,
        fines_without_document=figures.without_document,
        untreated_notifications=min(counted, COUNTED),
        most_fined=figures.most_fined,
        more_untreated_notifications=counted > COUNTED,
        behind=figures.behind,
    )


def _untreated_notifications(scope: VehicleScope) -> int:
    """`scope`'s untreated notifications, counted up to `COUNTED` + 1: the whole fleet's
    on their list's index; a part of the fleet's through its plates, one look in the
    index of plates for each until that many are found: as many as the part has
    vehicles when few are untreated. A part's is counted with its figures, and kept with
    them."""
    notifications = scope.records(Notification.objects.filter(treated=False))
    return notifications.order_by()[: COUNTED + 1].count()


def fine_figures(*, scope: VehicleScope = WHOLE_FLEET) -> FineFigures:
    """The figures of the fines `scope` sees, from the cache while the tallies' version is
    the one they were read at, else read from the tallies: the whole fleet's, or its
    group's (`GroupTally`) for a part of the fleet that is one group whose tallies count
    its plates as they are; any other part's as `_scoped_figures` keeps them, read here
    and now when none are kept (a task, a shell: nobody waits on a web server)."""
    figures = _figures(scope, here=True)
    assert figures is not None  # read here when none are kept
    return figures


def fine_figures_shown(*, scope: VehicleScope = WHOLE_FLEET) -> FineFigures | None:
    """`fine_figures` for a page: a part of the fleet whose figures are summed from its
    fines is never summed while the page waits (at a region of a large fleet it takes
    longer than a web server lets a request run). None: nothing is kept for it yet, and
    the worker is counting them (`fine_figures_count`); the page says so and asks again."""
    return _figures(scope, here=False)


def _figures(scope: VehicleScope, *, here: bool) -> FineFigures | None:
    today = timezone.localdate()
    tallies = _Tallies(FineTally)
    if not scope.whole_fleet:
        if len(scope.group_ids) != 1:
            return _scoped_figures(today, scope, here=here)
        tallies = _Tallies(GroupTally, Q(group_id=scope.group_ids[0]))
    version = fine_tallies_version()
    for _attempt in range(_READ_ATTEMPTS):
        read_at = _read_at(today, version)
        cached: FineFigures | None = _figures_kept.get(read_at, scope=scope)
        if cached is not None:
            return cached
        if not scope.whole_fleet and not group_tallies_current(scope.group_ids[0]):
            _catch_up_ask()
            return _scoped_figures(today, scope, here=here)
        figures = _computed(today, f"{read_at}:{scope.key}", scope, tallies)
        # Read in several statements: they make one state only if no write came between.
        now = fine_tallies_version()
        if now == version:
            _figures_kept.set(figures, read_at, scope=scope)
            return figures
        version = now
    return figures  # writes keep coming: as read, not kept


def _catch_up_ask() -> None:
    """Have the worker count the groups' tallies that are not of their plates (asked once
    a minute per process: a change of plates asked already; this is for after an
    upgrade, or a worker that was stopped)."""
    if cache.add("fleet:group-tallies:asked", 1, timeout=60):
        try:
            worker.enqueue_unless_waiting("group_tallies_catch_up")
        except Exception:
            logger.exception("could not ask the worker to count the groups' tallies")


def _scoped_figures(today: date, scope: VehicleScope, *, here: bool) -> FineFigures | None:
    """A part of the fleet whose tallies are not read (a group whose plates changed since
    they were counted, or several groups): its figures are summed from its
    vehicles' tallies and from its fines (`_scoped_tallies`), which at a region of a
    large fleet takes from seconds to minutes. So the worker sums them
    (`fine_figures_count`) and they are kept, with the version and the moment they were
    read at. A page shows them as kept; once a fine changed, as they were, saying when
    they were read (`FineFigures.behind`), while the worker reads them again for the next
    page. `here` (outside a page), and with this cache off, they are read at once."""
    if here or not caches_on(_scoped_kept.name):
        kept = _scoped_kept.get(_CACHE_FORMAT, today, scope=scope)
        if kept is not None and kept[0] == _read_at(today, fine_tallies_version()):
            return cast(FineFigures, kept[2])
        return _scoped_read(today, scope)
    kept = _scoped_kept.get(_CACHE_FORMAT, today, scope=scope)
    if kept is None:
        _scoped_count_ask(today, scope)
        return None
    read_at, moment, figures = cast(tuple[str, datetime, FineFigures], kept)
    if read_at == _read_at(today, fine_tallies_version()):
        return figures
    # Shown as kept, and said so (`behind`): a page counts on them, not on a wait of
    # minutes while a large part of the fleet is summed again.
    _scoped_count_ask(today, scope)
    return dataclasses.replace(figures, behind=moment)


def _scoped_count_ask(today: date, scope: VehicleScope) -> None:
    """Have the worker sum `scope`'s figures for `today`, in the language and time zone
    of the page that asks (they are kept under them): one task at a time for a part,
    asked again once `_SCOPED_COUNTING_SECONDS` passed without its answer (a worker
    stopped mid-way)."""
    counting = _scoped_kept.key(_CACHE_FORMAT, today, "counting", scope=scope)
    if not caches[_scoped_kept.alias].add(counting, 1, timeout=_SCOPED_COUNTING_SECONDS):
        return
    try:
        worker.enqueue(
            "fine_figures_count",
            list(scope.group_ids),
            today.isoformat(),
            translation.get_language() or settings.LANGUAGE_CODE,
            timezone.get_current_timezone_name(),
            counting,
        )
    except Exception:
        caches[_scoped_kept.alias].delete(counting)
        logger.exception("could not ask the worker to count a part of the fleet's figures")


def fine_figures_count(
    group_ids: list[int], today: str, language: str, zone: str, counting: str
) -> str:
    """Sum and keep the figures of the part of the fleet made of `group_ids` for the
    dashboards of `today`, in `language` and time zone `zone` (what `_scoped_count_ask`
    asked for, in the worker), then let pages ask again (`counting`, their mark that a
    task is asked for). A group changed or deleted meanwhile: the part's key names the
    groups as they are now, and a page of the part as it was asks again."""
    try:
        scope = scope_of_groups(group_ids)
        if scope.empty:
            return "no such groups"
        with translation.override(language), timezone.override(zone):
            figures = _scoped_read(date.fromisoformat(today), scope, attempts=1)
        return f"{figures.untreated.count} untreated fines"
    finally:
        caches[_scoped_kept.alias].delete(counting)


def _scoped_read(
    today: date, scope: VehicleScope, *, attempts: int = _READ_ATTEMPTS
) -> FineFigures:
    """`scope`'s figures summed from its fines, read again while a write came meanwhile
    (up to `attempts` times), and kept: as of the version and the moment their last
    reading began, so that figures a write overtook show as of then, said so, and are
    asked for again (at a region of a large fleet a sum takes minutes, and fines keep
    coming: the worker reads them once, `fine_figures_count`)."""
    version = fine_tallies_version()
    for _attempt in range(attempts):
        read_at, began = _read_at(today, version), timezone.now()
        figures = _computed(today, f"{read_at}:{scope.key}:scoped", scope)
        now = fine_tallies_version()
        if now == version:
            break
        version = now
    _scoped_kept.set((read_at, began, figures), _CACHE_FORMAT, today, scope=scope)
    return figures


def fine_figures_html(figures: FineFigures, *, language: str) -> str:
    """The dashboard's fragment about money (`fleet/dashboard.html#money`) for `figures`
    in `language`, kept beside them: it shows the figures alone (no user, no token)."""
    with translation.override(language):
        return _money_kept.get_or_compute(
            lambda: _html(figures), figures.key, figures.behind, get_script_prefix()
        )


def fine_figures_prepare() -> None:
    """Read the figures and render their fragment in every language into the cache, for
    the dashboards that come next (the cache is shared by the portal's processes): what
    the writers of fines run once their writes committed. A dashboard that comes first
    reads the figures itself; with nothing changed, this reads one row. A cache that
    fails is logged, not raised: the writes are done."""
    try:
        for language, _name in settings.LANGUAGES:
            with translation.override(language):  # kept per language, as pages read them
                fine_figures_html(fine_figures(), language=language)
    except Exception:
        logger.exception("could not prepare the dashboard's figures")


def fine_figures_publish() -> None:
    """`fine_figures_prepare` from inside the transaction that changed the tallies, put
    in the cache the moment it commits: the next dashboard never finds them missing.

    Its tally writes hold the version row until it ends, so what it reads is that
    version whole. Undone, it leaves nothing in the cache.
    """
    try:
        with transaction.atomic():  # a savepoint: a failure here leaves the writes be
            today = timezone.localdate()
            read_at = _read_at(today, fine_tallies_version())
            figures = _computed(today, f"{read_at}:{WHOLE_FLEET.key}")
            languages = [language for language, _name in settings.LANGUAGES]
            rendered = {}
            for language in languages:
                with translation.override(language):
                    rendered[language] = _html(figures)
    except Exception:
        logger.exception("could not read the dashboard's figures to publish them")
        return
    prefix = get_script_prefix()

    def publish() -> None:
        try:
            for language in languages:
                with translation.override(language):
                    _figures_kept.set(figures, read_at, scope=WHOLE_FLEET)
                    _money_kept.set(rendered[language], figures.key, prefix)
        except Exception:
            logger.exception("could not publish the dashboard's figures")

    transaction.on_commit(publish)


def _read_at(today: date, version: int) -> str:
    """What figures read now are read at: the day, the tallies' version, the version of
    the drivers' names they show (a name written anywhere) and the generation
    (`fine_figures_forget`)."""
    generation = cache.get(_GENERATION, 0)
    return f"{_CACHE_FORMAT}:{generation}:{driver_names_version()}:{today}:{version}"


def _html(figures: FineFigures) -> str:
    return render_to_string("fleet/dashboard.html#money", {"figures": figures})


def fine_figures_forget() -> None:
    """Have the next dashboard read its figures again (a benchmark's first view)."""
    try:
        cache.incr(_GENERATION)
    except ValueError:  # not there yet
        cache.set(_GENERATION, 1, timeout=None)


def month_start(day: date, *, back: int = 0) -> date:
    """The first day of `day`'s month, `back` months earlier."""
    months = day.year * 12 + day.month - 1 - back
    return date(months // 12, months % 12 + 1, 1)


def local_midnight(day: date) -> datetime:
    """The aware start of `day` in the current time zone."""
    return timezone.make_aware(datetime.combine(day, datetime.min.time()))


def _amount() -> Coalesce:
    return Coalesce(Sum("amount"), Value(_ZERO), output_field=DecimalField())


def _computed(
    today: date,
    key: str,
    scope: VehicleScope = WHOLE_FLEET,
    tallies: _Tallies | None = None,
) -> FineFigures:
    """`scope`'s figures: read from `tallies` (the whole fleet's, or its group's), else
    summed from its fines (`_scoped_tallies`)."""
    if tallies is None and scope.whole_fleet:
        tallies = _Tallies(FineTally)
    since = today - timedelta(days=RECENT_DAYS - 1)
    starts = [month_start(today, back=back) for back in range(MONTHS - 1, -1, -1)]
    rows: dict[tuple[str, str], tuple[int, int]]
    scoped: dict[tuple[str, str], tuple[int, int]] | None = None
    if tallies is not None:
        # The totals, the months shown and the days counted as recent, in one query.
        rows = {
            (dimension, name): (count, cents)
            for dimension, name, count, cents in tallies.any_of(
                Q(
                    dimension__in=[TallyDimension.UNTREATED, TallyDimension.WITHOUT_DOCUMENT],
                    key="",
                ),
                Q(
                    dimension=TallyDimension.MONTH,
                    key__gte=month_key(starts[0]),
                    key__lte=month_key(starts[-1]),
                ),
                Q(dimension=TallyDimension.DAY, key__gte=day_key(since)),
                # A row per deadline: a few hundred days at most (past ones empty out as
                # fines are indicated or treated).
                Q(dimension=TallyDimension.TO_INDICATE, count__gt=0),
                Q(dimension=TallyDimension.GUESSED),
            ).values_list("dimension", "key", "count", "cents")
        }
    else:
        scoped = rows = _scoped_tallies(scope, since=since, first_month=starts[0])

    def total(*found: tuple[int, int]) -> Total:
        return Total(sum(count for count, _ in found), tally_amount(sum(c for _, c in found)))

    untreated = total(rows.get((TallyDimension.UNTREATED, ""), (0, 0)))
    recent = total(
        *(row for (dimension, _), row in rows.items() if dimension == TallyDimension.DAY)
    )
    months = []
    for start in starts:
        month = total(rows.get((TallyDimension.MONTH, month_key(start)), (0, 0)))
        months.append(MonthFigure(start, month.count, month.amount))
    deadlines = [
        (key, row)
        for (dimension, key), row in rows.items()
        if dimension == TallyDimension.TO_INDICATE
    ]
    soon = day_key(today + timedelta(days=INDICATE_SOON_DAYS))
    to_indicate = total(*(row for _key, row in deadlines))
    top_vehicles, most_fined = _top_vehicles(scoped, tallies) if untreated.count else ([], [])
    return FineFigures(
        untreated=untreated,
        months=months,
        top_vehicles=top_vehicles,
        top_drivers=_top_drivers(scoped, tallies) if untreated.count else [],
        recent=recent,
        recent_since=since,
        without_document=rows.get((TallyDimension.WITHOUT_DOCUMENT, ""), (0, 0))[0],
        most_fined=most_fined,
        key=key,
        untreated_notifications=None if scope.whole_fleet else _untreated_notifications(scope),
        to_indicate_overdue=total(*(row for key, row in deadlines if key < day_key(today))),
        to_indicate_soon=total(*(row for key, row in deadlines if day_key(today) <= key <= soon)),
        at_risk=Total(to_indicate.count, to_indicate.amount * NIC_MULTIPLIER),
        probable=total(rows.get((TallyDimension.GUESSED, DriverBasis.LIST), (0, 0))),
        uncertain=total(rows.get((TallyDimension.GUESSED, DriverBasis.UNCERTAIN), (0, 0))),
    )


def _scoped_tallies(scope: VehicleScope, *, since: date, first_month: date) -> Tallies:
    """What the dashboard shows of a part of the fleet whose tallies are not read,
    as the tallies would count it: its vehicles' own tallies (untreated by vehicle,
    whose sum is its untreated total: its fines all name a vehicle); its fines summed
    by driver and without their document, and those of the months and days shown only
    (each through an index of its moment)."""
    plates = VehicleGroupPlate.objects.filter(group_id__in=scope.group_ids)
    vehicles = {
        (dimension, name): (count, cents)
        for dimension, name, count, cents in FineTally.objects.filter(
            dimension=TallyDimension.VEHICLE,
            count__gt=0,
            key__in=plates.values("registration"),
        ).values_list("dimension", "key", "count", "cents")
    }
    untreated = (
        sum(count for count, _cents in vehicles.values()),
        sum(cents for _count, cents in vehicles.values()),
    )
    found: Tallies = {**vehicles, (str(TallyDimension.UNTREATED), ""): untreated}
    for fines, dimensions in (
        (
            Fine.objects.all(),
            {
                TallyDimension.DRIVER,
                TallyDimension.GUESSED,
                TallyDimension.WITHOUT_DOCUMENT,
                TallyDimension.TO_INDICATE,
            },
        ),
        (
            Fine.objects.filter(occurred_at__gte=local_midnight(first_month)),
            {TallyDimension.MONTH},
        ),
        (Fine.objects.filter(received_at__gte=local_midnight(since)), {TallyDimension.DAY}),
    ):
        found |= fine_tallies_counted(
            scope.records(fines), dimensions=frozenset(str(name) for name in dimensions)
        )
    return found


def _first(
    dimension: TallyDimension,
    scoped: Tallies | None,
    tallies: _Tallies | None,
    *order: str,
) -> list[tuple[str, int, int]]:
    """The first `TOP` tallies of `dimension` that count some fine, in `order`: (key,
    count, cents); of `tallies` (from their index's end), or of the tallies `scoped`
    summed for a part of the fleet."""
    if scoped is None:
        assert tallies is not None
        return list(
            tallies.any_of(Q(dimension=dimension, count__gt=0))
            .order_by(*order)
            .values_list("key", "count", "cents")[:TOP]
        )
    found = [
        (name, count, cents)
        for (kind, name), (count, cents) in scoped.items()
        if kind == dimension and count > 0
    ]
    found.sort(key=lambda row: row[0])  # the last of `order`: stable sorts before it
    for key in reversed(order[:-1]):
        position = {"count": 1, "cents": 2}[key.lstrip("-")]
        found.sort(key=lambda row: row[position], reverse=key.startswith("-"))
    return found[:TOP]


def _top_vehicles(
    scoped: Tallies | None, tallies: _Tallies | None
) -> tuple[list[VehicleFigure], list[FinedVehicle]]:
    """The vehicles with the most untreated R$, and those with the most untreated fines,
    under either of their plates: their tallies, then the payloads of those few only."""
    by_amount = _first(TallyDimension.VEHICLE, scoped, tallies, "-cents", "-count", "key")
    by_count = _first(TallyDimension.VEHICLE, scoped, tallies, "-count", "key")
    named = _plates_named({row[0] for row in by_amount + by_count})
    return (
        [
            VehicleFigure(
                registration=registration,
                plate=named.get(registration) or registration,
                count=count,
                amount=tally_amount(cents),
            )
            for registration, count, cents in by_amount
        ],
        [
            FinedVehicle(
                registration=registration,
                plate=named.get(registration) or registration,
                untreated=count,
            )
            for registration, count, _cents in by_count
        ],
    )


def _plates_named(registrations: set[str]) -> dict[str, str]:
    """The plate each vehicle's first untreated fine names it by (as sent: the old
    format or the Mercosul one), read from those few payloads (`payload_plate`)."""
    if not registrations:
        return {}
    first = (
        Fine.objects.filter(treated=False, registration__in=registrations)
        .exclude(registration="")  # the plate index covers only those
        .values_list("registration")
        .annotate(first=Min("pk"))
        .values_list("first", flat=True)
    )
    return {
        registration: payload_plate(payload)
        for registration, payload in Fine.objects.filter(pk__in=list(first)).values_list(
            "registration", "payload"
        )
    }


def _top_drivers(scoped: Tallies | None, tallies: _Tallies | None) -> list[DriverFigure]:
    top = [
        (int(key), count, cents)
        for key, count, cents in _first(
            TallyDimension.DRIVER, scoped, tallies, "-cents", "-count", "key"
        )
    ]
    names = driver_names([driver for driver, _count, _cents in top])
    return [
        DriverFigure(
            driver_id=driver,
            name=names.get(driver, ""),
            count=count,
            amount=tally_amount(cents),
        )
        for driver, count, cents in top
    ]


def fine_tallies_total(
    dimension: TallyDimension, key: str | None = None, *, since: str = ""
) -> Total:
    """The count and R$ of one tally (`key`), or of every tally of `dimension` (None),
    or of those from the key `since` on (the fines received since a day): the fines by
    day received sum up to all the fines."""
    tallies = FineTally.objects.filter(dimension=dimension)
    if key is not None:
        tallies = tallies.filter(key=key)
    if since:
        tallies = tallies.filter(key__gte=since)
    found = tallies.aggregate(count=Sum("count"), cents=Sum("cents"))
    return Total(found["count"] or 0, tally_amount(found["cents"] or 0))


def fine_totals(fines: QuerySet[Fine]) -> Total:
    """How many fines `fines` holds and their R$."""
    found = fines.order_by().aggregate(count=Count("pk"), amount=_amount())
    return Total(found["count"], found["amount"])
