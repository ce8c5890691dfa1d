"""Fixtures of the service tests (tests/conftest.py empties the cache and memo per test)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Emulator

LIST_CARS = "GET /key/list-cars"


def envelope(*vehicles: dict[str, Any]) -> dict[str, Any]:
    """A `list-cars` answer holding exactly `vehicles`."""
    return {
        "cars": {"data": list(vehicles), "total": len(vehicles)},
        "error": False,
        "code": "fbk_200",
    }


def vehicle(
    vehicle_id: int, plate: str, model: str, *, active: bool = True, driver: int | None = 100
) -> dict[str, Any]:
    return {
        "id": vehicle_id,
        "car_plate": plate,
        "model": model,
        "active": "1" if active else "0",
        "driver_id": driver,
    }


# Both plate formats, plates as the API may hold them, accents, inactive ones;
# not in plate order, so that sorts must break their ties by plate.
SMALL_FLEET = envelope(
    vehicle(5, "QWE 5678", "Toyota Hilux", active=False, driver=105),
    vehicle(3, "XYZ9876", "Citroën C3", driver=103),
    vehicle(1, "ABC1D23", "Chevrolet Onix", driver=101),
    vehicle(6, "KLM3F45", "CITROËN C4 Cactus", driver=None),
    vehicle(4, "BRA2E19", "Fiat Strada", driver=104),
    vehicle(2, "abc-1234", "Toyota Hilux", active=False, driver=None),
)


@pytest.fixture
def small_fleet(fleet_settings: Any, emulator: Emulator) -> Emulator:
    """The emulator, answering the next `list-cars` with `SMALL_FLEET`."""
    emulator.fault("/key/list-cars", body=SMALL_FLEET)
    return emulator
