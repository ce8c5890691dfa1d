"""What a fleet of `MEMORY_SIZE` vehicles costs one worker of the portal, in memory.

Each measure runs in a process of its own with the portal's settings (`memory_probe`,
started by `measure_memory`): under tracemalloc with the local-memory cache, then as RSS
for a worker that fetches the list and, with Redis, for one that decodes the stored copy,
as every worker but one does in production.
"""

from __future__ import annotations

import gc
import json
import re
import tracemalloc
from dataclasses import dataclass
from pathlib import Path

import redis

from bench.portal_setup import portal_environment
from bench.servers import python_run, running_emulator, upstream_session
from bench.vehicles_rounds import SEARCH_MODEL, TTL, plate_fragment

MEMORY_SIZE = 50_000


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
            output = python_run(
                ["-c", f"import bench.vehicles_memory as b; b.memory_probe({mode!r})"],
                environment,
                what="the memory probe",
            )
            response = upstream.get(f"{emulator.url}/_emulator/stats", timeout=10)
            calls = response.json()["calls"].get("GET /key/list-cars", 0) - before
            if calls != int(fetches):
                problems.append(
                    f"memory probe ({mode}): {calls} list-cars calls, not {int(fetches)}"
                )
            numbers: dict[str, int] = json.loads(output.splitlines()[-1])
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
