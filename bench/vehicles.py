"""The vehicles page for fleets of 1,000 to 50,000 vehicles, warm and cold.

`python -m bench.vehicles [--sizes 1000,10000,50000] [--duration S] [--cold-rounds N]`
starts one portal (gunicorn, Redis as the shared cache, SQLite) and, for
each fleet size in turn, an emulator of that size on the same port. For each
size, against that same portal:

- warm: requests/s of the bare view `bench/bare` (same middleware, same
  `login_required`), `/vehicles/`, a model search and a plate search, under
  the same load (`wrk`, else a Python client), in rounds whose order reverses;
  their ratio to the bare view; client p50/p99; the server's own time
  (gunicorn's `%(D)s`) under that load and for requests sent one at a time;
- cold: `GET /vehicles/` right after the cache and the worker's decoded copy
  were emptied (it fetches, stores and renders the fleet), interleaved with
  the bare `GET /key/list-cars` it wraps, parsed with `json`.

Then, in processes of their own with the portal's settings, what a fleet of
50,000 vehicles costs one worker: under tracemalloc with the local-memory
cache, and as RSS for a worker that fetches it and one that decodes it from
Redis. It prints a table per size and the targets set for the vehicle list with where
they land, and exits 1 if any request failed.

Two runs of their own start from here: `--scoped` (users who see their vehicle groups,
bench/vehicles_scoped.py) and `--metrics` (the time the portal's metrics add to the warm
page, a portal with them beside one without, bench/vehicles_metrics.py).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import http.client
import importlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import redis
import requests

from bench.portal_setup import PortalUser, portal_environment, portal_log_in, portal_prepare
from bench.servers import (
    LOOPBACK,
    ROOT,
    Server,
    ServerFailed,
    bench_main,
    ensure_running,
    free_port,
    portal_restart_workers,
    running_emulator,
    running_portal,
    sigterm_as_interrupt,
    upstream_session,
)
from bench.stats import percentile
from bench.wrk import Load, parse_wrk

SIZES = (1_000, 10_000, 50_000)
MEMORY_SIZE = 50_000
WORKERS, THREADS = 2, 4
CONNECTIONS = 8
REDIS_URL = "redis://127.0.0.1:6379/7"
TTL = 3600  # seconds: no warm phase may see the list expire
SEARCH_MODEL = "onix"  # Chevrolet Onix: about 7 % of the emulator's fleet

WARM_TARGET = 0.5  # of the bare view's requests/s
SEARCH_TARGET_MS = 10.0  # server time at p50, over 50,000 vehicles
COLD_TARGET = 1.3  # times the bare list-cars round trip
MEMORY_TARGET_MB = 50.0

ACCESS_LOG_FORMAT = '%(p)s %(s)s %(D)s "%(r)s"'
_ACCESS_LINE = re.compile(r'<(\d+)> (\d{3}) (\d+) "GET (\S+) [^"]*"')
_RESULT_COUNT = re.compile(r'data-testid="result-count">(.*?)</p>', re.DOTALL)
_SETTLE = 0.3  # seconds for the last requests of a phase to reach the access log


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


type LoadGenerator = Callable[[str, str, int, int], Load]


@dataclass(frozen=True, slots=True)
class Hit:
    """One line of gunicorn's access log."""

    pid: int
    status: int
    micros: int
    target: str


class AccessLog:
    """gunicorn's access log, read by phase: the lines written since an offset."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def end(self) -> int:
        time.sleep(_SETTLE)
        return self.path.stat().st_size if self.path.exists() else 0

    def since(self, offset: int) -> list[Hit]:
        time.sleep(_SETTLE)
        with self.path.open("rb") as log:
            log.seek(offset)
            text = log.read().decode(errors="replace")
        return [
            Hit(int(m[1]), int(m[2]), int(m[3]), m[4])
            for m in map(_ACCESS_LINE.fullmatch, text.splitlines())
            if m
        ]


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


# --- Load generators ------------------------------------------------------------


def wrk_load(wrk: str) -> LoadGenerator:
    """`wrk` (C, one thread): its overhead is small beside Django's, so ratios hold."""

    def run(url: str, cookie: str, connections: int, seconds: int) -> Load:
        command = [
            wrk,
            "--threads",
            "1",
            "--connections",
            str(connections),
            "--duration",
            f"{seconds}s",
            "--timeout",
            "10s",
            "--latency",
            "--header",
            f"Cookie: {cookie}",
            url,
        ]
        completed = subprocess.run(
            command, capture_output=True, text=True, check=False, timeout=seconds + 30
        )
        return parse_wrk(completed.stdout, completed.stderr, completed.returncode)

    return run


def python_load(url: str, cookie: str, connections: int, seconds: int) -> Load:
    """Keep-alive connections in threads: the fallback when `wrk` is missing.

    The client shares the machine's cores and the GIL with its own threads, so
    it saturates before a fast view does: ratios to the bare view come out
    closer to 1 than with `wrk`.
    """
    parts = urlsplit(url)
    host, port = parts.hostname or LOOPBACK, parts.port or 80
    target = f"{parts.path}?{parts.query}" if parts.query else parts.path
    deadline = time.monotonic() + seconds
    latencies: list[list[float]] = [[] for _ in range(connections)]
    errors = [0] * connections

    def client(number: int) -> None:
        connection = http.client.HTTPConnection(host, port, timeout=10)
        try:
            while time.monotonic() < deadline:
                started = time.perf_counter()
                try:
                    connection.request("GET", target, headers={"Cookie": cookie})
                    response = connection.getresponse()
                    response.read()
                except (OSError, http.client.HTTPException):
                    errors[number] += 1
                    connection.close()
                    continue
                latencies[number].append((time.perf_counter() - started) * 1000)
                errors[number] += response.status >= 400
        finally:
            connection.close()

    started = time.monotonic()
    threads = [threading.Thread(target=client, args=(n,), daemon=True) for n in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    every = [value for values in latencies for value in values]
    if not every:
        raise ServerFailed(f"no request to {url} succeeded")
    return Load(
        requests=len(every),
        seconds=elapsed,
        p50_ms=percentile(every, 0.5),
        p99_ms=percentile(every, 0.99),
        errors=sum(errors),
    )


# --- One fleet size -------------------------------------------------------------


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


# --- Memory of one worker ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Memory:
    """What the fleet of `MEMORY_SIZE` costs a worker, in bytes (see `memory_probe`)."""

    traced: dict[str, int]
    fetching: dict[str, int]  # RSS of a process that fetched the list
    decoding: dict[str, int] | None  # RSS of one that decoded it from Redis (None: no Redis)


def memory_probe(mode: str) -> None:
    """Run by `measure_memory` in a process of its own: prints, as JSON, what the fleet costs.

    `traced`: under tracemalloc, the process plays two workers in turn: the one
    that fetches the list and stores it in the cache, then, its copy dropped,
    one that decodes the stored version, as every other worker does. `rss`: one
    worker, without tracemalloc (whose own bookkeeping would show in the RSS):
    it fetches or decodes, depending on what the cache holds. Each serves
    every sort order with and without searches, which builds the orders and
    search columns a worker keeps.
    """
    import django  # here: the settings come from this process's environment

    django.setup()
    from fleet.services import vehicle_cache, vehicles

    def exercise(plate: str) -> None:
        for sort in vehicles.SORTS:
            for query in ("", SEARCH_MODEL, plate_fragment(plate)):
                vehicles.vehicle_search(query=query, sort=sort)
            vehicles.vehicle_search(active=False, sort=sort)

    if mode == "rss":
        start = _status("VmRSS")
        first = vehicles.vehicle_search()
        gc.collect()
        first_page = _status("VmRSS") - start
        exercise(first.rows[0].plate)
        gc.collect()
        used = {"first_page": first_page, "all": _status("VmRSS") - start}
        print(json.dumps(used | {"peak": _status("VmHWM") - start, "count": first.fleet_total}))
        return

    def traced() -> int:
        gc.collect()
        return tracemalloc.get_traced_memory()[0]

    tracemalloc.start()
    first = vehicles.vehicle_search()
    fetch_peak = tracemalloc.get_traced_memory()[1]
    exercise(first.rows[0].plate)
    fetched = traced()
    in_cache = sum(
        stat.size
        for stat in tracemalloc.take_snapshot()
        .filter_traces([tracemalloc.Filter(True, "*/django/core/cache/backends/locmem.py")])
        .statistics("filename")
    )
    vehicle_cache.vehicles_forget()
    base = traced()
    tracemalloc.reset_peak()
    vehicles.vehicle_search()
    decode_peak = tracemalloc.get_traced_memory()[1] - base
    decoded = traced() - base
    exercise(first.rows[0].plate)
    decoded_all = traced() - base
    print(
        json.dumps(
            {
                "count": first.fleet_total,
                "fetch_peak": fetch_peak,
                "fetched": fetched,
                "in_cache": in_cache,
                "decode_peak": decode_peak,
                "decoded": decoded,
                "decoded_all": decoded_all,
            }
        )
    )


def _status(name: str) -> int:
    """A size from /proc/self/status (`VmRSS`, `VmHWM`), in bytes."""
    status = Path("/proc/self/status").read_text()
    return int(re.search(rf"^{name}:\s+(\d+) kB", status, re.MULTILINE)[1]) * 1024  # type: ignore[index]


def measure_memory(
    workdir: Path, database: Path, *, shared: redis.Redis | None, shared_url: str
) -> tuple[Memory, list[str]]:
    """Run `memory_probe` against an emulator of `MEMORY_SIZE`; the problems seen, if any."""
    problems = []
    with (
        running_emulator(workdir, "--vehicles", str(MEMORY_SIZE), "--rate-limit", "0") as emulator,
        upstream_session() as upstream,
    ):
        environment = portal_environment(database=database, emulator_url=emulator.url) | {
            "FLEET_VEHICLES_TTL": str(TTL)
        }

        def probe(mode: str, environment: dict[str, str], *, fetches: bool) -> dict[str, int]:
            response = upstream.get(f"{emulator.url}/_emulator/stats", timeout=10)
            before = response.json()["calls"].get("GET /key/list-cars", 0)
            completed = subprocess.run(
                [sys.executable, "-c", f"import bench.vehicles as b; b.memory_probe({mode!r})"],
                cwd=ROOT,
                env=environment,
                capture_output=True,
                text=True,
                check=False,
                timeout=300,
            )
            if completed.returncode != 0:
                raise ServerFailed(
                    f"the memory probe failed:\n{completed.stdout}{completed.stderr}"
                )
            response = upstream.get(f"{emulator.url}/_emulator/stats", timeout=10)
            calls = response.json()["calls"].get("GET /key/list-cars", 0) - before
            if calls != int(fetches):
                problems.append(
                    f"memory probe ({mode}): {calls} list-cars calls, not {int(fetches)}"
                )
            numbers: dict[str, int] = json.loads(completed.stdout.splitlines()[-1])
            return numbers

        traced = probe("traced", environment, fetches=True)
        if shared is None:
            return Memory(traced, probe("rss", environment, fetches=True), None), problems
        # As in production: one worker fetches and stores in Redis, another decodes it.
        shared.flushdb()
        environment["CACHE_URL"] = shared_url
        fetching = probe("rss", environment, fetches=True)
        decoding = probe("rss", environment, fetches=False)
        return Memory(traced, fetching, decoding), problems


# --- Report -------------------------------------------------------------------


def _median(values: Sequence[float]) -> str:
    return f"{statistics.median(values):.2f}" if values else "-"


def _p99(values: Sequence[float]) -> str:
    return f"{percentile(values, 0.99):.2f}" if values else "-"


def _mb(value: float) -> str:
    return f"{value / 1e6:.1f} MB"


def _bytes(value: float) -> str:
    return _mb(value) if value >= 1e6 else f"{value / 1e3:.0f} kB"


def report_size(result: SizeResult) -> None:
    found = ", ".join(
        f'"{probe.path.partition("q=")[2]}" matches {result.matches.get(probe.path, 0):,}'
        for probe in result.searches
    )
    stored = f"; {_bytes(result.stored_bytes)} in Redis" if result.stored_bytes else ""
    print(
        f"\nFleet of {result.size:,} vehicles: {found}; list-cars answer "
        f"{_bytes(result.answer_bytes)}{stored}; list-cars calls: "
        f"{result.warmup_calls} while warming up, {result.warm_calls} while warm"
    )
    print(
        f"{'':30}{'client, under load':^32}  {'server time ms (%D)':^28}\n"
        f"{'warm':30}{'req/s':>8}{'x bare':>8}{'p50 ms':>8}{'p99 ms':>8}  "
        f"{'load p50':>9}{'p99':>7}{'alone p50':>10}{'p99':>7}"
    )
    for probe in result.probes:
        loads = result.loads.get(probe.path, [])
        p50 = statistics.median(load.p50_ms for load in loads) if loads else 0.0
        p99 = max((load.p99_ms for load in loads), default=0.0)
        print(
            f"{probe.label:30}{result.requests_per_second(probe):>8.0f}"
            f"{result.ratio(probe):>8.2f}{p50:>8.2f}{p99:>8.2f}  "
            f"{_median(result.loaded.get(probe.path, [])):>9}"
            f"{_p99(result.loaded.get(probe.path, [])):>7}"
            f"{_median(result.alone.get(probe.path, [])):>10}"
            f"{_p99(result.alone.get(probe.path, [])):>7}"
        )
    if not (result.cold_page and result.upstream_parsed):
        print("cold: no successful round")
        return
    cold, upstream = statistics.median(result.cold_page), statistics.median(result.upstream_parsed)
    warm = statistics.median(result.alone[PAGE.path])
    print(f"{'cold, medians of ' + str(len(result.cold_page)) + ' rounds':30}{'ms':>8}")
    print(
        f"{'  GET /vehicles/ (cold page)':30}{cold:>8.2f}   server "
        f"{_median(result.cold_server)} ms: fetch, store, sort, render"
    )
    print(f"{'  list-cars + response.json()':30}{upstream:>8.2f}   the baseline")
    print(f"{'  list-cars, bytes only':30}{_median(result.upstream_bytes):>8}")
    print(
        f"{'  list-cars, bytes in one read':30}{_median(result.upstream_one_read):>8}"
        "   as the portal reads them"
    )
    if result.upstream_orjson:
        print(
            f"{'  list-cars + orjson.loads':30}{_median(result.upstream_orjson):>8}"
            "   for comparison"
        )
    print(
        f"{'  cold page / baseline':30}{result.cold_ratio():>8.2f}x  the page adds "
        f"{cold - upstream:.1f} ms; the warm page alone takes {warm:.1f} ms of server time"
    )
    floor = result.cold_floor()
    print(
        f"{'  floor of any cold page':30}{floor:>8.2f}   = {floor / upstream:.2f}x: list-cars "
        f"bytes + the warm page's server time + the HTTP hop ({result.cold_hop():.2f} ms)"
    )
    if result.cold_bare:
        bare = statistics.median(result.cold_bare)
        print(
            f"{'  bare view, one at a time':30}{bare:>8.2f}   = {bare / upstream:.2f}x: a page "
            "that only checks the session, over the same connection, right after the cold page"
        )


def report_memory(memory: Memory) -> None:
    traced, fetching, decoding = memory.traced, memory.fetching, memory.decoding
    print(f"\nMemory of one worker, fleet of {traced['count']:,}")
    print(
        f"  a worker that decodes the stored list (tracemalloc, after gc): "
        f"{_mb(traced['decoded'])} for the first page, {_mb(traced['decoded_all'])} once "
        f"every sort order and search was used; peak {_mb(traced['decode_peak'])} while decoding"
    )
    if decoding is not None:
        print(
            f"    RSS of such a worker (own process, list decoded from Redis): "
            f"+{_mb(decoding['first_page'])} for the first page, +{_mb(decoding['all'])} "
            f"with everything used, peak +{_mb(decoding['peak'])}"
        )
    print(
        f"  the worker that fetched it (tracemalloc): {_mb(traced['fetched'])} kept, of which "
        f"{_mb(traced['in_cache'])} is the stored copy in its local-memory cache (Redis holds "
        f"it in production); peak {_mb(traced['fetch_peak'])} while fetching and parsing"
    )
    print(
        f"    RSS of such a worker (own process): +{_mb(fetching['first_page'])} for the "
        f"first page, +{_mb(fetching['all'])} with everything used, peak +{_mb(fetching['peak'])}"
    )


def _verdict(met: bool) -> str:
    return "met" if met else "MISSED"


def report_targets(results: Sequence[SizeResult], memory: Memory) -> None:
    print("\nTargets: landed at")
    for result in results:
        ratios = ", ".join(
            f"{probe.label.removeprefix('/vehicles/')} {result.ratio(probe):.2f}x"
            for probe in result.probes[1:]
        )
        worst = min(result.ratio(probe) for probe in result.probes[1:])
        print(
            f"  warm page >= {WARM_TARGET}x bare view, {result.size:>6,}: {ratios}"
            f"  -> {_verdict(worst >= WARM_TARGET)}"
        )
    for result in results:
        if result.size != MEMORY_SIZE:
            continue
        for probe in result.searches:
            alone = statistics.median(result.alone[probe.path])
            loaded = statistics.median(result.loaded[probe.path])
            print(
                f"  search over {result.size:,} < {SEARCH_TARGET_MS:.0f} ms server p50, "
                f"{probe.label}: {alone:.1f} ms one at a time -> "
                f"{_verdict(alone < SEARCH_TARGET_MS)}; {loaded:.1f} ms under load "
                f"-> {_verdict(loaded < SEARCH_TARGET_MS)}"
            )
    for result in results:
        if result.cold_page and result.upstream_parsed:
            ratio = result.cold_ratio()
            floor = result.cold_floor() / statistics.median(result.upstream_parsed)
            print(
                f"  cold page <= {COLD_TARGET}x list-cars+json, {result.size:>6,}: "
                f"{ratio:.2f}x -> {_verdict(ratio <= COLD_TARGET)} (floor {floor:.2f}x)"
            )
    kept = [("decoded, tracemalloc", memory.traced["decoded_all"])]
    if memory.decoding is not None:
        kept.append(("decoding worker RSS", memory.decoding["all"]))
    kept.append(("fetching worker RSS", memory.fetching["all"]))
    for label, size in kept:
        print(
            f"  memory per worker < {MEMORY_TARGET_MB:.0f} MB, {memory.traced['count']:,}, "
            f"{label}: {_mb(size)} -> {_verdict(size / 1e6 < MEMORY_TARGET_MB)}"
        )


# --- Main -----------------------------------------------------------------------


def shared_cache(url: str) -> redis.Redis | None:
    """A client of the benchmark's Redis database, or None if Redis does not answer."""
    client = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
    try:
        client.ping()
    except redis.RedisError:
        return None
    return client


@contextmanager
def logged_in(portal: Server, user: PortalUser) -> Iterator[requests.Session]:
    with requests.Session() as browser:
        portal_log_in(browser, portal.url, user)
        yield browser


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError("a comma-separated list of numbers") from None
    if not sizes or any(not 1 <= size <= 100_000 for size in sizes):
        raise argparse.ArgumentTypeError("each size must be 1 to 100,000")
    return sizes


def parse_arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.vehicles",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--sizes", type=_sizes, default=list(SIZES), help="default 1000,10000,50000"
    )
    # Rounds of 2 s moved a warm ratio by 0.3 from one run to the next (0.45 or 0.75x): 6 s.
    parser.add_argument(
        "--duration", type=int, default=18, help="seconds of load per URL and size (default 18)"
    )
    parser.add_argument(
        "--rounds", type=int, default=3, help="rounds the duration is split into (default 3)"
    )
    parser.add_argument("--connections", type=int, default=CONNECTIONS, help="default 8")
    parser.add_argument(
        "--sequential", type=int, default=50, help="requests per URL sent one at a time (50)"
    )
    parser.add_argument("--cold-rounds", type=int, default=7, help="default 7")
    parser.add_argument(
        "--redis", default=REDIS_URL, help=f"the shared cache (default {REDIS_URL})"
    )
    parser.add_argument(
        "--scoped",
        action="store_true",
        help="users who see their vehicle groups instead (bench/vehicles_scoped.py; "
        "`--scoped --help` lists its options)",
    )
    parser.add_argument(
        "--metrics",
        action="store_true",
        help="the time the metrics add to the warm page: a portal with them and one without "
        "(bench/vehicles_metrics.py; `--metrics --help` lists its options)",
    )
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.duration < args.rounds or args.cold_rounds < 1:
        parser.error("--rounds and --cold-rounds must be at least 1, --duration at least --rounds")
    if urlsplit(args.redis).hostname not in {"127.0.0.1", "localhost", "::1"}:
        parser.error("--redis must be on the loopback interface")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else list(argv)
    if "--scoped" in arguments:  # users who see their vehicle groups: a run of its own
        from bench import vehicles_scoped

        return vehicles_scoped.main([a for a in arguments if a != "--scoped"])
    if "--metrics" in arguments:  # two portals, with and without metrics: a run of its own
        from bench import vehicles_metrics

        return vehicles_metrics.main([a for a in arguments if a != "--metrics"])
    args = parse_arguments(arguments)
    failures: Counter[str] = Counter()
    try:
        with sigterm_as_interrupt(), tempfile.TemporaryDirectory(prefix="fleet-bench-") as tmp:
            shared = shared_cache(args.redis)
            try:
                results, memory = run(args, Path(tmp), shared, failures)
            finally:
                if shared is not None:  # leave the benchmark's database empty
                    with contextlib.suppress(redis.RedisError):
                        shared.flushdb()
    except ServerFailed as error:
        print(f"A server failed: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\nInterrupted; the servers are stopped.", file=sys.stderr)
        return 130
    report_targets(results, memory)
    return report_failures(failures, passed="every request answered 200 with the fleet expected")


def bench_counting_failures(run: Callable[[Path, Counter[str]], int], *, passed: str) -> int:
    """`run` in a temporary folder (`bench_main`), counting its failures: its exit status,
    else 1 if any failed; with none, it says what `passed`."""
    failures: Counter[str] = Counter()
    status = bench_main(lambda workdir: run(workdir, failures))
    return status or report_failures(failures, passed=passed)


def report_failures(failures: Counter[str], *, passed: str) -> int:
    """The load average at the end, then the failures or what `passed`: the exit status."""
    print(f"Load average at the end: {load_average()} (other work on the machine moves req/s).")
    if not failures:
        print(f"\nNo failures: {passed}.")
        return 0
    print("\nFAILURES:")
    for failure, count in failures.most_common():
        print(f"  {count:>5}  {failure}")
    return 1


def run(
    args: argparse.Namespace, workdir: Path, shared: redis.Redis | None, failures: Counter[str]
) -> tuple[list[SizeResult], Memory]:
    """One portal for every size, an emulator per size on the same port, then the memory."""
    wrk = shutil.which("wrk")
    database = workdir / "portal.sqlite3"
    port = free_port()
    environment = portal_environment(
        database=database, emulator_url=f"http://{LOOPBACK}:{port}"
    ) | {"DJANGO_SETTINGS_MODULE": "bench.settings", "FLEET_VEHICLES_TTL": str(TTL)}
    if shared is not None:
        shared.flushdb()
        environment["CACHE_URL"] = args.redis
    user = portal_prepare(environment)
    access_log = workdir / "access.log"
    gunicorn_args = [
        f"--access-logfile={access_log}",
        f"--access-logformat={ACCESS_LOG_FORMAT}",
        # Each worker its own listening socket, as in bench.webhooks: on one shared
        # socket, the worker that woke first often took most of wrk's keep-alive
        # connections, and a URL's ratio moved by 0.3 from one run to the next.
        "--reuse-port",
    ]
    results = []
    with running_portal(
        environment, workdir, workers=WORKERS, threads=THREADS, extra_args=gunicorn_args
    ) as portal:
        print_setup(args, portal, port, shared, wrk)
        for size in args.sizes:
            with (
                running_emulator(
                    workdir, "--vehicles", str(size), "--rate-limit", "0", "--port", str(port)
                ) as emulator,
                logged_in(portal, user) as browser,
                upstream_session() as upstream,
            ):
                target = Target(
                    portal,
                    emulator,
                    AccessLog(access_log),
                    browser,
                    upstream,
                    f"sessionid={browser.cookies['sessionid']}",
                    wrk_load(wrk) if wrk else python_load,
                    failures,
                )
                try:
                    result = measure_size(
                        target,
                        size,
                        rounds=args.rounds,
                        seconds=args.duration // args.rounds,
                        connections=args.connections,
                        sequential=args.sequential,
                        cold_rounds=args.cold_rounds,
                        shared=shared,
                    )
                except requests.RequestException as error:
                    ensure_running(emulator)
                    ensure_running(portal)
                    raise ServerFailed(f"a request failed: {error}") from error
            results.append(result)
            report_size(result)
    memory, problems = measure_memory(workdir, database, shared=shared, shared_url=args.redis)
    failures.update(problems)
    report_memory(memory)
    return results, memory


def load_average() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def print_setup(
    args: argparse.Namespace, portal: Server, port: int, shared: redis.Redis | None, wrk: str | None
) -> None:
    cache = (
        f"Redis {args.redis} (flushed at start, between sizes and before each cold page)"
        if shared is not None
        else f"LOCAL MEMORY: Redis at {args.redis} did not answer, so each worker has its own cache"
    )
    print(
        f"Portal at {portal.url}: gunicorn {WORKERS} workers x {THREADS} threads "
        f"(gthread, --reuse-port), SQLite, DEBUG=False, FLEET_VEHICLES_TTL={TTL} s; cache: {cache}."
    )
    print(
        f"Emulator on 127.0.0.1:{port}, restarted for each size, --rate-limit 0. "
        "Workers restarted (SIGHUP) for each size."
    )
    per_round = args.duration // args.rounds
    if wrk:
        print(
            f"Load: {wrk}, 1 thread, {args.connections} connections, {args.rounds} round(s) of "
            f"{per_round} s per URL (order reversed every other round) after 1 s of warm-up."
        )
    else:
        print(
            "WARNING: wrk is not installed (`apt-get install wrk`); load comes from a Python "
            f"client ({args.connections} threads, keep-alive) that shares the CPU and its GIL: "
            "it saturates before a fast view does, so the ratios to the bare view are "
            "compressed towards 1. Install wrk for numbers worth comparing."
        )
    print(f"Machine: {os.cpu_count()} CPUs, load average {load_average()} at start.")
    print(
        "Client p50: median over rounds; p99: worst round. Server time: gunicorn's %(D)s, "
        f"under that load and for {args.sequential} requests per URL sent one at a time."
    )


if __name__ == "__main__":
    sys.exit(main())
