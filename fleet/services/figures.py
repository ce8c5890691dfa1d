"""What the dashboard shows of the fines, as values (`fleet.services.dashboard` reads and
keeps them): totals, months, the vehicles and drivers at the top, and the chart's bars."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Final

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
    """One month's bar in the SVG's units: its count of fines as its height, and written
    above it (its R$ in its tooltip and in the table)."""

    month: MonthFigure
    x: int
    y: int
    width: int
    height: int
    center: int  # where its texts are centred


@dataclass(frozen=True, slots=True)
class Chart:
    """The months as bars, scaled to the largest month's count of fines; room below for
    the months' names (`label_y`) and above the bars for their counts."""

    width: int
    height: int  # of the whole drawing
    base: int  # the bars' baseline
    label_y: int
    bars: list[Bar]


# The NIC (CTB art. 257 §8) of a fine whose driver is not indicated: twice the fine.
NIC_MULTIPLIER: Final = 2


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
    # A part of the fleet's untreated notifications, counted up to COUNTED with its
    # figures (`record_counts`); None for the whole fleet's, counted at each poll.
    untreated_notifications: int | None = None
    # When figures shown as they were kept had been read, while newer fines are being
    # counted (a part of the fleet summed from its fines: `dashboard._scoped_figures`);
    # None: the figures are as of now.
    behind: datetime | None = None
    # The untreated fines whose driver is still to be indicated: past their deadline, due
    # within `INDICATE_SOON_DAYS` (today's included), and what their NICs would cost
    # (twice each of them all): `dashboard._computed`.
    to_indicate_overdue: Total = Total(0, _ZERO)
    to_indicate_soon: Total = Total(0, _ZERO)
    at_risk: Total = Total(0, _ZERO)
    # The untreated fines `top_drivers` leaves out because their driver is a guess: the
    # vehicle list's driver when they arrived (probable), and two candidates (uncertain).
    probable: Total = Total(0, _ZERO)
    uncertain: Total = Total(0, _ZERO)

    @property
    def nic_expected(self) -> Decimal:
        """The NICs to expect of the fines past their deadline (missed): twice each."""
        return self.to_indicate_overdue.amount * NIC_MULTIPLIER

    @property
    def months_total(self) -> Total:
        return Total(
            count=sum(m.count for m in self.months),
            amount=sum((m.amount for m in self.months), _ZERO),
        )

    def chart(self, *, width: int = 600, height: int = 200) -> Chart:
        # Room for the counts above and the months below, at the size a phone's narrow
        # screen needs them (portal.css enlarges the text there).
        top, bottom = 28, 30
        base = height - bottom
        room = base - top
        largest = max((m.count for m in self.months), default=0) or 1
        slot = width // max(len(self.months), 1)
        bars = []
        for number, month in enumerate(self.months):
            tall = round(room * month.count / largest)
            x = number * slot + slot // 8
            bars.append(Bar(month, x, base - tall, slot * 3 // 4, tall, number * slot + slot // 2))
        return Chart(width=width, height=height, base=base, label_y=height - 8, bars=bars)


@dataclass(frozen=True, slots=True)
class FinedVehicle:
    """A vehicle with untreated fines, as the dashboard lists it."""

    registration: str  # its plate in the Mercosul format: the fines list's `?plate=`
    plate: str  # as its fines name it (the old format, for a vehicle that has one)
    untreated: int
