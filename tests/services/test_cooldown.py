"""`CacheCooldown`: a route's Retry-After pause, shared by every worker through the cache."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from fleet.api.client import LIST_VEHICLES
from fleet.api.errors import RateLimited
from fleet.services.connection import fleet_client, fleet_clients_forget
from fleet.services.cooldown import CacheCooldown
from tests.conftest import Emulator
from tests.services.conftest import LIST_CARS


def test_a_route_without_a_hold_may_be_called_now() -> None:
    assert CacheCooldown().remaining(LIST_VEHICLES) == 0.0


def test_hold_pauses_only_that_route_for_the_given_seconds(held_clock: Any) -> None:
    cooldown = CacheCooldown()
    cooldown.hold(LIST_VEHICLES, 30)
    held_clock.shift(10)
    assert cooldown.remaining(LIST_VEHICLES) == pytest.approx(20)
    assert cooldown.remaining("/key/generator") == 0.0


def test_the_pause_ends_after_its_seconds(held_clock: Any) -> None:
    cooldown = CacheCooldown()
    cooldown.hold(LIST_VEHICLES, 5)
    held_clock.shift(5)
    assert cooldown.remaining(LIST_VEHICLES) == 0.0


def test_a_shorter_hold_never_shortens_a_longer_pause(held_clock: Any) -> None:
    cooldown = CacheCooldown()
    cooldown.hold(LIST_VEHICLES, 30)
    cooldown.hold(LIST_VEHICLES, 1)
    assert cooldown.remaining(LIST_VEHICLES) == pytest.approx(30)


def test_a_longer_hold_extends_the_pause(held_clock: Any) -> None:
    cooldown = CacheCooldown()
    cooldown.hold(LIST_VEHICLES, 1)
    cooldown.hold(LIST_VEHICLES, 30)
    assert cooldown.remaining(LIST_VEHICLES) == pytest.approx(30)


def test_zero_negative_and_nan_holds_pause_nothing() -> None:
    cooldown = CacheCooldown()
    for seconds in (0, -5, float("nan")):
        cooldown.hold(LIST_VEHICLES, seconds)
    assert cooldown.remaining(LIST_VEHICLES) == 0.0


def test_the_pause_is_seen_by_every_worker_of_the_same_scope(held_clock: Any) -> None:
    CacheCooldown(scope="one-api").hold(LIST_VEHICLES, 30)
    assert CacheCooldown(scope="one-api").remaining(LIST_VEHICLES) == pytest.approx(30)
    assert CacheCooldown(scope="another-api").remaining(LIST_VEHICLES) == 0.0


def test_holds_from_many_threads_keep_the_longest(held_clock: Any) -> None:
    threads = [
        threading.Thread(target=CacheCooldown().hold, args=(LIST_VEHICLES, float(n)))
        for n in range(1, 21)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert CacheCooldown().remaining(LIST_VEHICLES) == pytest.approx(20)


def test_the_portal_client_pauses_every_worker_after_a_long_retry_after(
    fleet_settings: Any, emulator: Emulator, held_clock: Any
) -> None:
    emulator.fault("/key/list-cars", status=429, retry_after=30)
    with pytest.raises(RateLimited):
        fleet_client().list_vehicle_columns()

    fleet_clients_forget()  # another worker: its own client, the same cache
    with pytest.raises(RateLimited) as refused:
        fleet_client().list_vehicle_columns()

    assert emulator.calls(LIST_CARS) == 1
    assert refused.value.retry_after == pytest.approx(30)


def test_the_portal_client_waits_out_a_pause_that_fits_its_retry_budget(
    fleet_settings: Any, emulator: Emulator
) -> None:
    emulator.fault("/key/list-cars", status=429, retry_after=1)
    started = time.monotonic()
    fleet = fleet_client().list_vehicle_columns()
    assert time.monotonic() - started >= 1
    assert fleet.total == 200
    assert emulator.calls(LIST_CARS) == 2
    assert isinstance(fleet_client().cooldown, CacheCooldown)
