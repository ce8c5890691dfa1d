"""Vehicles change hands: the schedule, list-cars as the clock moves, the record of
hand-overs (`/_emulator/handovers`) and the switch."""

from __future__ import annotations

import hashlib
import threading
from collections import Counter
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from typing import Any

import pytest
import requests

from emulator.fleet import Fleet, generate_vehicles
from emulator.handovers import DAILY, SEVERAL_A_DAY, WEEKS, Schedule, hour_of, start_of
from tests.conftest import Emulator, start_emulator
from tests.emulator.support import Api

# GET /key/list-cars of `--vehicles 200 --seed 1` in normal mode, as it was before vehicles
# could change hands: with hand-overs off, the answer must not move by a byte.
STATIC_LIST_CARS_SHA256 = "8e2e840e4a187830cb41b4756fff9cc1b2f6f503c00d88b7452d7f6769d633cc"
NOW = datetime(2026, 11, 5, 10, 30, tzinfo=UTC)


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def drivers(api: Api) -> dict[str, int]:
    """Each plate's driver as GET /key/list-cars shows it now."""
    response = api.get("/key/list-cars")
    assert response.status_code == 200
    return {car["car_plate"]: car["driver_id"] for car in response.json()["cars"]["data"]}


def set_clock(emulator: Emulator, moment: datetime) -> None:
    emulator.control("POST", "clock", set=iso(moment))


def handovers_answer(emulator: Emulator, **params: str) -> requests.Response:
    return requests.get(f"{emulator.url}/_emulator/handovers", params=params, timeout=30)


# The schedule


def fleet_drivers(count: int, seed: int = 1) -> list[int]:
    return [vehicle.driver_id for vehicle in generate_vehicles(count, seed)]


def test_the_schedule_is_a_function_of_the_seed_and_the_fleet() -> None:
    drivers_of_fleet = fleet_drivers(300)
    first, again = Schedule(1, drivers_of_fleet), Schedule(1, drivers_of_fleet)
    other = Schedule(2, drivers_of_fleet)

    assert (first.periods, first.phases, first.pools) == (again.periods, again.phases, again.pools)
    assert first.drivers_at(500_000) == again.drivers_at(500_000)
    assert (first.periods, first.phases, first.pools) != (other.periods, other.phases, other.pools)


def test_every_boundary_changes_the_driver_and_nothing_else_does() -> None:
    schedule = Schedule(1, fleet_drivers(300))
    start = hour_of(NOW)
    hours = range(start - 60 * 24, start + 1)
    by_hour = {hour: schedule.drivers_at(hour) for hour in range(hours[0] - 1, hours[-1] + 1)}

    changes = 0
    for vehicle in range(len(schedule)):
        boundaries = set(schedule.handover_hours(vehicle, hours[0], hours[-1]))
        for hour in hours:
            changed = by_hour[hour][vehicle] != by_hour[hour - 1][vehicle]
            assert changed == (hour in boundaries), (vehicle, hour)
            changes += changed
    assert changes == schedule.count(hours[0], hours[-1]) > 300


def test_kinds_periods_and_pools_are_as_described() -> None:
    own = fleet_drivers(20_000, seed=4)
    schedule = Schedule(4, own)

    kinds = Counter(schedule.kind(vehicle) for vehicle in range(len(schedule)))
    assert 0.77 < kinds[WEEKS] / 20_000 < 0.83
    assert 0.13 < kinds[DAILY] / 20_000 < 0.17
    assert 0.04 < kinds[SEVERAL_A_DAY] / 20_000 < 0.06
    for vehicle, (period, phase, pool) in enumerate(
        zip(schedule.periods, schedule.phases, schedule.pools, strict=True)
    ):
        kind = schedule.kind(vehicle)
        if kind == WEEKS:
            assert 14 * 24 <= period <= 42 * 24
        elif kind == DAILY:
            assert period == 24
            assert 8 <= phase <= 12  # 05:00 to 09:00 in Brasília
        else:
            assert 3 <= period <= 8
        assert 0 <= phase < period
        assert pool[0] == own[vehicle]
        assert len(pool) in (2, 3)
        assert len(set(pool)) == len(pool)
        assert all(101 <= driver <= 101 + 20_000 for driver in pool)


@pytest.mark.parametrize("count", [1, 2, 3])
def test_a_tiny_fleet_still_has_distinct_drivers(count: int) -> None:
    schedule = Schedule(1, fleet_drivers(count))

    assert all(len(set(pool)) == len(pool) >= 2 for pool in schedule.pools)


def test_a_daily_vehicle_changes_hands_in_the_brasilia_morning() -> None:
    schedule = Schedule(1, fleet_drivers(300))
    daily = [vehicle for vehicle in range(300) if schedule.kind(vehicle) == DAILY]
    start = hour_of(NOW)

    hours = {
        start_of(hour).hour
        for vehicle in daily
        for hour in schedule.handover_hours(vehicle, start, start + 24 * 7)
    }

    assert daily
    assert hours <= set(range(8, 13))


def test_concurrent_first_calls_for_an_hour_build_its_answer_once() -> None:
    fleet = Fleet(generate_vehicles(2_000, 1), seed=1)
    barrier = threading.Barrier(8)
    bodies: list[bytes] = []

    def call() -> None:
        barrier.wait()
        bodies.append(fleet.list_cars_body_at(NOW, None))

    threads = [threading.Thread(target=call) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(bodies) == 8
    assert all(body is bodies[0] for body in bodies)
    assert fleet.list_cars_body_at(NOW + timedelta(minutes=29), None) is bodies[0]
    assert fleet.list_cars_body_at(NOW + timedelta(hours=1), None) is not bodies[0]


# list-cars as the clock moves


@pytest.fixture
def switched_on(emulator: Emulator) -> Emulator:
    """The emulator at NOW (10:30 UTC) with vehicles changing hands (a reset undoes both)."""
    set_clock(emulator, NOW)
    emulator.switch_handovers(True)
    return emulator


@pytest.mark.parametrize("minimal", [False, True], ids=["normal", "minimal"])
def test_list_cars_shows_from_then_to_across_a_recorded_handover(
    api: Api, switched_on: Emulator, minimal: bool
) -> None:
    emulator = switched_on
    emulator.control("POST", "mode", minimal=minimal, spelling_seed=3)
    recorded = emulator.handovers(iso(NOW), iso(NOW + timedelta(days=2)))
    assert len(recorded) > 10

    for handover in recorded[:: len(recorded) // 5]:
        at = datetime.fromisoformat(handover["at"])
        set_clock(emulator, at - timedelta(minutes=30))
        before = drivers(api)
        set_clock(emulator, at + timedelta(minutes=30))
        after = drivers(api)

        assert before[handover["plate"]] == handover["from"]
        assert after[handover["plate"]] == handover["to"]
        # Only the vehicles that changed hands at that hour changed.
        changed = {plate for plate in after if after[plate] != before[plate]}
        assert changed == {h["plate"] for h in recorded if h["at"] == handover["at"]}


def test_the_answer_is_the_same_within_an_hour_and_holds_every_vehicle(
    api: Api, switched_on: Emulator
) -> None:
    first = api.get("/key/list-cars")  # at 10:30
    switched_on.advance(20 * 60)

    moved = api.get("/key/list-cars")

    assert moved.content == first.content
    cars = moved.json()["cars"]
    assert cars["total"] == len(cars["data"]) == 200
    assert {car["id"] for car in cars["data"]} == set(range(1, 201))


@pytest.mark.emulator_mode("normal")
def test_off_list_cars_is_the_static_answer_byte_for_byte(api: Api, emulator: Emulator) -> None:
    before = api.get("/key/list-cars").content
    set_clock(emulator, NOW)
    emulator.switch_handovers(True)
    assert api.get("/key/list-cars").content != before

    emulator.switch_handovers(False)

    assert api.get("/key/list-cars").content == before
    assert hashlib.sha256(before).hexdigest() == STATIC_LIST_CARS_SHA256


def test_reset_switches_handovers_back_to_the_start_setting(
    api: Api, switched_on: Emulator
) -> None:
    emulator = switched_on
    handed_over = api.get("/key/list-cars").content

    emulator.reset()

    answer = handovers_answer(emulator, since=iso(NOW), until=iso(NOW + timedelta(hours=1)))
    assert answer.json()["enabled"] is False
    static = api.get("/key/list-cars").content
    set_clock(emulator, NOW)
    assert api.get("/key/list-cars").content == static != handed_over


def test_a_process_started_with_handovers_shows_them() -> None:
    process, url = start_emulator("--vehicles", "50", "--seed", "1", "--handovers")
    try:
        answer = requests.get(
            f"{url}/_emulator/handovers",
            params={"since": iso(NOW), "until": iso(NOW + timedelta(days=3))},
            timeout=10,
        ).json()
        requests.post(
            f"{url}/_emulator/clock", json={"set": answer["handovers"][0]["at"]}, timeout=10
        )
        shown = drivers(Api(url))
    finally:
        process.terminate()
        process.wait(timeout=10)

    first = answer["handovers"][0]
    assert answer["enabled"] is True
    assert shown[first["plate"]] == first["to"]


# The record of hand-overs


def test_the_record_lists_the_windows_handovers_by_time_then_plate(emulator: Emulator) -> None:
    listed = emulator.handovers(iso(NOW), iso(NOW + timedelta(days=3)))

    assert listed == sorted(listed, key=lambda handover: (handover["at"], handover["plate"]))
    assert all(handover["from"] != handover["to"] for handover in listed)
    assert all(handover["at"].endswith(":00:00Z") for handover in listed)
    assert all(NOW < datetime.fromisoformat(h["at"]) <= NOW + timedelta(days=3) for h in listed)
    assert len({handover["plate"] for handover in listed}) > 20


def test_since_is_excluded_and_until_included(emulator: Emulator) -> None:
    at = emulator.handovers(iso(NOW), iso(NOW + timedelta(days=1)))[0]["at"]
    moment = datetime.fromisoformat(at)

    assert at not in {h["at"] for h in emulator.handovers(at, iso(moment + timedelta(hours=2)))}
    assert at in {h["at"] for h in emulator.handovers(iso(moment - timedelta(hours=2)), at)}


def test_the_record_for_one_plate_is_that_plates_share_of_the_whole(emulator: Emulator) -> None:
    since, until = iso(NOW), iso(NOW + timedelta(days=60))
    whole = emulator.handovers(since, until)
    plate = Counter(handover["plate"] for handover in whole).most_common(1)[0][0]

    mine = emulator.handovers(since, until, plate=plate.lower())

    assert mine == [handover for handover in whole if handover["plate"] == plate]
    # One after the other: each hand-over starts from the driver the last one gave the vehicle.
    assert all(a["to"] == b["from"] for a, b in pairwise(mine))


def test_the_record_is_the_schedule_whether_on_or_off(emulator: Emulator) -> None:
    params = {"since": iso(NOW), "until": iso(NOW + timedelta(days=1))}
    off = handovers_answer(emulator, **params).json()
    emulator.switch_handovers(True)
    on = handovers_answer(emulator, **params).json()

    assert (off["enabled"], on["enabled"]) == (False, True)
    assert off["handovers"] == on["handovers"] != []


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({"since": "yesterday", "until": "2026-11-06T00:00:00Z"}, "since must be an ISO 8601"),
        ({"since": "2026-11-05T00:00:00Z", "until": "2026-13-01"}, "until must be an ISO 8601"),
        ({"until": "2026-11-06T00:00:00Z"}, "give since and until"),
        ({"since": "2026-11-06T00:00:00Z", "until": "2026-11-05T00:00:00Z"}, "later than"),
        ({"since": "2026-01-01T00:00:00Z", "until": "2027-02-06T00:00:00Z"}, "400 days"),
    ],
)
def test_a_bad_window_is_refused_with_what_to_fix(
    emulator: Emulator, params: dict[str, str], says: str
) -> None:
    response = handovers_answer(emulator, **params)

    assert response.status_code == 400
    assert says in response.json()["error"]


def test_a_plate_not_in_the_fleet_is_not_found(emulator: Emulator) -> None:
    response = handovers_answer(
        emulator, since=iso(NOW), until=iso(NOW + timedelta(days=1)), plate="ZZZ9Z99"
    )

    assert response.status_code == 404
    assert "plate" in response.json()["error"]


def test_a_window_of_too_many_handovers_asks_for_a_narrower_one_or_a_plate() -> None:
    # 2,000 vehicles change hands some 800 times a day: 400 days is too many to list.
    process, url = start_emulator("--vehicles", "2000", "--seed", "1")
    record = f"{url}/_emulator/handovers"
    wide = {"since": iso(NOW), "until": iso(NOW + timedelta(days=400))}
    try:
        refused = requests.get(record, params=wide, timeout=30)
        one_day = {"since": iso(NOW), "until": iso(NOW + timedelta(days=1))}
        narrow = requests.get(record, params=one_day, timeout=30)
        plate = narrow.json()["handovers"][0]["plate"]
        one_plate = requests.get(record, params=wide | {"plate": plate}, timeout=30)
    finally:
        process.terminate()
        process.wait(timeout=10)

    assert refused.status_code == 400
    assert "narrower window or for one plate" in refused.json()["error"]
    assert narrow.status_code == one_plate.status_code == 200
    assert 0 < len(narrow.json()["handovers"]) < len(one_plate.json()["handovers"]) * 100


# The switch


@pytest.mark.parametrize(
    "body", [{}, {"enabled": "yes"}, {"enabled": 1}, {"enabled": None}, {"on": True}, ["enabled"]]
)
def test_a_bad_switch_body_is_refused(emulator: Emulator, body: Any) -> None:
    response = requests.post(f"{emulator.url}/_emulator/handovers", json=body, timeout=10)

    assert response.status_code == 400
    assert isinstance(response.json()["error"], str)


def test_the_switch_answers_what_it_set(emulator: Emulator) -> None:
    assert emulator.control("POST", "handovers", enabled=True) == {"enabled": True}
    assert emulator.control("POST", "handovers", enabled=False) == {"enabled": False}
