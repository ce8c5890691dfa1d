"""The fictitious fleet: deterministic vehicles from `--vehicles N --seed S`.

The same seed gives the same fleet byte for byte, so a test or a demo can
name a plate. The `/key/list-cars` answer is serialised once here and served
as bytes: the portal benchmarks against it and the emulator must not be the
slow side. So is the minimal mode's, once per spelling seed, when first asked.
"""

from __future__ import annotations

import random
import string
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import NamedTuple

from emulator import minimal
from emulator.messages import encode_json

MAX_VEHICLES = 1_000_000
# Minimal-mode list-cars answers kept, by spelling seed (about 13 MB each at
# 100,000 vehicles); past this many, the least recently used is dropped.
_MINIMAL_BODIES_KEPT = 2

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
    def __init__(self, vehicles: Sequence[Vehicle]) -> None:
        self.vehicles = tuple(vehicles)
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

    def find(self, plate: str) -> Vehicle | None:
        return self._by_plate.get(normalise_plate(plate))


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
