"""GET /key/list-cars (spec 4.1) and the v1 envelope and vehicle fields (2.1, 2.2)."""

from __future__ import annotations

import re
from collections import Counter

from tests.conftest import Emulator
from tests.emulator.support import MERCOSUL_PLATE, OLD_PLATE, Api

KNOWN_BRANDS = (
    "Fiat", "VW", "Chevrolet", "Toyota", "Ford", "Renault", "Hyundai", "Iveco",
    "Mercedes-Benz", "Volvo", "Scania", "DAF", "Honda", "Yamaha",
)  # fmt: skip


def test_it_lists_the_fleet_in_the_v1_envelope(api: Api) -> None:
    response = api.get("/key/list-cars")

    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/json"
    body = response.json()
    assert body["error"] is False
    assert body["code"] == "fbk_200"
    assert set(body) == {"cars", "error", "code"}
    assert isinstance(body["cars"]["data"], list)
    assert body["cars"]["total"] == len(body["cars"]["data"]) == 200


def test_every_vehicle_has_the_spec_fields_with_their_types(api: Api) -> None:
    vehicles = api.get("/key/list-cars").json()["cars"]["data"]

    for vehicle in vehicles:
        assert type(vehicle["id"]) is int
        assert isinstance(vehicle["car_plate"], str)
        assert isinstance(vehicle["model"], str)
        assert type(vehicle["driver_id"]) is int
        # The flag is a string, not a boolean or a number (spec 2.2).
        assert vehicle["active"] in ("1", "0")


def test_vehicles_carry_extra_fields_for_tolerant_readers(api: Api) -> None:
    vehicles = api.get("/key/list-cars").json()["cars"]["data"]

    for vehicle in vehicles:
        assert 2000 <= vehicle["year"] <= 2030
        assert isinstance(vehicle["color"], str)
        assert re.fullmatch(r"[0-9]{11}", vehicle["renavam"])


def test_renavam_check_digit_is_valid(api: Api) -> None:
    weights = (3, 2, 9, 8, 7, 6, 5, 4, 3, 2)
    for vehicle in api.get("/key/list-cars").json()["cars"]["data"]:
        digits = vehicle["renavam"]
        check = sum(int(d) * w for d, w in zip(digits[:10], weights, strict=True)) * 10 % 11
        assert int(digits[10]) == (0 if check == 10 else check), digits


def test_plates_are_unique_and_mix_old_and_mercosul_formats(api: Api) -> None:
    plates = [v["car_plate"] for v in api.get("/key/list-cars").json()["cars"]["data"]]

    assert len(set(plates)) == len(plates)
    old = sum(bool(re.fullmatch(OLD_PLATE, plate)) for plate in plates)
    mercosul = sum(bool(re.fullmatch(MERCOSUL_PLATE, plate)) for plate in plates)
    assert old + mercosul == len(plates)
    assert 0.35 < old / len(plates) < 0.65


def test_about_one_vehicle_in_eight_is_inactive(api: Api) -> None:
    vehicles = api.get("/key/list-cars").json()["cars"]["data"]

    inactive = sum(vehicle["active"] == "0" for vehicle in vehicles)
    assert 0.04 < inactive / len(vehicles) < 0.25


def test_models_are_realistic_brazilian_fleet_vehicles(api: Api) -> None:
    models = Counter(v["model"] for v in api.get("/key/list-cars").json()["cars"]["data"])

    assert all(model.startswith(KNOWN_BRANDS) for model in models)
    assert len(models) >= 10
    assert "Fiat Strada" in models


def test_ids_are_distinct(emulator: Emulator) -> None:
    ids = [vehicle["id"] for vehicle in emulator.vehicles()]

    assert len(set(ids)) == len(ids)
