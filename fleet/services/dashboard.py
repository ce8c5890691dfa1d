"""The dashboard's figures: untreated fines in R$ and their count, fines by month, the
vehicles and drivers with the most untreated R$, the fines received lately, the fines
without their document and the vehicles with the most untreated fines.

Every figure is an aggregate the database computes on an index (`Fine.Meta.indexes`),
never a loop over fines. The figures are kept in the cache under a key made of what
changes them (the newest fine, the latest change of any, today's date), so that a
dashboard at 100,000 fines reads two index ends, not the table, until a fine is written.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Final

from django.core.cache import cache
from django.db.models import (
    Case,
    Count,
    DecimalField,
    IntegerField,
    Max,
    Min,
    QuerySet,
    Sum,
    Value,
    When,
)
from django.db.models.fields.json import KT
from django.db.models.functions import Coalesce
from django.utils import timezone

from fleet.models import Driver, Fine, Notification

TOP: Final = 5  # vehicles and drivers listed
MONTHS: Final = 12
RECENT_DAYS: Final = 7
_CACHE_SECONDS: Final = 300  # bounds how long a renamed driver keeps the old name
_CACHE_FORMAT: Final = 1
_GENERATION: Final = "fleet:fine-figures:generation"
_ZERO: Final = Decimal("0.00")


@dataclass(frozen=True, slots=True)
class Total:
    count: int
    amount: Decimal  # R$; fines whose amount is unknown count as 0


@dataclass(frozen=True, slots=True)
class MonthFigure:
    month: date  # its first day
    count: int
    amount: Decimal

    @property
    def query(self) -> str:
        """The fines list's `month` parameter."""
        return self.month.strftime("%Y-%m")


@dataclass(frozen=True, slots=True)
class VehicleFigure:
    registration: str  # the fines list's `?plate=`
    plate: str  # as its fines name it
    count: int
    amount: Decimal


@dataclass(frozen=True, slots=True)
class DriverFigure:
    driver_id: int
    name: str  # "" when the portal knows none
    count: int
    amount: Decimal


@dataclass(frozen=True, slots=True)
class Bar:
    """One month's bar in the SVG's units: R$ as its height, its count written above it."""

    month: MonthFigure
    x: int
    y: int
    width: int
    height: int
    center: int  # where its texts are centred


@dataclass(frozen=True, slots=True)
class Chart:
    """The months as bars, scaled to the largest month's R$; room below for the months'
    names (`label_y`) and above the bars for their counts."""

    width: int
    height: int  # of the whole drawing
    base: int  # the bars' baseline
    label_y: int
    bars: list[Bar]


@dataclass(frozen=True, slots=True)
class FineFigures:
    untreated: Total
    months: list[MonthFigure]  # oldest first, every month of the last twelve
    top_vehicles: list[VehicleFigure]
    top_drivers: list[DriverFigure]
    recent: Total
    recent_since: date  # the first day counted in `recent` (local)
    without_document: int
    most_fined: list[FinedVehicle]  # by their count of untreated fines
    key: str  # in the cache

    @property
    def months_total(self) -> Total:
        return Total(
            count=sum(m.count for m in self.months),
            amount=sum((m.amount for m in self.months), _ZERO),
        )

    def chart(self, *, width: int = 600, height: int = 180) -> Chart:
        top, bottom = 20, 24  # room for the counts above, the months below
        base = height - bottom
        room = base - top
        largest = max((m.amount for m in self.months), default=_ZERO) or Decimal(1)
        slot = width // max(len(self.months), 1)
        bars = []
        for number, month in enumerate(self.months):
            # A month with fines but no known amount still shows a sliver.
            tall = max(round(room * month.amount / largest), 2 if month.count else 0)
            x = number * slot + slot // 8
            bars.append(Bar(month, x, base - tall, slot * 3 // 4, tall, number * slot + slot // 2))
        return Chart(width=width, height=height, base=base, label_y=height - 6, bars=bars)


@dataclass(frozen=True, slots=True)
class FinedVehicle:
    """A vehicle with untreated fines, as the dashboard lists it."""

    registration: str  # its plate in the Mercosul format: the fines list's `?plate=`
    plate: str  # as its fines name it (the old format, for a vehicle that has one)
    untreated: int


@dataclass(frozen=True, slots=True)
class RecordCounts:
    untreated_fines: int
    fines_without_document: int
    untreated_notifications: int
    most_fined: list[FinedVehicle]


def record_counts(*, figures: FineFigures | None = None) -> RecordCounts:
    """The counts the dashboard polls: the fines' from the cached figures (`figures`, if
    the caller has them), the untreated notifications counted on their list's index."""
    figures = figures or fine_figures()
    return RecordCounts(
        untreated_fines=figures.untreated.count,
        fines_without_document=figures.without_document,
        untreated_notifications=Notification.objects.filter(treated=False).count(),
        most_fined=figures.most_fined,
    )


def fine_figures() -> FineFigures:
    """The figures, from the cache while no fine changed since they were computed."""
    today = timezone.localdate()
    # Two queries: SQLite reads a lone MIN or MAX from an index's end, two at once by a scan.
    newest = Fine.objects.aggregate(pk=Max("pk"))["pk"]
    latest = Fine.objects.aggregate(changed=Max("updated_at"))["changed"]
    changed = latest.timestamp() if latest else 0
    generation = cache.get(_GENERATION, 0)
    key = f"fleet:fine-figures:{_CACHE_FORMAT}:{generation}:{today}:{newest}:{changed}"
    figures: FineFigures | None = cache.get(key)
    if figures is None:
        figures = _computed(today, key)
        cache.set(key, figures, timeout=_CACHE_SECONDS)
    return figures


def fine_figures_rendered(figures: FineFigures, *, variant: str, render: Callable[[], str]) -> str:
    """What `render` makes of `figures` (HTML), kept beside them: `variant` names what
    else it depends on (the language)."""
    key = f"{figures.key}:rendered:{variant}"
    html: str | None = cache.get(key)
    if html is None:
        html = render()
        cache.set(key, html, timeout=_CACHE_SECONDS)
    return html


def fine_figures_forget() -> None:
    """Have the next dashboard compute its figures again: fines changed in a way their
    last change time does not show (drivers attributed after they were written)."""
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


def _computed(today: date, key: str) -> FineFigures:
    total = Fine.objects.filter(treated=False).aggregate(count=Count("pk"), amount=_amount())
    without_document = Fine.objects.filter(link_frame="").count()
    since = today - timedelta(days=RECENT_DAYS - 1)
    recent = Fine.objects.filter(received_at__gte=local_midnight(since)).aggregate(
        count=Count("pk"), amount=_amount()
    )
    return FineFigures(
        untreated=Total(total["count"], total["amount"]),
        months=_months(today),
        top_vehicles=_top_vehicles() if total["count"] else [],
        top_drivers=_top_drivers() if total["count"] else [],
        recent=Total(recent["count"], recent["amount"]),
        recent_since=since,
        without_document=without_document,
        most_fined=_most_fined() if total["count"] else [],
        key=key,
    )


def _months(today: date) -> list[MonthFigure]:
    """Each of the last `MONTHS` months' count and R$, in one pass over the date index:
    each fine's month numbered by comparing its date with the months' starts (no date
    function per fine, which SQLite would run in Python)."""
    starts = [month_start(today, back=back) for back in range(MONTHS - 1, -1, -1)]
    bounds = [local_midnight(day) for day in [*starts, month_start(today, back=-1)]]
    number = Case(
        *(
            When(occurred_at__lt=end, then=Value(position))
            for position, end in enumerate(bounds[1:])
        ),
        output_field=IntegerField(),
    )
    found = {
        row["month"]: row
        for row in Fine.objects.filter(occurred_at__gte=bounds[0], occurred_at__lt=bounds[-1])
        .annotate(month=number)
        .values("month")
        .annotate(count=Count("pk"), amount=_amount())
        .order_by()
    }
    return [
        MonthFigure(start, found[position]["count"], found[position]["amount"])
        if position in found
        else MonthFigure(start, 0, _ZERO)
        for position, start in enumerate(starts)
    ]


def _top_vehicles() -> list[VehicleFigure]:
    fines = Fine.objects.filter(treated=False).exclude(registration="")
    top = list(
        fines.values("registration")
        .annotate(count=Count("pk"), amount=_amount())
        .order_by("-amount", "-count", "registration")[:TOP]
    )
    # A plate their fines name; the old one sorts first ("ABC-1234", "ABC1234" < "ABC1C34").
    named = dict(
        fines.filter(registration__in=[row["registration"] for row in top])
        .values_list("registration")
        .annotate(named=Min(Coalesce(KT("payload__carPlate"), KT("payload__plate"))))
    )
    return [
        VehicleFigure(
            registration=row["registration"],
            plate=named.get(row["registration"]) or row["registration"],
            count=row["count"],
            amount=row["amount"],
        )
        for row in top
    ]


def _most_fined() -> list[FinedVehicle]:
    """The vehicles with the most untreated fines, under either of their plates.

    Counted on the plate index alone; the payloads are read for those few only.
    """
    untreated = Fine.objects.filter(treated=False).exclude(registration="")
    top = list(
        untreated.values_list("registration")
        .annotate(untreated=Count("pk"))
        .order_by("-untreated", "registration")[:TOP]
    )
    # A plate their fines name; the old one sorts first ("ABC-1234", "ABC1234" < "ABC1C34").
    named = dict(
        untreated.filter(registration__in=[registration for registration, _ in top])
        .values_list("registration")
        .annotate(named_plate=Min(Coalesce(KT("payload__carPlate"), KT("payload__plate"))))
    )
    return [
        FinedVehicle(
            registration=registration,
            plate=named.get(registration) or registration,
            untreated=count,
        )
        for registration, count in top
    ]


def _top_drivers() -> list[DriverFigure]:
    top = list(
        Fine.objects.filter(treated=False, driver_id__isnull=False)
        .values("driver_id")
        .annotate(count=Count("pk"), amount=_amount())
        .order_by("-amount", "-count", "driver_id")[:TOP]
    )
    names = driver_names([row["driver_id"] for row in top if row["driver_id"] is not None])
    return [
        DriverFigure(
            driver_id=driver,
            name=names.get(driver, ""),
            count=row["count"],
            amount=row["amount"],
        )
        for row in top
        if (driver := row["driver_id"]) is not None  # filtered out above: for the type
    ]


def driver_names(driver_ids: list[int]) -> dict[int, str]:
    """The names the portal knows for these drivers (`Driver`, typed in the admin)."""
    return dict(Driver.objects.filter(driver_id__in=driver_ids).values_list("driver_id", "name"))


def fine_totals(fines: QuerySet[Fine]) -> Total:
    """How many fines `fines` holds and their R$."""
    found = fines.order_by().aggregate(count=Count("pk"), amount=_amount())
    return Total(found["count"], found["amount"])
