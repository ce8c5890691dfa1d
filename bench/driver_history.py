"""What the history of who had each vehicle costs a refresh of the vehicle list, against the
refresh's own call to the API, at each fleet size.

    python -m bench.driver_history [--sizes 100000,1000000] [--rounds 5] [--database-url URL]

For each size: the emulator of that fleet, a new portal database (SQLite in a temporary
folder, or `--database-url`'s PostgreSQL, emptied of its history first), and in a process
of the portal's own (`--measure`), with the refresh's own functions:

- the baseline: `GET /key/list-cars` and its decode alone (`list_vehicle_columns`), the
  median of `--rounds` calls;
- the first observation (every vehicle opens a period: once per deployment);
- a refresh where nothing changed (compared with the previous list in memory);
- a refresh where 1 % of the vehicles changed hands (their period closed, the next opened);
- a refresh compared with the database (the previous list not at hand: another host's, or
  after a failed one), nothing changed.

Each as the median of `--rounds` (the first observation once), in ms and rows written, and
its ratio to the baseline. Nothing is asserted: it prints.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from array import array
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.portal_setup import add_database_argument, portal_environment, portal_migrate
from bench.servers import bench_main, python_run, running_emulator

CHANGED_SHARE = 100  # one vehicle in a hundred changes hands


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.driver_history", description=__doc__)
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    add_database_argument(parser)
    options = parser.parse_args(argv)
    if options.measure:
        print(json.dumps(measure(options.rounds)))
        return 0
    sizes = [int(size) for size in options.sizes.split(",")]
    return bench_main(lambda workdir: run(options, sizes, workdir))


def run(options: argparse.Namespace, sizes: list[int], workdir: Path) -> int:
    found = []
    for size in sizes:
        with running_emulator(workdir, "--vehicles", str(size), "--rate-limit", "0") as emulator:
            environment = portal_environment(
                database=workdir / f"history-{size}.sqlite3", emulator_url=emulator.url
            )
            if options.database_url:
                environment["DATABASE_URL"] = options.database_url
            portal_migrate(environment)
            output = python_run(
                ["-m", "bench.driver_history", "--measure", "--rounds", str(options.rounds)],
                environment,
                what="measuring the history",
                timeout=3600,
            )
            found.append((size, json.loads(output.strip().splitlines()[-1])))
    database = "PostgreSQL" if options.database_url else "SQLite"
    print(
        f"\nThe history's cost per refresh of the vehicle list ({database}, median of "
        f"{options.rounds})\n"
    )
    print(f"{'vehicles':>10}  {'what':<38} {'ms':>9} {'rows':>8} {'x call':>7}")
    for size, result in found:
        baseline = result["baseline_ms"]
        print(f"{size:>10,}  {'list-cars call and decode (baseline)':<38} {baseline:>9.1f}")
        for name, ms, rows in result["cases"]:
            print(f"{size:>10,}  {name:<38} {ms:>9.1f} {rows:>8,} {ms / baseline:>7.2f}")
    return 0


def measure(rounds: int) -> dict[str, Any]:
    """In the portal's process: the baseline and each case (see the module's docstring)."""
    import django

    django.setup()
    from fleet.models import DriverObservation, DriverSpan
    from fleet.services.connection import fleet_cache_scope, fleet_client
    from fleet.services.driver_history import history_observe
    from fleet.services.vehicle_index import Snapshot

    DriverSpan.objects.all().delete()
    DriverObservation.objects.all().delete()
    client = fleet_client()
    calls = []
    for _round in range(rounds):
        started = time.perf_counter()
        columns = client.list_vehicle_columns()
        calls.append((time.perf_counter() - started) * 1000)
    at = time.time() - 24 * 3600 * 30
    number = 0

    def snapshot(drivers: array[int]) -> Snapshot:
        nonlocal at, number
        at, number = at + 60, number + 1
        return Snapshot.from_columns(
            replace(columns, drivers=drivers),
            scope=fleet_cache_scope(),
            version=f"bench-{number}",
            fetched_at=at,
        )

    def observe(current: Snapshot, previous: Snapshot | None) -> tuple[float, int]:
        started = time.perf_counter()
        observed = history_observe(current, previous=previous)
        took = (time.perf_counter() - started) * 1000
        assert observed is not None
        return took, observed.rows_written

    drivers = array(columns.drivers.typecode, columns.drivers)
    previous = snapshot(drivers)
    first = observe(previous, None)
    unchanged, changed, compared = [], [], []
    for round_number in range(rounds):
        current = snapshot(drivers)
        unchanged.append(observe(current, previous))
        drivers = array(drivers.typecode, drivers)
        for row in range(round_number, len(drivers), CHANGED_SHARE):
            drivers[row] = drivers[row] + 1_000_000 + round_number
        previous, current = current, snapshot(drivers)
        changed.append(observe(current, previous))
        previous = snapshot(drivers)
        compared.append(observe(previous, None))

    def median(found: list[tuple[float, int]]) -> tuple[float, int]:
        return statistics.median(ms for ms, _rows in found), found[-1][1]

    return {
        "baseline_ms": statistics.median(calls),
        "cases": [
            ("first observation (every vehicle)", *first),
            ("nothing changed", *median(unchanged)),
            ("1 % changed hands", *median(changed)),
            ("nothing changed, compared with the DB", *median(compared)),
        ],
        "database": os.environ.get("DATABASE_URL", "").split(":")[0],
    }


if __name__ == "__main__":
    raise SystemExit(main())
