"""One fleet size of the vehicles benchmark: the URLs it probes, the servers and clients
of that size, and the rounds that measure them.

Warm, each URL under the same load in rounds whose order reverses, then requests one at
a time, with the server's own time from the access log; cold, the page right after a
worker's cache and decoded copy were emptied, interleaved with the bare `list-cars` call
it wraps. Everything lands in a `SizeResult`; failures are counted, never raised, so one
bad answer does not end the run. `bench.vehicles_scoped` and `bench.vehicles_metrics`
load the portal the same way with these pieces.
"""

from __future__ import annotations

import importlib
import re
import statistics
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import redis
import requests

from bench.access_log import AccessLog, Hit
from bench.load_generators import LoadGenerator
from bench.servers import Server, portal_restart_workers
from bench.wrk import Load

WORKERS, THREADS = 2, 4
CONNECTIONS = 8
TTL = 3600  # seconds: no warm phase may see the list expire
SEARCH_MODEL = "onix"  # Chevrolet Onix: about 7 % of the emulator's fleet

_RESULT_COUNT = re.compile(r'data-testid="result-count">(.*?)</p>', re.DOTALL)


def _orjson_loads() -> Callable[[bytes], object] | None:
    """orjson's parser, if installed: a faster client than `json` is possible."""
    try:
        module = importlib.import_module("orjson")
    except ImportError:
        return None
    loads: Callable[[bytes], object] = module.loads
    return loads


ORJSON_LOADS = _orjson_loads()


@dataclass(frozen=True, slots=True)
class Probe:
    label: str
    path: str


BARE = Probe("bare view (bench/bare)", "/bench/bare")
PAGE = Probe("/vehicles/", "/vehicles/")
MODEL_SEARCH = Probe(f"/vehicles/?q={SEARCH_MODEL}", f"/vehicles/?q={SEARCH_MODEL}")


def plate_fragment(plate: str) -> str:
    """The start of `plate` as people type it: `abc-1` for ABC1234.

    Taken from a vehicle of the fleet, so the search finds at least one: a
    fragment found nowhere skips the scan of the plates (one substring test).
    """
    return f"{plate[:3].lower()}-{plate[3:4]}"


@dataclass(slots=True)
class Target:
    """The servers of one fleet size and the clients that talk to them."""

    portal: Server
    emulator: Server
    log: AccessLog
    browser: requests.Session
    upstream: requests.Session
    cookie: str
    generate: LoadGenerator
    failures: Counter[str]


@dataclass(slots=True)
class SizeResult:
    size: int
    plate_search: Probe
    matches: dict[str, int] = field(default_factory=dict)  # searches: vehicles matching
    loads: dict[str, list[Load]] = field(default_factory=dict)
    loaded: dict[str, list[float]] = field(default_factory=dict)  # server ms under load
    alone: dict[str, list[float]] = field(default_factory=dict)  # server ms, one at a time
    cold_page: list[float] = field(default_factory=list)  # ms, client side
    cold_server: list[float] = field(default_factory=list)  # ms, access log
    cold_bare: list[float] = field(default_factory=list)  # ms, client side: the bare view after it
    upstream_parsed: list[float] = field(default_factory=list)
    upstream_bytes: list[float] = field(default_factory=list)
    upstream_orjson: list[float] = field(default_factory=list)  # bytes, then orjson.loads
    upstream_one_read: list[float] = field(default_factory=list)  # bytes in one read
    answer_bytes: int = 0  # of list-cars
    stored_bytes: int | None = None  # of the snapshot in Redis
    warmup_calls: int = 0  # list-cars calls while the fresh workers warmed up
    warm_calls: int = 0  # list-cars calls during the warm measurements: must be 0

    @property
    def searches(self) -> tuple[Probe, Probe]:
        return MODEL_SEARCH, self.plate_search

    @property
    def probes(self) -> tuple[Probe, ...]:
        return BARE, PAGE, *self.searches

    def requests_per_second(self, probe: Probe) -> float:
        loads = self.loads.get(probe.path, [])
        seconds = sum(load.seconds for load in loads)
        return sum(load.requests for load in loads) / seconds if seconds else 0.0

    def ratio(self, probe: Probe) -> float:
        bare = self.requests_per_second(BARE)
        return self.requests_per_second(probe) / bare if bare else 0.0

    def cold_ratio(self) -> float:
        return statistics.median(self.cold_page) / statistics.median(self.upstream_parsed)

    def cold_floor(self) -> float:
        """The least a cold page can take, in ms, from this run's own medians.

        It must fetch the answer's bytes (the quicker of the two ways timed), do
        what the warm page does (session, user, the first page: its server time
        alone, a lower bound, as a cold page also renders) and cross the HTTP
        hop to the portal (the cold page's client time less its server time).
        Reading the answer is left out.
        """
        fetch = min(
            statistics.median(times)
            for times in (self.upstream_bytes, self.upstream_one_read)
            if times
        )
        return fetch + statistics.median(self.alone[PAGE.path]) + self.cold_hop()

    def cold_hop(self) -> float:
        """What the cold page took beyond its server time: the HTTP hop, in ms."""
        return max(statistics.median(self.cold_page) - statistics.median(self.cold_server), 0.0)


def measure_size(
    target: Target,
    size: int,
    *,
    rounds: int,
    seconds: int,
    connections: int,
    sequential: int,
    cold_rounds: int,
    shared: redis.Redis | None,
) -> SizeResult:
    response = target.upstream.get(f"{target.emulator.url}/key/list-cars", timeout=30)
    response.raise_for_status()
    query = plate_fragment(response.json()["cars"]["data"][0]["car_plate"])
    result = SizeResult(size, Probe(f"/vehicles/?q={query}", f"/vehicles/?q={query}"))
    # Fresh workers and an empty cache: nothing of the previous size survives.
    if shared is not None:
        shared.flushdb()
    portal_restart_workers(target.portal, workers=WORKERS)

    calls = list_cars_calls(target)
    for probe in result.probes:
        check_page(target, probe, result)
    # Every worker decodes the list and compiles the template before anything is timed.
    for probe in result.probes:
        target.generate(f"{target.portal.url}{probe.path}", target.cookie, connections, 1)
    result.warmup_calls = list_cars_calls(target) - calls

    calls = list_cars_calls(target)
    for round_number in range(rounds):
        # Reversed every other round: no URL always follows another.
        for probe in result.probes if round_number % 2 == 0 else result.probes[::-1]:
            measure_load(target, probe, result, connections=connections, seconds=seconds)
    start = target.log.end()
    for _ in range(sequential):
        for probe in result.probes:
            response = target.browser.get(f"{target.portal.url}{probe.path}", timeout=30)
            if response.status_code != 200:
                target.failures[f"{probe.label}: HTTP {response.status_code}"] += 1
    for probe in result.probes:
        result.alone[probe.path] = [h.micros / 1000 for h in served(target, start, probe)]
    result.warm_calls = list_cars_calls(target) - calls
    if result.warm_calls:
        target.failures[f"{size:,} vehicles: {result.warm_calls} list-cars calls while warm"] += 1

    for round_number in range(cold_rounds):
        # Alternate which of the two goes first.
        if round_number % 2 == 0:
            time_upstream(target, result)
            time_cold_page(target, result)
        else:
            time_cold_page(target, result)
            time_upstream(target, result)
    if shared is not None:
        stored = [key for key in shared.scan_iter(match="*fleet:vehicles:*:data:*")]
        result.stored_bytes = sum(int(shared.strlen(key)) for key in stored) or None
    return result


def measure_load(
    target: Target, probe: Probe, result: SizeResult, *, connections: int, seconds: int
) -> None:
    """`probe` under load for `seconds`: what the client saw, and the server's own times."""
    start = target.log.end()
    load = target.generate(f"{target.portal.url}{probe.path}", target.cookie, connections, seconds)
    hits = served(target, start, probe)
    result.loads.setdefault(probe.path, []).append(load)
    result.loaded.setdefault(probe.path, []).extend(h.micros / 1000 for h in hits)
    if load.errors:
        target.failures[f"{probe.label}: {load.errors} failed under load"] += 1


def served(target: Target, start: int, probe: Probe) -> list[Hit]:
    """The requests for `probe` since `start` in the access log; any but 200 is a failure."""
    hits = [hit for hit in target.log.since(start) if hit.target == probe.path]
    for status, count in Counter(h.status for h in hits if h.status != 200).items():
        target.failures[f"{probe.label}: {count} x HTTP {status} in the access log"] += 1
    return hits


def check_page(target: Target, probe: Probe, result: SizeResult) -> None:
    """One request that shows the whole fleet (or, searching, the vehicles found)."""
    response = target.browser.get(
        f"{target.portal.url}{probe.path}", allow_redirects=False, timeout=60
    )
    if response.status_code != 200:
        target.failures[f"{probe.label}: HTTP {response.status_code}"] += 1
        return
    if probe is BARE:
        return
    counted = _RESULT_COUNT.search(response.text)
    numbers = [int(n) for n in re.findall(r"\d+", counted[1])] if counted else []
    stale = 'data-testid="stale-notice"' in response.text
    if len(numbers) < 2 or numbers[1] != result.size or stale:
        target.failures[f"{probe.label}: not the fresh fleet of {result.size:,}"] += 1
        return
    if probe in result.searches:
        result.matches[probe.path] = numbers[0]


def time_upstream(target: Target, result: SizeResult) -> None:
    """The bare call the cold page wraps: `GET /key/list-cars`, then `response.json()`."""
    started = time.perf_counter()
    response = target.upstream.get(f"{target.emulator.url}/key/list-cars", timeout=30)
    received = time.perf_counter()
    body = response.json()
    parsed = time.perf_counter()
    if response.status_code != 200 or body["cars"]["total"] != result.size:
        target.failures[f"list-cars: HTTP {response.status_code}"] += 1
        return
    result.upstream_bytes.append((received - started) * 1000)
    result.upstream_parsed.append((parsed - started) * 1000)
    result.answer_bytes = len(response.content)
    del body  # a garbage collection while parsing again would walk it
    if ORJSON_LOADS is not None:  # the same bytes again, for comparison only
        before = time.perf_counter()
        ORJSON_LOADS(response.content)
        result.upstream_orjson.append((received - started + time.perf_counter() - before) * 1000)
    # The bytes as the portal's client reads them: to the end in one read, not in
    # `response.content`'s chunks of 10 kB (fleet/api/transport.py, `read_body`).
    started = time.perf_counter()
    with target.upstream.get(
        f"{target.emulator.url}/key/list-cars", stream=True, timeout=30
    ) as streamed:
        whole = streamed.raw.read(decode_content=True)
    if len(whole) == result.answer_bytes:
        result.upstream_one_read.append((time.perf_counter() - started) * 1000)


def time_cold_page(target: Target, result: SizeResult) -> None:
    """`/vehicles/` in a worker whose cache and decoded copy were just emptied.

    `bench/forget` and `bench/bare` answer the worker's process id: the page
    between them went over the same keep-alive connection, so to that worker.
    """
    base = target.portal.url
    calls = list_cars_calls(target)
    start = target.log.end()
    forget = target.browser.get(f"{base}/bench/forget", timeout=10)
    started = time.perf_counter()
    response = target.browser.get(f"{base}/vehicles/", allow_redirects=False, timeout=60)
    elapsed = time.perf_counter() - started
    before_bare = time.perf_counter()
    after = target.browser.get(f"{base}/bench/bare", timeout=10)
    bare_elapsed = time.perf_counter() - before_bare
    fetched = list_cars_calls(target) - calls
    if response.status_code != 200 or 'data-testid="vehicle-table"' not in response.text:
        target.failures[f"cold /vehicles/: HTTP {response.status_code} or no table"] += 1
    elif forget.status_code != 200 or forget.text != after.text:
        target.failures["cold /vehicles/: went to another worker than the one emptied"] += 1
    elif fetched != 1:
        target.failures[f"cold /vehicles/: {fetched} list-cars calls instead of 1"] += 1
    else:
        result.cold_page.append(elapsed * 1000)
        result.cold_bare.append(bare_elapsed * 1000)
        result.cold_server.extend(h.micros / 1000 for h in served(target, start, PAGE))


def list_cars_calls(target: Target) -> int:
    response = target.upstream.get(f"{target.emulator.url}/_emulator/stats", timeout=10)
    response.raise_for_status()
    return int(response.json()["calls"].get("GET /key/list-cars", 0))
