"""`list_vehicle_columns`: the fleet, read tolerantly and fast."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from fleet.api.client import FleetClient
from fleet.api.errors import FleetError, InvalidResponse
from fleet.api.resources import (
    CAR_BATCH,
    WHOLE_ANSWER_BYTES,
    VehicleColumns,
    vehicle_columns_from_bytes,
    vehicle_columns_from_json,
)
from tests.api.conftest import DEMO_SECRET, DEMO_TOKEN
from tests.conftest import Emulator, start_emulator


def _envelope(*vehicles: dict[str, Any], total: int | None = None) -> dict[str, Any]:
    return {
        "cars": {"data": list(vehicles), "total": len(vehicles) if total is None else total},
        "error": False,
        "code": "fbk_200",
    }


def _vehicle(**members: Any) -> dict[str, Any]:
    vehicle = {
        "id": 1,
        "car_plate": "ABC1D23",
        "model": "Fiat Strada",
        "active": "1",
        "driver_id": 101,
    }
    vehicle.update(members)
    return {k: v for k, v in vehicle.items() if v is not ...}


def test_it_lists_the_emulator_fleet(emulator: Emulator, client: FleetClient) -> None:
    expected = emulator.vehicles()
    result = client.list_vehicle_columns()
    assert isinstance(result, VehicleColumns)
    assert result.total == len(result) == len(expected) == 200
    assert list(result.ids) == [v["id"] for v in expected]
    assert result.plates == [v["car_plate"] for v in expected]
    assert result.models == [v["model"] for v in expected]
    assert result.driver_ids == [v["driver_id"] for v in expected]


def test_active_flag_is_a_bool_true_only_for_the_string_one(
    emulator: Emulator, client: FleetClient
) -> None:
    result = client.list_vehicle_columns()
    assert set(result.actives) == {0, 1}, "the emulator has active and inactive vehicles"
    raw = {v["id"]: v["active"] for v in emulator.vehicles()}
    assert all(
        active == (raw[id_] == "1") for id_, active in zip(result.ids, result.actives, strict=True)
    )


@pytest.mark.parametrize(
    ("flag", "active"),
    [("1", True), ("0", False), ("true", False), (1, False), (True, False), (None, False)],
)
def test_only_the_string_one_means_active(
    emulator: Emulator, client: FleetClient, flag: object, active: bool
) -> None:
    emulator.fault("/key/list-cars", body=_envelope(_vehicle(active=flag)))
    assert client.list_vehicle_columns().actives == bytes([active])


def test_unknown_members_are_ignored(emulator: Emulator, client: FleetClient) -> None:
    emulator.fault(
        "/key/list-cars",
        body={**_envelope(_vehicle(year=2022, color="Branco", extra={"x": 1})), "page": 1},
    )
    assert client.list_vehicle_columns() == VehicleColumns.of(
        ids=[1],
        plates=["ABC1D23"],
        models=["Fiat Strada"],
        actives=bytes([1]),
        driver_ids=[101],
        total=1,
    )


def test_vehicle_without_a_driver_has_driver_id_none(
    emulator: Emulator, client: FleetClient
) -> None:
    emulator.fault(
        "/key/list-cars",
        body=_envelope(_vehicle(id=1, driver_id=None), _vehicle(id=2, driver_id=...)),
    )
    assert client.list_vehicle_columns().driver_ids == [None, None]


@pytest.mark.parametrize(
    "vehicle",
    [
        _vehicle(car_plate=...),
        _vehicle(id=...),
        _vehicle(model=...),
        _vehicle(id="1"),
        _vehicle(driver_id="101"),
        "ABC1D23",
    ],
    ids=["no plate", "no id", "no model", "string id", "string driver", "not an object"],
)
def test_a_vehicle_without_its_required_members_is_an_invalid_response(
    emulator: Emulator, client: FleetClient, vehicle: object
) -> None:
    emulator.fault("/key/list-cars", body=_envelope(vehicle))  # type: ignore[arg-type]
    with pytest.raises(InvalidResponse) as raised:
        client.list_vehicle_columns()
    assert raised.value.route == "/key/list-cars"
    assert raised.value.status == 200


@pytest.mark.parametrize(
    "body",
    [
        {"unexpected": "shape"},
        {"cars": []},
        {"cars": {"data": {}, "total": 0}},
        {"cars": {"data": [], "total": "0"}},
        [1, 2],
        {"cars": {"data": [_vehicle(id=True)], "total": 1}},
        {"cars": {"data": [_vehicle(id=1.0)], "total": 1}},
        {"cars": {"data": [], "total": False}},
        # Numbers no 64-bit integer holds: a hostile answer, not a crash.
        {"cars": {"data": [_vehicle(id=2**63)], "total": 1}},
        {"cars": {"data": [_vehicle(driver_id=-(2**70))], "total": 1}},
    ],
)
def test_wrong_shape_is_an_invalid_response(
    emulator: Emulator, client: FleetClient, body: object
) -> None:
    emulator.fault("/key/list-cars", body=body)
    with pytest.raises(InvalidResponse):
        client.list_vehicle_columns()


def test_non_json_answer_is_an_invalid_response(emulator: Emulator, client: FleetClient) -> None:
    emulator.fault("/key/list-cars", malformed=True)
    with pytest.raises(InvalidResponse, match="not JSON"):
        client.list_vehicle_columns()


def test_concurrent_calls_from_many_threads_share_one_client(client: FleetClient) -> None:
    results: list[VehicleColumns] = []
    failures: list[BaseException] = []

    def work() -> None:
        try:
            results.append(client.list_vehicle_columns())
        except BaseException as error:  # collected and asserted below
            failures.append(error)

    threads = [threading.Thread(target=work) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert len(results) == 16
    assert all(r == results[0] for r in results)


@pytest.fixture(scope="module")
def big_fleet_url() -> Iterator[str]:
    process, url = start_emulator("--vehicles", "100000", "--seed", "3")
    yield url
    process.terminate()
    process.wait(timeout=10)


def test_a_fleet_of_100000_vehicles_is_read_whole(big_fleet_url: str) -> None:
    # Its speed is a benchmark's business (bench/), against a baseline of the same run.
    with FleetClient(
        base_url=big_fleet_url, access_token=DEMO_TOKEN, secret_key=DEMO_SECRET, read_timeout=30
    ) as client:
        result = client.list_vehicle_columns()
    assert result.total == len(result) == 100_000
    assert len(set(result.plates)) == 100_000


@pytest.mark.parametrize(
    ("member", "value", "message"),
    [
        ("id", "7", "vehicle '7' has a member of the wrong type"),
        ("driver_id", "x", "vehicle 1 has a member of the wrong type"),
        ("model", ..., "vehicle #2 has no 'model'"),
    ],
)
def test_columns_name_the_bad_vehicle(
    emulator: Emulator, client: FleetClient, member: str, value: Any, message: str
) -> None:
    emulator.fault("/key/list-cars", body=_envelope(_vehicle(id=9), _vehicle(**{member: value})))

    with pytest.raises(InvalidResponse, match=message):
        client.list_vehicle_columns()


def test_the_fast_read_of_the_bytes_gives_the_same_columns_as_the_usual_one() -> None:
    body = _envelope(
        _vehicle(id=1, active="1", driver_id=None, extra={"nested": [1]}),
        _vehicle(id=2, car_plate="ABC-1234", active="0", driver_id=77),
        _vehicle(id=3, active=1),
        total=3,
    )

    fast = vehicle_columns_from_bytes(json.dumps(body).encode())

    assert fast == vehicle_columns_from_json(body)
    assert fast is not None
    assert fast.actives == bytes([1, 0, 0])


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[1, 2]",
        b'{"cars": {"data": [{"id": true, "car_plate": "A", "model": "M"}], "total": 1}}',
        b'{"cars": {"data": [], "total": 0}, "error": true, "code": "fbk_x", "message": "m"}',
    ],
    ids=["not json", "not an object", "a bool for an id", "a v1 error envelope"],
)
def test_the_fast_read_leaves_anything_unexpected_to_the_usual_one(body: bytes) -> None:
    assert vehicle_columns_from_bytes(body) is None


def test_a_v1_error_envelope_answered_200_is_still_an_error(
    emulator: Emulator, client: FleetClient
) -> None:
    envelope = {"error": True, "code": "fbk_error", "message": "Erro interno", "cars": {}}
    emulator.fault("/key/list-cars", body=envelope)

    with pytest.raises(FleetError, match="Erro interno") as raised:
        client.list_vehicle_columns()
    assert not isinstance(raised.value, InvalidResponse)


@pytest.mark.parametrize("whole_bytes", [0, WHOLE_ANSWER_BYTES], ids=["in batches", "at once"])
def test_the_fast_read_of_many_batches_keeps_every_vehicle_in_order(whole_bytes: int) -> None:
    """A large answer's vehicles are decoded `CAR_BATCH` at a time: across the batches'
    edges, none is lost, doubled or moved, and the models seen in one batch keep their
    code in the next. A smaller one (this one, by default) is decoded in one pass, to the
    same columns."""
    count = 2 * CAR_BATCH + 1
    body = _envelope(
        *(
            _vehicle(
                id=number,
                car_plate=f"ABC{number:04d}"[-7:],
                model=f"Modelo {number % 7}",
                active="1" if number % 3 else "0",
                driver_id=None if number % 5 == 0 else 10_000 + number,
            )
            for number in range(1, count + 1)
        ),
        total=count,
    )

    fast = vehicle_columns_from_bytes(json.dumps(body).encode(), whole_bytes=whole_bytes)

    assert fast is not None
    assert fast == vehicle_columns_from_json(body)
    assert list(fast.ids) == list(range(1, count + 1))
    assert fast.models[CAR_BATCH - 1 : CAR_BATCH + 2] == [
        f"Modelo {number % 7}" for number in range(CAR_BATCH, CAR_BATCH + 3)
    ]
    assert len(fast.model_names) == 7


def test_ids_are_kept_in_four_bytes_until_one_needs_eight() -> None:
    """A million ids in 4 MB, not 8, while they fit; one that does not (in any batch)
    widens the column once, every id before it kept, in order."""
    small = VehicleColumns.of(
        ids=[1, 2, 3],
        plates=["ABC1D23", "ABC1D24", "ABC1D25"],
        models=["Onix"] * 3,
        actives=bytes(3),
        driver_ids=[None, 4_294_967_295, 7],
        total=3,
    )
    assert (small.ids.itemsize, small.drivers.itemsize) == (4, 4)

    count = CAR_BATCH + 2
    body = _envelope(
        *(
            _vehicle(id=number, car_plate=f"ABC{number:04d}"[-7:], driver_id=number)
            for number in range(1, count)
        ),
        _vehicle(id=1 << 40, car_plate="ZZZ9Z99", driver_id=-5),
        total=count,
    )
    wide = vehicle_columns_from_bytes(json.dumps(body).encode(), whole_bytes=0)

    assert wide is not None
    assert (wide.ids.itemsize, wide.drivers.itemsize) == (8, 8)
    assert list(wide.ids) == [*range(1, count), 1 << 40]
    assert wide.driver_ids == [*range(1, count), -5]
