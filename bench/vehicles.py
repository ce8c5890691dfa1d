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
import os
import shutil
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import redis
import requests

from bench.access_log import ACCESS_LOG_FORMAT, AccessLog
from bench.load_generators import python_load, wrk_load
from bench.outcome import load_average, report_failures
from bench.portal_setup import PortalUser, portal_environment, portal_log_in, portal_prepare
from bench.servers import (
    LOOPBACK,
    Server,
    ServerFailed,
    bench_main,
    ensure_running,
    free_port,
    running_emulator,
    running_portal,
    upstream_session,
)
from bench.vehicles_memory import Memory, measure_memory
from bench.vehicles_report import report_memory, report_size, report_targets
from bench.vehicles_rounds import (
    CONNECTIONS,
    THREADS,
    TTL,
    WORKERS,
    SizeResult,
    Target,
    measure_size,
)

SIZES = (1_000, 10_000, 50_000)
REDIS_URL = "redis://127.0.0.1:6379/7"


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
    measured: list[tuple[list[SizeResult], Memory]] = []

    def measure(workdir: Path) -> int:
        shared = shared_cache(args.redis)
        try:
            measured.append(run(args, workdir, shared, failures))
        finally:
            if shared is not None:  # leave the benchmark's database empty
                with contextlib.suppress(redis.RedisError):
                    shared.flushdb()
        return 0

    # The targets are reported once the servers are stopped and the folder is gone.
    if status := bench_main(measure):
        return status
    results, memory = measured[0]
    report_targets(results, memory)
    return report_failures(failures, passed="every request answered 200 with the fleet expected")


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
