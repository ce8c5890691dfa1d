"""The fictitious fleet: deterministic vehicles from `--vehicles N --seed S`.

The same seed gives the same fleet byte for byte, so a test or a demo can
name a plate. The `/key/list-cars` answer is serialised once here and served
as bytes: the portal benchmarks against it and the emulator must not be the
slow side. So is the minimal mode's, once per spelling seed, when first asked.

When vehicles change hands (`emulator.handovers`), the answer changes with
the hour: it is made once per hour from the serialised one, cut around each
vehicle's `driver_id` (`_DriverSlots`), with that hour's drivers put in.
"""

from __future__ import annotations

import random
import string
import threading
from collections import OrderedDict
from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple

from emulator import handovers, minimal
from emulator.messages import encode_json

MAX_VEHICLES = 1_000_000
# Minimal-mode list-cars answers kept, by spelling seed (about 13 MB each at
# 100,000 vehicles); past this many, the least recently used is dropped.
_MINIMAL_BODIES_KEPT = 2
# With hand-overs, the answers of the last few hours (by hour and spelling
# seed) and what they are made from (by spelling seed; None: normal mode).
_HOURLY_BODIES_KEPT = 3
_SLOTS_KEPT = 3
_DRIVER_MEMBER = b'"driver_id":'

# Common fleet vehicles in Brazil, weighted roughly as a mixed fleet would be.
_MODELS: dict[str, int] = {
    "Fiat Strada": 14,
    "Fiat Fiorino": 6,
    "Fiat Toro": 5,
    "Fiat Mobi": 3,
    "Fiat Argo": 3,
    "VW Gol": 8,
    "VW Saveiro": 5,
    "VW Polo": 3,
    "VW Delivery 11.180": 3,
    "Chevrolet Onix": 8,
    "Chevrolet S10": 5,
    "Chevrolet Montana": 3,
    "Chevrolet Spin": 2,
    "Toyota Hilux": 5,
    "Toyota Corolla Cross": 2,
    "Ford Ranger": 3,
    "Renault Master": 3,
    "Renault Kwid": 3,
    "Renault Oroch": 2,
    "Hyundai HB20": 4,
    "Hyundai HR": 2,
    "Iveco Daily": 2,
    "Mercedes-Benz Sprinter": 4,
    "Mercedes-Benz Accelo 1016": 2,
    "Mercedes-Benz Atego 2430": 1,
    "Volvo FH 540": 2,
    "Scania R 450": 2,
    "DAF XF 530": 1,
    "Honda CG 160": 3,
    "Yamaha Factor 150": 1,
}
_COLORS: dict[str, int] = {
    "Branco": 40,
    "Cinza": 14,
    "Prata": 18,
    "Preto": 12,
    "Vermelho": 6,
    "Azul": 4,
    "Bege": 2,
    "Verde": 2,
    "Amarelo": 2,
}
_FIRST_YEAR, _LAST_YEAR = 2012, 2026
_INACTIVE_SHARE = 1 / 8
_LETTERS = string.ascii_uppercase
_DIGITS = string.digits
# RENAVAM check digit: weights of the ten digits, left to right. The weighted
# sum is taken two digits at a time from the right through small tables,
# which is several times faster than digit by digit over 100,000 vehicles.
_RENAVAM_WEIGHTS = (3, 2, 9, 8, 7, 6, 5, 4, 3, 2)
_RENAVAM_PAIR_SUMS = tuple(
    tuple(pair // 10 * left + pair % 10 * right for pair in range(100))
    for left, right in zip(_RENAVAM_WEIGHTS[8::-2], _RENAVAM_WEIGHTS[9::-2], strict=True)
)


class Vehicle(NamedTuple):
    # A NamedTuple rather than a frozen dataclass: it builds several times
    # faster, which shows at 100,000 vehicles.
    id: int
    car_plate: str
    model: str
    active: str  # "1" or "0": the spec's flag is a string
    driver_id: int
    year: int
    color: str
    renavam: str

    def as_json(self) -> dict[str, object]:
        return self._asdict()


def normalise_plate(text: str) -> str:
    """A plate as the fleet stores it: upper case, no spaces, no hyphen."""
    return text.upper().replace(" ", "").replace("-", "")


class Fleet:
    def __init__(self, vehicles: Sequence[Vehicle], *, seed: int) -> None:
        self.vehicles = tuple(vehicles)
        self.seed = seed
        self._by_plate = {vehicle.car_plate: vehicle for vehicle in self.vehicles}
        self.active_count = sum(vehicle.active == "1" for vehicle in self.vehicles)
        self.list_cars_body = encode_json(
            {
                "cars": {
                    "data": [vehicle.as_json() for vehicle in self.vehicles],
                    "total": len(self.vehicles),
                },
                "error": False,
                "code": "fbk_200",
            }
        )
        self._minimal_lock = threading.Lock()
        self._minimal_bodies: OrderedDict[int, bytes] = OrderedDict()
        self._schedule_lock = threading.Lock()
        self._schedule: handovers.Schedule | None = None
        self._hourly_lock = threading.Lock()
        self._hourly_bodies: OrderedDict[tuple[int, int | None], bytes] = OrderedDict()
        self._slots: OrderedDict[int | None, _DriverSlots] = OrderedDict()

    def minimal_list_cars_body(self, chosen: minimal.Spellings) -> bytes:
        """The minimal-mode `/key/list-cars` answer for these spellings, serialised once."""
        with self._minimal_lock:  # held while serialising: concurrent first calls wait for one
            body = self._minimal_bodies.get(chosen.seed)
            if body is None:
                body = minimal.list_cars_body(self.vehicles, chosen)
                self._minimal_bodies[chosen.seed] = body
                while len(self._minimal_bodies) > _MINIMAL_BODIES_KEPT:
                    self._minimal_bodies.popitem(last=False)
            self._minimal_bodies.move_to_end(chosen.seed)
            return body

    @property
    def schedule(self) -> handovers.Schedule:
        """Who drives each vehicle when, drawn on first use (a million vehicles take a while)."""
        with self._schedule_lock:
            if self._schedule is None:
                drivers = [vehicle.driver_id for vehicle in self.vehicles]
                self._schedule = handovers.Schedule(self.seed, drivers)
            return self._schedule

    def list_cars_body_at(self, moment: datetime, chosen: minimal.Spellings | None) -> bytes:
        """The `/key/list-cars` answer with the drivers of `moment`'s hour (`chosen`: the
        minimal mode's spellings, None in normal mode), made once per hour."""
        hour = handovers.hour_of(moment)
        key = hour, None if chosen is None else chosen.seed
        with self._hourly_lock:  # held while building: concurrent first calls wait for one
            body = self._hourly_bodies.get(key)
            if body is None:
                body = self._driver_slots(chosen).fill(self.schedule.drivers_at(hour))
                self._hourly_bodies[key] = body
                while len(self._hourly_bodies) > _HOURLY_BODIES_KEPT:
                    self._hourly_bodies.popitem(last=False)
            self._hourly_bodies.move_to_end(key)
            return body

    def _driver_slots(self, chosen: minimal.Spellings | None) -> _DriverSlots:
        seed = None if chosen is None else chosen.seed
        slots = self._slots.get(seed)
        if slots is None:
            body = self.list_cars_body if chosen is None else self.minimal_list_cars_body(chosen)
            slots = _DriverSlots(body, [vehicle.driver_id for vehicle in self.vehicles])
            self._slots[seed] = slots
            while len(self._slots) > _SLOTS_KEPT:
                self._slots.popitem(last=False)
        self._slots.move_to_end(seed)
        return slots

    def find(self, plate: str) -> Vehicle | None:
        return self._by_plate.get(normalise_plate(plate))

    def index(self, vehicle: Vehicle) -> int:
        """The vehicle's place in the fleet (and in its schedule): ids run from 1."""
        return vehicle.id - 1


class _DriverSlots:
    """A serialised list-cars answer cut at each vehicle's `"driver_id":`, so that other
    drivers can be put in with one `join` instead of serialising the fleet again."""

    def __init__(self, body: bytes, drivers: Sequence[int]) -> None:
        head, *rests = body.split(_DRIVER_MEMBER)
        # No other member or value holds the member's name: one cut per vehicle.
        if len(rests) != len(drivers):
            raise AssertionError("the answer does not hold one driver_id per vehicle")
        # Each rest starts with the vehicle's own driver id: drop it.
        self._pieces = [head] + [
            rest[len(str(driver)) :] for rest, driver in zip(rests, drivers, strict=True)
        ]

    def fill(self, drivers: Sequence[int]) -> bytes:
        pieces: list[bytes] = [b""] * (2 * len(drivers) + 1)
        pieces[0::2] = self._pieces
        pieces[1::2] = map((_DRIVER_MEMBER + b"%d").__mod__, drivers)
        return b"".join(pieces)


def generate_vehicles(count: int, seed: int) -> list[Vehicle]:
    """`count` vehicles with unique plates, the same ones for the same seed.

    Each field is drawn for the whole fleet in one call (`choices(k=count)`):
    per-vehicle calls made 100,000 vehicles take most of a second.
    """
    if not 0 <= count <= MAX_VEHICLES:
        raise ValueError(f"the fleet holds 0 to {MAX_VEHICLES} vehicles")
    rng = random.Random(seed)
    plates = _unique_plates(rng, count)
    models = rng.choices(list(_MODELS), weights=list(_MODELS.values()), k=count)
    actives = rng.choices(("0", "1"), weights=(_INACTIVE_SHARE, 1 - _INACTIVE_SHARE), k=count)
    drivers = rng.choices(range(101, 101 + max(count, 1)), k=count)
    years = rng.choices(range(_FIRST_YEAR, _LAST_YEAR + 1), k=count)
    colors = rng.choices(list(_COLORS), weights=list(_COLORS.values()), k=count)
    renavams = rng.choices(range(10**10), k=count)
    return [
        Vehicle(number, plate, model, active, driver, year, color, _renavam(base))
        for number, plate, model, active, driver, year, color, base in zip(
            range(1, count + 1),
            plates,
            models,
            actives,
            drivers,
            years,
            colors,
            renavams,
            strict=True,
        )
    ]


def _unique_plates(rng: random.Random, count: int) -> list[str]:
    """Half the old `ABC1234` format, half the Mercosul `ABC1D23`, no repeats."""
    plates: dict[str, None] = {}  # a dict keeps the drawing order, hence determinism
    while len(plates) < count:
        missing = count - len(plates)
        letters = rng.choices(_LETTERS, k=4 * missing)
        digits = rng.choices(_DIGITS, k=4 * missing)
        mercosul = rng.choices((False, True), k=missing)
        for n, is_mercosul in enumerate(mercosul):
            prefix = "".join(letters[4 * n : 4 * n + 3])
            d = digits[4 * n : 4 * n + 4]
            if is_mercosul:
                plate = f"{prefix}{d[0]}{letters[4 * n + 3]}{d[1]}{d[2]}"
            else:
                plate = f"{prefix}{d[0]}{d[1]}{d[2]}{d[3]}"
            plates[plate] = None
    return list(plates)


def _renavam(number: int) -> str:
    """An 11-digit RENAVAM: `number` as ten digits, then its check digit."""
    total, rest = 0, number
    for table in _RENAVAM_PAIR_SUMS:
        rest, pair = divmod(rest, 100)
        total += table[pair]
    check = total * 10 % 11
    return f"{number:010d}{0 if check == 10 else check}"
