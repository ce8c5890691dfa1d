"""The vehicle list shared by every worker: one snapshot in Django's cache, fetched by one.

`GET /key/list-cars` answers with the whole fleet at once (spec 4.1), tens of
thousands of vehicles and no paging or filters. So the portal keeps a snapshot
(`fleet.services.vehicle_index.Snapshot`):

- in Django's cache (Redis in production), as plain columns (lists of str and
  int, which the cache pickles quickly) under a key per version, beside a
  small metadata key that names the current version and when it was fetched;
- in each process, decoded once per version (`vehicles_forget` drops it):
  a request reads only the metadata key, then filters, counts and slices in
  memory, creating objects only for the rows it shows;
- refreshed after `FLEET_VEHICLES_TTL` by exactly one request of the whole
  deployment, the holder of a lock taken with `cache.add` and read back (while
  Redis is unreachable no lock is kept, and no worker refreshes a list it has).
  That request serves the stale copy too and fetches the new one once its
  response is out (`portal.lib.after_response`): at a million vehicles the call
  takes seconds, which nobody waits for. It holds the lock until the new
  version is stored; meanwhile the others serve the stale copy. With nothing
  to serve at all, the first request fetches while the others wait briefly
  for it, and it stores the list after its response;
- served stale, saying since when and why, while the API fails or the route
  cools down after a Retry-After (`fleet.services.cooldown`, the same pause
  the client honours);
- taken into the history of who had each vehicle (`fleet.services.driver_history`)
  by the worker that refreshed it, once stored and still holding the lock: one
  observation at a time, in the order fetched.

Cache keys, under `fleet:vehicles:<SNAPSHOT_FORMAT>:<scope>` (`fleet_cache_scope()`):

| key | holds | read |
|---|---|---|
| `meta` | `{"version", "fetched_at", "count"}` | by every request |
| `data:<version>` | the snapshot | once per version by each process |
| `lock` | the refreshing worker's random token | when stale |
| `failure` | the last failed refresh: outcome, Retry-After, when | when stale |

One module: the keys, the lock and the choice between fresh, stale and none are one
protocol between workers; each part is right only as the others use it.
"""

from __future__ import annotations

import logging
import math
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, NamedTuple

from django.conf import settings
from django.core.cache import cache

from fleet.api import errors
from fleet.api.client import LIST_VEHICLES, FleetClient
from fleet.api.errors import Outcome
from fleet.services.connection import fleet_cache_scope, fleet_client
from fleet.services.driver_history import history_observe
from fleet.services.vehicle_index import SNAPSHOT_FORMAT, Snapshot
from portal.lib import after_response, metrics, worker

# The vehicle list's one logger, whichever of its modules logs.
logger = logging.getLogger("fleet.services.vehicles")

_POLL: Final = 0.05  # seconds between looks at another worker's refresh
_LOCK_MARGIN: Final = 10  # seconds the lock outlives the longest possible API call


class FleetDataUnavailable(Exception):
    """There is no vehicle list to show at all: `outcome` says why.

    `retry_after`: seconds before the API may be called again, when it asked to wait.
    """

    def __init__(self, outcome: Outcome, *, retry_after: float | None = None) -> None:
        when = "" if retry_after is None else f", retry after {math.ceil(retry_after)} s"
        super().__init__(f"no vehicle list to show: {outcome}{when}")
        self.outcome: Outcome = outcome
        self.retry_after = retry_after


@dataclass(frozen=True, slots=True)
class Freshness:
    """How old the list shown is, and why it was not refreshed.

    `stale`: older than `FLEET_VEHICLES_TTL`. `problem`: why the list was not
    replaced by a newer one; None when nothing went wrong, which a stale list
    also is while its successor is being fetched (by another worker, or by this
    one once its response is out). `retry_after`:
    seconds before the API may be called again, while the route cools down.
    """

    fetched_at: datetime  # aware, UTC
    stale: bool
    problem: Outcome | None = None
    retry_after: float | None = None


class _Memo:
    """This process's decoded snapshot, shared by its threads, decoded once per version."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.snapshot: Snapshot | None = None

    def clear(self) -> None:
        with self.lock:
            self.snapshot = None


_memo = _Memo()


def vehicle_list_fetched_at() -> float | None:
    """When the vehicle list every worker serves was fetched (wall clock), if there is one:
    one read of its small key, nothing decoded."""
    meta = _shared_meta()
    return None if meta is None else meta.fetched_at


def vehicle_list_version() -> str | None:
    """The version of the vehicle list every worker serves, if there is one: one read of
    its small key, nothing decoded."""
    meta = _shared_meta()
    return None if meta is None else meta.version


def _shared_meta() -> _Meta | None:
    return _Meta.parse(cache.get(CacheKeys(fleet_cache_scope()).meta))


def cached_snapshot() -> Snapshot | None:
    """The snapshot this process or the cache already holds, without calling the API."""
    return _load(CacheKeys(fleet_cache_scope()))


def decoded_snapshot() -> Snapshot | None:
    """The snapshot this process has decoded (or fetched) last, if any."""
    return _memo.snapshot


def vehicles_forget() -> None:
    """This process forgets the snapshot it decoded, as a new worker starts; the shared
    cache keeps it."""
    _memo.clear()


# --- The shared cache -----------------------------------------------------------


class CacheKeys:
    """The cache keys of the vehicle list of one scope (the table above)."""

    def __init__(self, scope: str) -> None:
        self.scope = scope
        prefix = f"fleet:vehicles:{SNAPSHOT_FORMAT}:{scope}"
        self.meta = f"{prefix}:meta"
        self.lock = f"{prefix}:lock"
        self.failure = f"{prefix}:failure"
        self._data = f"{prefix}:data"

    def data(self, version: str) -> str:
        return f"{self._data}:{version}"


class _Meta(NamedTuple):
    version: str
    fetched_at: float

    @classmethod
    def parse(cls, value: Any) -> _Meta | None:
        if isinstance(value, dict):
            version, fetched_at = value.get("version"), value.get("fetched_at")
            if isinstance(version, str) and isinstance(fetched_at, int | float):
                return cls(version, float(fetched_at))
        return None


class _Failure(NamedTuple):
    """The last refresh that failed: why, the Retry-After it carried, when (wall clock)."""

    outcome: Outcome
    retry_after: float | None
    at: float

    @classmethod
    def parse(cls, value: Any) -> _Failure | None:
        if isinstance(value, tuple | list) and len(value) == 3:
            outcome, retry_after, at = value
            if (
                outcome in Outcome
                and (retry_after is None or isinstance(retry_after, int | float))
                and isinstance(at, int | float)
            ):
                return cls(Outcome(outcome), retry_after, at)
        return None

    def backing_off(self, now: float) -> bool:
        """Whether workers should not call again yet (a Retry-After is the cooldown's)."""
        return self.retry_after is None and now - self.at < settings.FLEET_VEHICLES_FAILURE_BACKOFF


def _keep_seconds() -> int:
    return math.ceil(settings.FLEET_VEHICLES_KEEP)


def _load(keys: CacheKeys) -> Snapshot | None:
    """The current snapshot: the memo while the version is unchanged, else decoded."""
    for _attempt in range(3):
        meta = _Meta.parse(cache.get(keys.meta))
        if meta is None:
            break
        memo = _memo.snapshot
        if memo is not None and memo.version == meta.version:
            return memo
        with _memo.lock:
            memo = _memo.snapshot
            if memo is not None and memo.version == meta.version:
                return memo
            started = time.perf_counter()
            snapshot = Snapshot.decode(
                cache.get(keys.data(meta.version)),
                scope=keys.scope,
                version=meta.version,
                fetched_at=meta.fetched_at,
            )
            if snapshot is not None:
                _memo.snapshot = snapshot
                logger.debug(
                    "decoded vehicle list %s (%d vehicles) in %.0f ms",
                    snapshot.version,
                    snapshot.count,
                    (time.perf_counter() - started) * 1000,
                )
                return snapshot
        # The version was replaced between the two reads, or evicted: look again.
    # The cache lost the list (flushed, evicted): this process's copy is still good.
    memo = _memo.snapshot
    if (
        memo is not None
        and memo.scope == keys.scope
        and time.time() - memo.fetched_at <= settings.FLEET_VEHICLES_KEEP
    ):
        return memo
    return None


def _store(keys: CacheKeys, snapshot: Snapshot, *, replaces: str | None) -> None:
    """Store a new version for every worker, in place of version `replaces`.

    The data and the meta naming it are written together (`set_many`: one MSET
    on Redis, the data first elsewhere), then the failure and the replaced
    data are deleted together: two round trips. A worker that read the old meta
    reads it again when the data is gone.
    """
    cache.set_many(
        {
            keys.data(snapshot.version): snapshot.encode(),
            keys.meta: {
                "version": snapshot.version,
                "fetched_at": snapshot.fetched_at,
                "count": snapshot.count,
            },
        },
        timeout=_keep_seconds(),
    )
    cache.delete_many([keys.failure, *([keys.data(replaces)] if replaces else [])])


@dataclass(slots=True)
class _Lock:
    """The refresh lock as `_refresh_lock` yields it: whether this worker holds it,
    and, once `hand_over` is called, who releases it (not the `with` block).

    `unkept`: the cache cannot be reached, so nobody can hold the lock (`portal.cache`
    then answers `add` as an empty cache would, and keeps nothing)."""

    owned: bool
    unkept: bool
    release: Callable[[], None]
    handed_over: bool = False

    def hand_over(self) -> Callable[[], None]:
        self.handed_over = True
        return self.release


@contextmanager
def _refresh_lock(keys: CacheKeys, client: FleetClient) -> Iterator[_Lock]:
    """Try to become the one worker fetching the list; yields whether this one is.

    The lock expires after the longest the client can spend on one call, in
    case its holder dies; it is released only by its owner, and only while it
    is surely still that owner's: when the block ends, or, if the block handed
    it over (`_fetch`, to store the list after the response), by whoever took it.
    """
    seconds = (client.connect_timeout + client.read_timeout) * client.max_attempts
    timeout = math.ceil(seconds + client.retry_budget) + _LOCK_MARGIN
    token = secrets.token_hex(16)
    taken = time.monotonic()

    def release() -> None:
        if time.monotonic() - taken < timeout - 1 and cache.get(keys.lock) == token:
            cache.delete(keys.lock)

    # Read back: a lock the cache does not keep would let every worker fetch at once.
    added = cache.add(keys.lock, token, timeout=timeout)
    owned = added and cache.get(keys.lock) == token
    lock = _Lock(owned=owned, unkept=added and not owned, release=release)
    if lock.unkept:
        metrics.VEHICLE_CACHE.labels("lock_unkept").inc()
    try:
        yield lock
    finally:
        if lock.owned and not lock.handed_over:
            lock.release()


def _fetch(
    keys: CacheKeys, client: FleetClient, *, replaces: str | None, lock: _Lock, store_now: bool
) -> Snapshot:
    """Call the API; its answer is this worker's copy now and every worker's once
    stored, in place of version `replaces` (the one this worker, holding the
    refresh `lock`, found current). On failure, record it for every worker.

    Storing waits until this request's response is out (`after_response.later`):
    the person who asked does not wait for it, and the lock is held until it is
    done, so other workers wait for the stored copy rather than fetch one. With
    `store_now` it stores before returning: a forced refresh (the button), whose
    answer is a redirect to a page another worker may serve, and a refresh that
    already runs after its response (`_fetch_later`).
    """
    started = time.perf_counter()
    try:
        fleet = client.list_vehicle_columns()
    except errors.FleetError as error:
        # A plain str in the cache: any version of the portal can read it.
        failure = (error.outcome.value, error.retry_after, time.time())
        cache.set(keys.failure, failure, timeout=_keep_seconds())
        metrics.VEHICLE_CACHE.labels("refresh_failed").inc()
        logger.warning(
            "vehicle list refresh failed after %.0f ms (%s): %s",
            (time.perf_counter() - started) * 1000,
            error.outcome,
            error,
        )
        raise
    fetched = time.perf_counter()
    metrics.VEHICLE_CACHE.labels("refresh").inc()
    snapshot = Snapshot.from_columns(
        fleet,
        scope=keys.scope,
        version=f"{time.time_ns():x}-{secrets.token_hex(4)}",
        fetched_at=time.time(),
    )
    built = time.perf_counter()
    with _memo.lock:
        previous, _memo.snapshot = _memo.snapshot, snapshot
    if previous is not None and previous.version != replaces:
        previous = None
    release = lock.hand_over()

    def store() -> None:
        storing = time.perf_counter()
        try:
            _store(keys, snapshot, replaces=replaces)
            # Still holding the lock: one observation at a time, in the order fetched.
            _history_observe(snapshot, previous)
        finally:
            release()
        logger.info(
            "vehicle list refreshed: %d vehicles (API %.0f ms, building %.0f ms, storing %.0f ms)",
            snapshot.count,
            (fetched - started) * 1000,
            (built - fetched) * 1000,
            (time.perf_counter() - storing) * 1000,
        )

    if store_now:
        store()
    else:
        after_response.later(store)
    return snapshot


def _history_observe(snapshot: Snapshot, previous: Snapshot | None) -> None:
    """Take the list just stored into the history of who had each vehicle; a failure is
    logged, and the list stays stored (the next refresh compares with the database)."""
    if not settings.FLEET_DRIVER_HISTORY:
        return
    # In a web process, a large observation is the worker's (`vehicle_list_take_in`); in
    # the worker, a few seconds of it a run, the rest in runs of its own.
    limits = (
        {"written_at_most": settings.FLEET_DRIVER_HISTORY_TASK_CHANGES}
        if worker.in_task()
        else {"at_most": settings.FLEET_DRIVER_HISTORY_PAGE_CHANGES}
    )
    try:
        history_observe(snapshot, previous=previous, **limits)
    except Exception:
        logger.exception("vehicle list %s not taken into the history", snapshot.version)


def vehicle_list_take_in() -> None:
    """In the worker: take the vehicle list every worker serves into the history (one a
    page's refresh found too large to write itself). A process without it fetches it,
    and its own refresh takes it in."""
    if not settings.FLEET_DRIVER_HISTORY:
        return
    snapshot = cached_snapshot()
    if snapshot is None:
        try:
            current_snapshot()  # fetched, and taken in as every refresh is
        except FleetDataUnavailable:
            logger.warning("no vehicle list to take into the history: the next refresh will")
        return
    history_observe(snapshot, written_at_most=settings.FLEET_DRIVER_HISTORY_TASK_CHANGES)


# --- Fresh, stale or none --------------------------------------------------------


def _freshness(
    snapshot: Snapshot, *, problem: Outcome | None = None, retry_after: float | None = None
) -> Freshness:
    return Freshness(
        fetched_at=snapshot.fetched_at_utc,
        stale=time.time() - snapshot.fetched_at > settings.FLEET_VEHICLES_TTL,
        problem=problem,
        retry_after=retry_after,
    )


def current_snapshot(*, force: bool = False) -> tuple[Snapshot, Freshness]:
    """The snapshot to serve and its freshness; `FleetDataUnavailable` when there is none.

    The usual path is one read of the small meta key. `force` refreshes a list
    that is still fresh, as long as no pause or other refresh is in the way.
    """
    keys = CacheKeys(fleet_cache_scope())
    snapshot = _load(keys)
    if snapshot is None:
        metrics.VEHICLE_CACHE.labels("miss").inc()
        return _first(keys, force=force)
    if not force and time.time() - snapshot.fetched_at <= settings.FLEET_VEHICLES_TTL:
        metrics.VEHICLE_CACHE.labels("hit").inc()
        return snapshot, _freshness(snapshot)
    metrics.VEHICLE_CACHE.labels("stale").inc()
    return _refreshed(keys, snapshot, force=force)


def _refreshed(keys: CacheKeys, snapshot: Snapshot, *, force: bool) -> tuple[Snapshot, Freshness]:
    """A newer snapshot if this worker may fetch one now, else `snapshot` and why not."""
    client = fleet_client()
    failure = _Failure.parse(cache.get(keys.failure))
    if (pause := client.cooldown.remaining(LIST_VEHICLES)) > 0:
        outcome = failure.outcome if failure and failure.retry_after is not None else None
        return snapshot, _freshness(
            snapshot, problem=outcome or Outcome.RATE_LIMITED, retry_after=pause
        )
    if failure and not force and failure.backing_off(time.time()):
        return snapshot, _freshness(snapshot, problem=failure.outcome)
    with _refresh_lock(keys, client) as lock:
        # Another worker is fetching, or no worker can hold the lock: serve this one meanwhile.
        if not lock.owned:
            return snapshot, _freshness(snapshot, problem=failure.outcome if failure else None)
        # Another worker may have finished between the looks above and taking the lock.
        latest = _load(keys)
        if latest is not None and latest.version != snapshot.version:
            return latest, _freshness(latest)  # published while this one looked
        if (failed := _failed_since(keys, failure)) is not None:
            return snapshot, _freshness(snapshot, problem=failed.outcome)
        if not force and after_response.in_request():
            _fetch_later(keys, client, replaces=snapshot.version, lock=lock)
            return snapshot, _freshness(snapshot)  # stale, no problem: on its way
        try:
            latest = _fetch(keys, client, replaces=snapshot.version, lock=lock, store_now=force)
        except errors.FleetError as error:
            return snapshot, _freshness(
                snapshot, problem=error.outcome, retry_after=error.retry_after
            )
    return latest, _freshness(latest)


def _fetch_later(keys: CacheKeys, client: FleetClient, *, replaces: str, lock: _Lock) -> None:
    """Fetch and store the successor of version `replaces` once this request's response is
    out, holding the refresh `lock` until it is stored or the call failed (`_fetch`
    records the failure for every worker and logs it)."""
    release = lock.hand_over()

    def refresh() -> None:
        held = _Lock(owned=True, unkept=False, release=release)
        try:
            _fetch(keys, client, replaces=replaces, lock=held, store_now=True)
        except errors.FleetError:
            pass  # recorded and logged: the next request says so
        finally:
            if not held.handed_over:  # the call failed before there was a list to store
                release()

    after_response.later(refresh)


def _first(keys: CacheKeys, *, force: bool) -> tuple[Snapshot, Freshness]:
    """The first snapshot, with none to serve meanwhile: fetch it, or wait for the
    worker fetching it (up to `FLEET_VEHICLES_WAIT`)."""
    client = fleet_client()
    give_up = time.monotonic() + settings.FLEET_VEHICLES_WAIT
    failure = _Failure.parse(cache.get(keys.failure))
    if failure and not force and failure.backing_off(time.time()):
        raise FleetDataUnavailable(failure.outcome)

    def unavailable(outcome: Outcome) -> FleetDataUnavailable:
        pause = client.cooldown.remaining(LIST_VEHICLES)
        return FleetDataUnavailable(outcome, retry_after=pause or None)

    while True:
        # Longer than the client may wait for: refuse now rather than hold the lock.
        if (pause := client.cooldown.remaining(LIST_VEHICLES)) > client.retry_budget:
            outcome = failure.outcome if failure and failure.retry_after is not None else None
            raise FleetDataUnavailable(outcome or Outcome.RATE_LIMITED, retry_after=pause)
        with _refresh_lock(keys, client) as lock:
            # Without a cache to hold the lock, a worker with nothing to serve fetches its own.
            if lock.owned or lock.unkept:
                # The worker that held the lock may have published, or failed, just before.
                if (snapshot := _load(keys)) is None:
                    if (failed := _failed_since(keys, failure)) is not None:
                        raise unavailable(failed.outcome)
                    try:
                        snapshot = _fetch(keys, client, replaces=None, lock=lock, store_now=force)
                    except errors.FleetError as error:
                        raise unavailable(error.outcome) from error
                return snapshot, _freshness(snapshot)
        time.sleep(_POLL)
        if (snapshot := _load(keys)) is not None:
            return snapshot, _freshness(snapshot)
        if (failed := _failed_since(keys, failure)) is not None:  # the fetch waited for failed
            raise unavailable(failed.outcome)
        if time.monotonic() >= give_up:
            raise FleetDataUnavailable(Outcome.UNAVAILABLE)


def _failed_since(keys: CacheKeys, seen: _Failure | None) -> _Failure | None:
    """The failed refresh recorded since this worker read `seen` (the record it found then,
    if any), if one was: the refresh it waited for, or one that ended just before it took the
    lock. Records are compared, not clocks, which several hosts may not agree on."""
    failure = _Failure.parse(cache.get(keys.failure))
    return failure if failure is not None and failure != seen else None
