"""The shared vehicle list: one API call for the whole deployment, stale rather than nothing.

The shared vehicle list: one call for many requests, the cooldown. Every test
talks to a real emulator over loopback; time-machine moves the wall clock the
TTL and the Retry-After cooldown run on.
"""

from __future__ import annotations

import logging
import pickle
import threading
from datetime import UTC, datetime
from typing import Any

import pytest
from django.core.cache import cache

from bench.servers import free_port
from fleet.services.connection import fleet_cache_scope, fleet_clients_forget
from fleet.services.vehicle_cache import CacheKeys, decoded_snapshot, vehicles_forget
from fleet.services.vehicle_index import SNAPSHOT_FORMAT
from fleet.services.vehicles import (
    FleetDataUnavailable,
    vehicle_export,
    vehicle_get,
    vehicle_search,
    vehicles_refresh,
)
from tests.conftest import Emulator
from tests.interleave import start, watch
from tests.services.conftest import LIST_CARS, envelope, vehicle


@pytest.fixture
def clock(held_clock: Any) -> Any:
    """The wall clock, stopped now; tests move it with `shift`."""
    return held_clock


def run_at_once(count: int, work: Any) -> tuple[list[Any], list[BaseException]]:
    """Run `work()` in `count` threads released together; their results and failures.

    The thread that takes the refresh lock is held, before it calls the API, until each
    of the others has found the lock taken: all of them overlap that call, on any machine.
    """
    lock = CacheKeys(fleet_cache_scope()).lock
    start = threading.Barrier(count)
    results: list[Any] = []
    failures: list[BaseException] = []

    def run() -> None:
        start.wait()
        try:
            results.append(work())
        except BaseException as error:  # collected for the test to assert on
            failures.append(error)

    threads = [threading.Thread(target=run) for _ in range(count)]
    with watch("add", lock, hold=lambda call: call.result is True) as adds:
        for thread in threads:
            thread.start()
        adds.wait_held()
        adds.wait_for(
            lambda calls: len({c.thread for c in calls if c.result is False}) == count - 1,
            "the other threads did not all find the lock taken",
        )
    for thread in threads:
        thread.join(timeout=30)
    return results, failures


def fetched_just_now(fetched_at: datetime) -> bool:
    return abs((datetime.now(UTC) - fetched_at).total_seconds()) < 0.001


def another_worker() -> None:
    """Make this process look like another worker: its own client, no decoded list."""
    fleet_clients_forget()
    vehicles_forget()


# --- One call for many concurrent requests ------------------------------------


def test_many_concurrent_requests_on_a_cold_cache_make_exactly_one_api_call(
    fleet_settings: Any, emulator: Emulator
) -> None:
    fleet_settings.FLEET_VEHICLES_WAIT = 60  # the others wait for the one call, on a slow day

    pages, failures = run_at_once(20, lambda: vehicle_search(query="1"))

    assert failures == []
    assert emulator.calls(LIST_CARS) == 1
    assert len(pages) == 20
    assert {(p.fleet_total, p.total) for p in pages} == {(200, pages[0].total)}
    assert all(p.rows == pages[0].rows and not p.freshness.stale for p in pages)


def test_concurrent_requests_on_a_stale_list_make_one_call_and_the_others_serve_the_stale_one(
    fleet_settings: Any, emulator: Emulator, clock: Any
) -> None:
    fetched_at = vehicle_search().freshness.fetched_at
    clock.shift(61)

    pages, failures = run_at_once(20, vehicle_search)

    assert failures == []
    assert emulator.calls(LIST_CARS) == 2
    stale = [p for p in pages if p.freshness.stale]
    assert len(stale) == 19
    assert {p.freshness.fetched_at for p in stale} == {fetched_at}
    assert all(p.freshness.problem is None for p in stale)  # just not refreshed yet


def test_waiting_requests_share_the_failure_of_the_one_call(
    fleet_settings: Any, emulator: Emulator
) -> None:
    emulator.fault("/key/list-cars", status=503)

    pages, failures = run_at_once(10, vehicle_search)

    assert pages == []
    assert emulator.calls(LIST_CARS) == 1
    assert len(failures) == 10
    assert all(isinstance(f, FleetDataUnavailable) for f in failures)
    assert {f.outcome for f in failures if isinstance(f, FleetDataUnavailable)} == {"unavailable"}


def test_a_waiting_request_shares_a_failure_recorded_just_before_it_takes_the_lock(
    fleet_settings: Any, emulator: Emulator
) -> None:
    keys = CacheKeys(fleet_cache_scope())
    cache.add(keys.lock, "another-worker", timeout=60)  # another worker is fetching
    # The waiter looks for a failure after its first wait (its second look), finds none,
    # and is held there, before it tries the lock again.
    second_look = watch("get", keys.failure, hold=lambda c: c.thread == "waiter" and c.number == 2)
    with second_look as looks:
        waiter, outcome = start("waiter", vehicle_search)
        looks.wait_held()
        assert looks.held[0].result is None
        # Meanwhile that fetch ends in a 503: it is recorded and the lock is free.
        cache.delete(keys.lock)
        emulator.fault("/key/list-cars", status=503)
        with pytest.raises(FleetDataUnavailable):
            vehicle_search()
        assert emulator.calls(LIST_CARS) == 1
    waiter.join(timeout=30)

    assert len(outcome) == 1
    assert isinstance(outcome[0], FleetDataUnavailable)
    assert outcome[0].outcome == "unavailable"
    assert emulator.calls(LIST_CARS) == 1  # the waiter shared that failure


def test_a_stale_list_is_not_refreshed_again_right_after_a_refresh_failed_elsewhere(
    fleet_settings: Any, emulator: Emulator, clock: Any
) -> None:
    vehicle_search()
    clock.shift(61)
    keys = CacheKeys(fleet_cache_scope())
    # This worker looks for a failure (none yet) and is held before it takes the lock.
    with watch("get", keys.failure, hold=lambda call: call.thread == "worker") as looks:
        worker, outcome = start("worker", vehicle_search)
        looks.wait_held()
        assert looks.held[0].result is None
        # Meanwhile another worker's refresh fails, is recorded, and frees the lock.
        emulator.fault("/key/list-cars", status=503)
        assert vehicle_search().freshness.problem == "unavailable"
        assert emulator.calls(LIST_CARS) == 2
    worker.join(timeout=30)

    assert len(outcome) == 1
    page = outcome[0]
    assert page.freshness.stale
    assert page.freshness.problem == "unavailable"
    assert emulator.calls(LIST_CARS) == 2  # no call right after the failed one


def test_a_stale_list_published_elsewhere_just_before_this_worker_took_the_lock_is_served(
    fleet_settings: Any, emulator: Emulator, clock: Any
) -> None:
    first = vehicle_search()
    clock.shift(61)
    keys = CacheKeys(fleet_cache_scope())
    with watch("get", keys.failure, hold=lambda call: call.thread == "worker") as looks:
        worker, outcome = start("worker", vehicle_search)
        looks.wait_held()
        # Meanwhile another worker refreshes the list, stores it and frees the lock.
        clock.shift(1)
        refreshed = vehicle_search()
        assert refreshed.freshness.fetched_at != first.freshness.fetched_at
        assert emulator.calls(LIST_CARS) == 2
    worker.join(timeout=30)

    assert len(outcome) == 1
    assert not outcome[0].freshness.stale
    assert outcome[0].freshness.fetched_at == refreshed.freshness.fetched_at
    assert emulator.calls(LIST_CARS) == 2


def test_while_the_cache_cannot_be_reached_no_worker_refreshes_a_list_it_can_serve(
    fleet_settings: Any, emulator: Emulator, clock: Any, settings: Any
) -> None:
    first = vehicle_search()
    clock.shift(61)
    # Redis restarting: the cache keeps nothing, and no worker can hold the lock.
    settings.CACHES = {
        "default": {
            "BACKEND": "portal.cache.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{free_port()}/0",
        }
    }

    for _request in range(3):
        page = vehicle_search()
        assert page.freshness.stale
        assert page.freshness.fetched_at == first.freshness.fetched_at
    assert emulator.calls(LIST_CARS) == 1

    vehicles_forget()  # a worker with nothing to serve fetches the list for itself
    assert not vehicle_search().freshness.stale
    assert emulator.calls(LIST_CARS) == 2


def test_a_refresh_running_elsewhere_is_not_duplicated(
    fleet_settings: Any, emulator: Emulator, clock: Any
) -> None:
    vehicle_search()
    clock.shift(61)
    lock = CacheKeys(fleet_cache_scope()).lock
    cache.add(lock, "another-worker", timeout=60)

    page = vehicle_search()
    assert page.freshness.stale
    assert vehicles_refresh().stale

    another_worker()
    cache.clear()
    cache.add(lock, "another-worker", timeout=60)
    fleet_settings.FLEET_VEHICLES_WAIT = 0.3
    with pytest.raises(FleetDataUnavailable) as waited:
        vehicle_search()

    assert waited.value.outcome == "unavailable"
    assert emulator.calls(LIST_CARS) == 1
    assert cache.get(lock) == "another-worker"  # never released by a worker that does not own it


# --- A Retry-After pauses every worker ----------------------------------------


@pytest.mark.django_db  # a search by a word reads the drivers' names
def test_a_429_with_retry_after_30_stops_all_calls_to_list_cars_for_30_seconds(
    fleet_settings: Any, emulator: Emulator, clock: Any
) -> None:
    first = vehicle_search()
    emulator.fault("/key/list-cars", status=429, retry_after=30)
    clock.shift(61)  # past the TTL: the next request refreshes, and is told to wait

    page = vehicle_search()
    assert emulator.calls(LIST_CARS) == 2
    assert page.rows == first.rows
    assert page.freshness.stale
    assert page.freshness.fetched_at == first.freshness.fetched_at
    assert page.freshness.problem == "rate_limited"
    assert page.freshness.retry_after == pytest.approx(30)

    elapsed = 0.0
    for moment in (1, 10, 20, 29.5):
        clock.shift(moment - elapsed)
        elapsed = moment
        another_worker()  # any worker: no decoded list, its own client
        page = vehicle_search(query="a")
        assert page.total > 0
        assert page.freshness.stale
        assert page.freshness.problem == "rate_limited"
        assert page.freshness.retry_after == pytest.approx(30 - moment)
        assert vehicles_refresh().retry_after == pytest.approx(30 - moment)
        assert vehicle_get(plate=first.rows[0].plate) == first.rows[0]
        assert emulator.calls(LIST_CARS) == 2

    clock.shift(0.5)  # 30 s after the 429
    page = vehicle_search()
    assert emulator.calls(LIST_CARS) == 3
    assert not page.freshness.stale
    assert page.freshness.problem is None
    assert page.freshness.retry_after is None


def test_a_504_with_retry_after_pauses_the_route_too(
    fleet_settings: Any, emulator: Emulator, clock: Any
) -> None:
    vehicle_search()
    emulator.fault("/key/list-cars", status=504, retry_after=20)
    clock.shift(61)
    assert vehicle_search().freshness.problem == "unavailable"
    clock.shift(10)

    freshness = vehicle_search().freshness

    assert freshness.problem == "unavailable"
    assert freshness.retry_after == pytest.approx(10)
    assert emulator.calls(LIST_CARS) == 2


def test_a_cold_cache_during_a_pause_says_when_to_come_back_without_calling(
    fleet_settings: Any, emulator: Emulator, clock: Any
) -> None:
    emulator.fault("/key/list-cars", status=429, retry_after=30)
    with pytest.raises(FleetDataUnavailable) as first:
        vehicle_search()
    clock.shift(12)
    another_worker()

    with pytest.raises(FleetDataUnavailable) as second:
        vehicle_search()

    assert first.value.outcome == second.value.outcome == "rate_limited"
    assert first.value.retry_after == pytest.approx(30)
    assert second.value.retry_after == pytest.approx(18)
    assert emulator.calls(LIST_CARS) == 1


# --- TTL ----------------------------------------------------------------------------


@pytest.mark.django_db  # a search by a word reads the drivers' names
def test_the_list_is_fresh_for_the_ttl_without_calling_the_api(
    fleet_settings: Any, emulator: Emulator, clock: Any
) -> None:
    first = vehicle_search()
    clock.shift(60)
    page = vehicle_search(query="a", sort="-model")
    assert vehicle_get(plate=first.rows[0].plate_display) == first.rows[0]

    assert emulator.calls(LIST_CARS) == 1
    assert not page.freshness.stale
    assert page.freshness.fetched_at == first.freshness.fetched_at
    assert first.freshness.fetched_at.tzinfo is UTC


def test_after_the_ttl_one_request_refreshes_the_list(
    fleet_settings: Any, emulator: Emulator, clock: Any
) -> None:
    vehicle_search()
    clock.shift(61)

    page = vehicle_search()
    vehicle_search()

    assert emulator.calls(LIST_CARS) == 2
    assert not page.freshness.stale
    assert fetched_just_now(page.freshness.fetched_at)


def test_the_ttl_comes_from_the_settings(
    fleet_settings: Any, emulator: Emulator, clock: Any
) -> None:
    fleet_settings.FLEET_VEHICLES_TTL = 5
    vehicle_search()
    clock.shift(4)
    vehicle_search()
    assert emulator.calls(LIST_CARS) == 1
    clock.shift(2)
    vehicle_search()
    assert emulator.calls(LIST_CARS) == 2


def test_the_refresh_button_fetches_a_list_that_is_still_fresh(
    fleet_settings: Any, emulator: Emulator, clock: Any
) -> None:
    vehicle_search()
    clock.shift(5)

    freshness = vehicles_refresh()

    assert emulator.calls(LIST_CARS) == 2
    assert fetched_just_now(freshness.fetched_at)
    assert not freshness.stale
    assert freshness.problem is None


# --- Stale rather than nothing ------------------------------------------------------


def test_a_503_serves_the_stale_list_saying_when_it_was_fetched_and_why(
    fleet_settings: Any, emulator: Emulator, clock: Any
) -> None:
    first = vehicle_search()
    clock.shift(61)
    emulator.fault("/key/list-cars", status=503)

    page = vehicle_search()

    assert page.rows == first.rows
    assert page.freshness.stale
    assert page.freshness.fetched_at == first.freshness.fetched_at
    assert page.freshness.problem == "unavailable"
    assert page.freshness.retry_after is None


def test_after_a_failure_workers_back_off_before_calling_again(
    fleet_settings: Any, emulator: Emulator, clock: Any
) -> None:
    vehicle_search()
    clock.shift(61)
    emulator.fault("/key/list-cars", status=503)
    vehicle_search()
    clock.shift(fleet_settings.FLEET_VEHICLES_FAILURE_BACKOFF - 1)
    another_worker()

    assert vehicle_search().freshness.problem == "unavailable"
    assert emulator.calls(LIST_CARS) == 2

    clock.shift(1)
    page = vehicle_search()
    assert emulator.calls(LIST_CARS) == 3
    assert not page.freshness.stale
    assert page.freshness.problem is None


def test_a_dropped_connection_serves_the_stale_list(
    fleet_settings: Any, emulator: Emulator, clock: Any
) -> None:
    first = vehicle_search()
    clock.shift(61)
    emulator.fault("/key/list-cars", drop=True, count=10)

    page = vehicle_search()

    assert page.rows == first.rows
    assert (page.freshness.stale, page.freshness.problem) == (True, "unavailable")
    assert emulator.calls(LIST_CARS) >= 2


def test_an_unreadable_answer_serves_the_stale_list(
    fleet_settings: Any, emulator: Emulator, clock: Any
) -> None:
    vehicle_search()
    clock.shift(61)
    emulator.fault("/key/list-cars", malformed=True)

    assert vehicle_search().freshness.problem == "error"


@pytest.mark.parametrize(
    ("fault", "outcome", "retry_after"),
    [
        ({"status": 503}, "unavailable", None),
        ({"drop": True, "count": 10}, "unavailable", None),
        ({"status": 429, "retry_after": 30}, "rate_limited", 30),
        ({"status": 504, "retry_after": 30}, "unavailable", 30),
        ({"malformed": True}, "error", None),
        ({"body": {"cars": "?"}}, "error", None),
    ],
    ids=["503", "dropped", "429", "504", "not json", "wrong shape"],
)
def test_a_cold_cache_and_a_failing_api_raise_fleet_data_unavailable_with_the_outcome(
    fleet_settings: Any,
    emulator: Emulator,
    fault: dict[str, Any],
    outcome: str,
    retry_after: float | None,
) -> None:
    emulator.fault("/key/list-cars", **fault)

    with pytest.raises(FleetDataUnavailable) as raised:
        vehicle_search()

    assert raised.value.outcome == outcome
    if retry_after is None:
        assert raised.value.retry_after is None
    else:
        assert raised.value.retry_after == pytest.approx(retry_after, abs=1)


@pytest.mark.parametrize(
    ("token", "secret", "outcome"),
    [
        ("other-env-access-token", "other-env-secret-key", "credentials_rejected"),
        ("no-permission-access-token", "no-permission-secret-key", "permission_denied"),
    ],
)
def test_rejected_credentials_raise_fleet_data_unavailable_with_the_outcome(
    fleet_settings: Any, emulator: Emulator, token: str, secret: str, outcome: str
) -> None:
    fleet_settings.FLEET_ACCESS_TOKEN = token
    fleet_settings.FLEET_SECRET_KEY = secret

    for selector in (vehicle_search, vehicle_export, vehicles_refresh):
        with pytest.raises(FleetDataUnavailable) as raised:
            selector()
        assert raised.value.outcome == outcome
    with pytest.raises(FleetDataUnavailable):
        vehicle_get(plate="ABC1D23")


def test_a_cold_failure_is_not_retried_by_every_request_during_the_backoff(
    fleet_settings: Any, emulator: Emulator, clock: Any
) -> None:
    emulator.fault("/key/list-cars", status=503)
    for _ in range(3):
        with pytest.raises(FleetDataUnavailable):
            vehicle_search()
    assert emulator.calls(LIST_CARS) == 1

    clock.shift(fleet_settings.FLEET_VEHICLES_FAILURE_BACKOFF)
    assert vehicle_search().fleet_total == 200
    assert emulator.calls(LIST_CARS) == 2


def test_the_refresh_button_retries_at_once_after_a_failure(
    fleet_settings: Any, emulator: Emulator
) -> None:
    emulator.fault("/key/list-cars", status=503)
    with pytest.raises(FleetDataUnavailable):
        vehicle_search()

    freshness = vehicles_refresh()

    assert not freshness.stale
    assert emulator.calls(LIST_CARS) == 2


def test_a_successful_refresh_forgets_the_last_failure(
    fleet_settings: Any, emulator: Emulator, clock: Any
) -> None:
    vehicle_search()
    clock.shift(61)
    emulator.fault("/key/list-cars", status=503)
    assert vehicle_search().freshness.problem == "unavailable"
    clock.shift(fleet_settings.FLEET_VEHICLES_FAILURE_BACKOFF)
    assert vehicle_search().freshness.problem is None
    clock.shift(61)
    cache.add(CacheKeys(fleet_cache_scope()).lock, "another-worker", timeout=60)

    freshness = vehicle_search().freshness

    assert freshness.stale
    assert freshness.problem is None  # being refreshed elsewhere, nothing wrong
    assert emulator.calls(LIST_CARS) == 3


# --- One decode per version per process ------------------------------------------------


@pytest.mark.django_db  # a search by a word reads the drivers' names
def test_the_decoded_list_is_reused_while_its_version_is_unchanged(
    fleet_settings: Any, emulator: Emulator
) -> None:
    vehicle_search()
    decoded = decoded_snapshot()
    another_worker()  # a process that has not decoded it yet
    vehicle_search()
    decoded_here = decoded_snapshot()

    for _ in range(3):
        vehicle_search(query="a", active=True, sort="-active")
        vehicle_get(plate="ABC1D23")

    assert decoded is not None
    assert decoded_here is not None
    assert decoded_here is not decoded
    assert decoded_here.version == decoded.version
    assert decoded_snapshot() is decoded_here
    assert emulator.calls(LIST_CARS) == 1


def test_a_version_published_by_another_worker_is_decoded_and_served(
    fleet_settings: Any, emulator: Emulator
) -> None:
    keys = CacheKeys(fleet_cache_scope())

    def stored() -> dict[str, Any]:
        meta = cache.get(keys.meta)
        return {keys.meta: meta, keys.data(meta["version"]): cache.get(keys.data(meta["version"]))}

    vehicle_search()
    first = stored()
    # Another worker refreshes and gets a different fleet...
    another_worker()
    emulator.fault("/key/list-cars", body=envelope(vehicle(1, "NEW0A01", "Fiat Uno")))
    vehicles_refresh()
    published = decoded_snapshot()
    second = stored()
    # ...while this worker still holds the first version, decoded before the refresh.
    vehicles_forget()
    cache.set_many(first)
    vehicle_search()
    old = decoded_snapshot()
    cache.set_many(second)

    page = vehicle_search()

    current = decoded_snapshot()
    assert [r.plate for r in page.rows] == ["NEW0A01"]
    assert old is not None
    assert published is not None
    assert current is not None
    assert old.version != published.version
    assert current is not old
    assert current is not published  # decoded from the cache
    assert current.version == published.version
    assert emulator.calls(LIST_CARS) == 2


@pytest.mark.django_db  # a search by a word reads the drivers' names
def test_pages_kept_for_a_version_are_not_served_for_the_next(
    fleet_settings: Any, emulator: Emulator, clock: Any
) -> None:
    before = vehicle_search(query="a")
    clock.shift(61)
    emulator.fault("/key/list-cars", body=envelope(vehicle(1, "NEW0A01", "Fiat Uno")))

    after = vehicle_search(query="a")

    assert after.version != before.version
    assert [r.plate for r in after.rows] == ["NEW0A01"]
    assert (after.total, after.fleet_total) == (1, 1)


def test_a_worker_keeps_serving_its_copy_when_the_cache_loses_the_list(
    fleet_settings: Any, emulator: Emulator
) -> None:
    first = vehicle_search()
    cache.clear()  # flushed or evicted

    assert vehicle_search() == first
    assert emulator.calls(LIST_CARS) == 1


def test_an_unreadable_cached_list_is_fetched_again(
    fleet_settings: Any, emulator: Emulator
) -> None:
    vehicle_search()
    keys = CacheKeys(fleet_cache_scope())
    version = cache.get(keys.meta)["version"]
    cache.set(keys.data(version), b"not zlib")
    another_worker()

    assert vehicle_search().fleet_total == 200
    assert emulator.calls(LIST_CARS) == 2


def test_the_list_is_stored_as_columns_beside_a_small_meta(fleet_settings: Any) -> None:
    vehicle_search()
    keys = CacheKeys(fleet_cache_scope())
    meta = cache.get(keys.meta)
    data = cache.get(keys.data(meta["version"]))

    assert set(meta) == {"version", "fetched_at", "count"}
    assert meta["count"] == 200
    assert len(pickle.dumps(meta)) < 200  # what every request reads
    assert data[0] == SNAPSHOT_FORMAT
    assert len(pickle.dumps(data)) < 200 * 40  # columns: no object per vehicle


def test_another_api_or_account_does_not_share_the_list(
    fleet_settings: Any, emulator: Emulator
) -> None:
    vehicle_search()
    fleet_settings.FLEET_ACCESS_TOKEN = "no-permission-access-token"
    fleet_settings.FLEET_SECRET_KEY = "no-permission-secret-key"

    with pytest.raises(FleetDataUnavailable):
        vehicle_search()
    assert emulator.calls(LIST_CARS) == 2


# --- Logging ---------------------------------------------------------------------------


def test_each_refresh_is_logged_once_with_its_count_and_outcome_and_no_secret(
    fleet_settings: Any, emulator: Emulator, clock: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="fleet.services.vehicles")
    vehicle_search()
    clock.shift(61)
    emulator.fault("/key/list-cars", status=503)
    vehicle_search()
    vehicle_search()  # backing off: no refresh, nothing logged

    records = [
        r
        for r in caplog.records
        if r.name == "fleet.services.vehicles" and r.levelno >= logging.INFO
    ]
    assert [r.levelname for r in records] == ["INFO", "WARNING"]
    assert "200 vehicles" in records[0].getMessage()
    assert "unavailable" in records[1].getMessage()
    assert "HTTP 503" in records[1].getMessage()
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert fleet_settings.FLEET_SECRET_KEY not in text
    assert fleet_settings.FLEET_ACCESS_TOKEN not in text
