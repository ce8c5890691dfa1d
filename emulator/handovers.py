"""Vehicles change hands: who drives each vehicle at a given hour, and when it changes.

A vehicle's driver follows a schedule drawn once from the fleet's seed: a
kind (most vehicles stay weeks with one driver, some change every morning,
a few several times a day), a period and a phase in whole hours, and a pool
of two or three distinct drivers, the vehicle's own `driver_id` first. Its
driver at hour h (hours since the Unix epoch, UTC) is
`pool[k % len(pool)]` with `k = (h - phase) // period`: consecutive
segments have different drivers, so every boundary is a real hand-over,
and every hand-over falls exactly on a whole UTC hour (a list-cars answer
holds for the whole hour; a moment at half past is never ambiguous).

The schedule is a pure function of the seed, the fleet and the hour: the
emulator's clock decides which hour the answers show, and
`/_emulator/handovers` reads the same schedule back. Everything is drawn as
arrays over the fleet (`choices(k=count)`), which a million vehicles need.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

HOUR = timedelta(hours=1)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
FIRST_DRIVER_ID = 101  # as `generate_vehicles` numbers drivers

WEEKS, DAILY, SEVERAL_A_DAY = "weeks", "daily", "several a day"
_KIND_WEIGHTS = {WEEKS: 80, DAILY: 15, SEVERAL_A_DAY: 5}
_WEEKS_HOURS = range(14 * 24, 42 * 24 + 1)  # a driver keeps the vehicle 14 to 42 days
_DAILY_HOURS = 24
# A daily vehicle changes hands at the start of the Brasília working day,
# 05:00 to 09:00 (UTC-3): 08:00 to 12:00 UTC.
_MORNING_HOURS_UTC = range(8, 13)
_SEVERAL_HOURS = range(3, 9)  # shifts of 3 to 8 hours
_POOL_SIZES = (2, 3)


class Handover(NamedTuple):
    hour: int  # hours since the Unix epoch, UTC: the hand-over is at its start
    vehicle: int  # the vehicle's place in the fleet (0 for id 1)
    previous: int  # the driver before
    driver: int  # the driver from this hour on


def hour_of(moment: datetime) -> int:
    """The whole UTC hour `moment` falls in, counted from the Unix epoch."""
    return (moment - _EPOCH) // HOUR


def start_of(hour: int) -> datetime:
    """When hour `hour` (from `hour_of`) begins."""
    return _EPOCH + hour * HOUR


class Schedule:
    """Who drives each vehicle of a fleet at every hour, from the fleet's seed.

    `drivers` are the vehicles' own `driver_id`s, in fleet order; each pool
    starts with its vehicle's. The other members are drawn from the ids
    `generate_vehicles` draws from (101 to 100 + the fleet's size; a fleet of
    one or two vehicles draws from 101 to 103, so that three distinct ids exist).
    """

    def __init__(self, seed: int, drivers: Sequence[int]) -> None:
        count = len(drivers)
        # Its own stream: the fleet's vehicles stay exactly as `generate_vehicles` draws them.
        rng = random.Random(f"handovers:{seed}")
        kinds = rng.choices(list(_KIND_WEIGHTS), weights=list(_KIND_WEIGHTS.values()), k=count)
        weeks = rng.choices(_WEEKS_HOURS, k=count)
        several = rng.choices(_SEVERAL_HOURS, k=count)
        mornings = rng.choices(_MORNING_HOURS_UTC, k=count)
        offsets = rng.choices(range(_WEEKS_HOURS[-1]), k=count)
        sizes = rng.choices(_POOL_SIZES, k=count)
        span = max(count, 3)
        ids = range(FIRST_DRIVER_ID, FIRST_DRIVER_ID + span)
        seconds, thirds = rng.choices(ids, k=count), rng.choices(ids, k=count)
        self.periods: list[int] = [
            _DAILY_HOURS if kind == DAILY else (week if kind == WEEKS else shift)
            for kind, week, shift in zip(kinds, weeks, several, strict=True)
        ]
        self.phases: list[int] = [
            morning if period == _DAILY_HOURS else offset % period
            for period, morning, offset in zip(self.periods, mornings, offsets, strict=True)
        ]
        self.pools: list[tuple[int, ...]] = [
            _pool(first, second, third, size, span)
            for first, second, third, size in zip(drivers, seconds, thirds, sizes, strict=True)
        ]

    def __len__(self) -> int:
        return len(self.pools)

    def kind(self, index: int) -> str:
        period = self.periods[index]
        if period == _DAILY_HOURS:
            return DAILY
        return SEVERAL_A_DAY if period in _SEVERAL_HOURS else WEEKS

    def driver_at(self, index: int, hour: int) -> int:
        pool = self.pools[index]
        return pool[(hour - self.phases[index]) // self.periods[index] % len(pool)]

    def drivers_at(self, hour: int) -> list[int]:
        """Every vehicle's driver during `hour`, in fleet order."""
        return [
            pool[(hour - phase) // period % len(pool)]
            for pool, phase, period in zip(self.pools, self.phases, self.periods, strict=True)
        ]

    def handover_hours(self, index: int, first: int, last: int) -> range:
        """The hours from `first` to `last` (both included) at which vehicle `index`
        changes hands."""
        phase, period = self.phases[index], self.periods[index]
        earliest = phase - (phase - first) // period * period  # the first boundary >= first
        return range(earliest, last + 1, period)

    def count(self, first: int, last: int, indexes: Iterable[int] | None = None) -> int:
        """How many hand-overs `handovers` would list, without listing them."""
        chosen = range(len(self)) if indexes is None else indexes
        return sum(len(self.handover_hours(index, first, last)) for index in chosen)

    def handovers(
        self, first: int, last: int, indexes: Iterable[int] | None = None
    ) -> list[Handover]:
        """Every hand-over from hour `first` to hour `last` (both included), by hour then
        vehicle."""
        chosen = range(len(self)) if indexes is None else indexes
        found = [
            Handover(hour, index, self.driver_at(index, hour - 1), self.driver_at(index, hour))
            for index in chosen
            for hour in self.handover_hours(index, first, last)
        ]
        found.sort()
        return found


def _pool(first: int, second: int, third: int, size: int, span: int) -> tuple[int, ...]:
    """The drivers of one vehicle, distinct: a drawn id already in the pool gives way
    to the next id (wrapping round the range)."""
    while second == first:
        second = FIRST_DRIVER_ID + (second - FIRST_DRIVER_ID + 1) % span
    if size == 2:
        return first, second
    while third in (first, second):
        third = FIRST_DRIVER_ID + (third - FIRST_DRIVER_ID + 1) % span
    return first, second, third
