"""`LocalCooldown`: the per-route pause, on a clock the test controls."""

from __future__ import annotations

import threading

from fleet.api.cooldown import Cooldown, LocalCooldown


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_route_without_a_hold_may_be_called_now() -> None:
    assert LocalCooldown().remaining("/key/list-cars") == 0.0


def test_hold_pauses_only_that_route_for_the_given_seconds() -> None:
    clock = FakeClock()
    cooldown = LocalCooldown(clock=clock)
    cooldown.hold("/key/list-cars", 30)
    clock.now += 10
    assert cooldown.remaining("/key/list-cars") == 20
    assert cooldown.remaining("/key/generator") == 0.0


def test_the_pause_ends_after_its_seconds() -> None:
    clock = FakeClock()
    cooldown = LocalCooldown(clock=clock)
    cooldown.hold("/key/list-cars", 5)
    clock.now += 5
    assert cooldown.remaining("/key/list-cars") == 0.0


def test_a_shorter_hold_never_shortens_a_longer_pause() -> None:
    clock = FakeClock()
    cooldown = LocalCooldown(clock=clock)
    cooldown.hold("/key/list-cars", 30)
    cooldown.hold("/key/list-cars", 1)
    assert cooldown.remaining("/key/list-cars") == 30


def test_a_longer_hold_extends_the_pause() -> None:
    clock = FakeClock()
    cooldown = LocalCooldown(clock=clock)
    cooldown.hold("/key/list-cars", 1)
    cooldown.hold("/key/list-cars", 30)
    assert cooldown.remaining("/key/list-cars") == 30


def test_holds_from_many_threads_keep_the_longest() -> None:
    clock = FakeClock()
    cooldown = LocalCooldown(clock=clock)
    threads = [threading.Thread(target=cooldown.hold, args=("/r", float(n))) for n in range(1, 51)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert cooldown.remaining("/r") == 50


def test_local_cooldown_satisfies_the_protocol() -> None:
    cooldown: Cooldown = LocalCooldown()
    cooldown.hold("/r", 0)
    assert cooldown.remaining("/r") == 0.0
