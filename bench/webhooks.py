"""Sustained webhook deliveries per second, against a bare POST view (issue 5, must-show 3).

`python -m bench.webhooks [--duration 18] [--rounds 3] [--connections 8]
[--workers 4 --threads 1]` starts one portal under gunicorn as the README's
production line runs it (4 sync workers: a connection per request, as behind
a proxy such as nginx; `--workers 2 --threads 4` runs 2 gthread workers with
keep-alive instead; each worker listens on its own socket (`--reuse-port`),
so that the kernel shares the connections out among them;
`bench.settings`, its own SQLite database, or `--database-url` for a
PostgreSQL on this machine) and loads, in turn, with the same bodies and
the same load:

- `bench/bare-post`: the baseline, a CSRF-exempt POST view through the same
  middleware that reads the body and answers a few bytes of JSON;
- `/webhooks/fleet/<token>/`: the receiver, which stores each delivery
  (committed) and answers; the background worker (`manage.py db_worker`,
  running all along as in production, on the same CPUs) processes them in
  batches meanwhile;
- `bench/stored-post`: the bare view after one committed INSERT of the body
  into a table of two columns: the floor of any receiver that stores each
  delivery in this database before it answers, with nothing processed after.

Every body is a different fine event, numbered on from the previous round:
three in four create a fine, one in four updates one made just before
(`treated: true`). The order of the three turns every round. It prints
requests/s of each, their ratio (target >= 0.5) and client p50/p99, how
long after each receiver round the worker processed its last delivery (it
waits for that before the next round) and the rate of deliveries stored and
processed, catch-up included, then checks that the portal stored one
delivery per answer and processed each, and exits 1 if not or if any
request failed.

Load generator: `wrk` with a Lua script (`apt-get install wrk`); without
it, a Python client that shares the CPU and the GIL with what it measures.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from urllib.parse import urlsplit

from bench.support import (
    ROOT,
    Load,
    ProcessedWaiter,
    ServerFailed,
    add_database_argument,
    bench_main,
    parse_wrk,
    percentile,
    portal_empty_webhook_tables,
    portal_environment,
    portal_migrate,
    portal_wait_processed,
    running_emulator,
    running_portal,
    running_worker,
)

TOKEN = "bench-webhook-token"
TARGET = 0.5
# Each worker its own listening socket: the kernel shares connections out among them.
# On one shared socket, the worker that woke first often took all of a round's
# keep-alive connections, and a round measured one worker of two (the bare view at
# 1,300 or 4,000 requests/s from one round to the next).
SERVER_ARGS = ("--reuse-port",)
BARE = ("bare POST view (bench/bare-post)", "/bench/bare-post")
RECEIVER = ("receiver /webhooks/fleet/<token>/", f"/webhooks/fleet/{TOKEN}/")
STORED = ("floor: bare + an INSERT (bench/stored-post)", "/bench/stored-post")
PROBES = (BARE, RECEIVER, STORED)

# The n-th body of a round; the same in Lua (for wrk) and Python (the fallback).
_BODY = (
    '{"frame":{"id":%d,"carPlate":"ABC1D23","autoInfracao":"B%09d",'
    '"description":"Avançar o sinal vermelho do semáforo","infractionCode":"6050-1",'
    '"amount":"293.47","treated":%s,"updatedAt":"2026-11-22T10:%02d:00Z"},'
    '"linkFrame":null,"link":"https://boletos.example/B%09d"}'
)
# Lua's string.format reads the same template as Python's % operator.
_LUA = (
    """
-- Each request a new fine; one in four instead updates the fine made two requests before.
local counter, offset = 0, 0
local headers = {["Content-Type"] = "application/json"}
local template = [["""
    + _BODY
    + """]]
function init(args) offset = tonumber(args[1]) or 0 end
function request()
  counter = counter + 1
  local id, treated, minute = offset + counter, "false", 0
  if counter % 4 == 0 then id, treated, minute = offset + counter - 2, "true", 5 end
  return wrk.format("POST", nil, headers, string.format(template, id, id, treated, minute, id))
end
"""
)

type LoadGenerator = Callable[[str, int, int, int], Load]


def body(offset: int, counter: int) -> bytes:
    """What the Lua script sends as its `counter`-th request after `offset`."""
    number, treated, minute = offset + counter, "false", 0
    if counter % 4 == 0:
        number, treated, minute = offset + counter - 2, "true", 5
    return (_BODY % (number, number, treated, minute, number)).encode()


def wrk_post(wrk: str, script: Path) -> LoadGenerator:
    def run(url: str, offset: int, connections: int, seconds: int) -> Load:
        command = [
            wrk, "--threads", "1", "--connections", str(connections),
            "--duration", f"{seconds}s", "--timeout", "10s", "--latency",
            "--script", str(script), url, "--", str(offset),
        ]  # fmt: skip
        completed = subprocess.run(
            command, capture_output=True, text=True, check=False, timeout=seconds + 30
        )
        return parse_wrk(completed.stdout, completed.stderr, completed.returncode)

    return run


def python_post(url: str, offset: int, connections: int, seconds: int) -> Load:
    """Keep-alive connections in threads: the fallback when `wrk` is missing."""
    parts = urlsplit(url)
    deadline = time.monotonic() + seconds
    lock = threading.Lock()
    counter = [0]
    latencies: list[float] = []
    errors = [0]

    def client() -> None:
        connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
        headers = {"Content-Type": "application/json"}
        while time.monotonic() < deadline:
            with lock:
                counter[0] += 1
                payload = body(offset, counter[0])
            started = time.perf_counter()
            try:
                connection.request("POST", parts.path, body=payload, headers=headers)
                response = connection.getresponse()
                response.read()
            except (OSError, http.client.HTTPException):
                with lock:
                    errors[0] += 1
                connection.close()
                continue
            with lock:
                latencies.append((time.perf_counter() - started) * 1000)
                errors[0] += response.status >= 300
        connection.close()

    started = time.monotonic()
    threads = [threading.Thread(target=client, daemon=True) for _ in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if not latencies:
        raise ServerFailed(f"no request to {url} succeeded")
    return Load(
        requests=len(latencies),
        seconds=time.monotonic() - started,
        p50_ms=percentile(latencies, 0.5),
        p99_ms=percentile(latencies, 0.99),
        errors=errors[0],
    )


def _count_deliveries(environment: dict[str, str]) -> dict[str, int]:
    script = (
        "import json; from django.db.models import Count; "
        "from fleet.models import WebhookDelivery; "
        "print(json.dumps(dict(WebhookDelivery.objects.values_list('status')"
        ".annotate(n=Count('pk')).values_list('status', 'n'))))"
    )
    completed = subprocess.run(
        [sys.executable, "manage.py", "shell", "-v", "0", "-c", script],
        cwd=ROOT, env=environment, capture_output=True, text=True, check=True,
    )  # fmt: skip
    counts: dict[str, int] = json.loads(completed.stdout.splitlines()[-1])
    return counts


def _stored_table(environment: dict[str, str], *, create: bool) -> None:
    """Drop `bench/stored-post`'s table, then make it anew if `create`."""
    script = (
        "from django.db import connection\n"
        "from bench.urls import STORED_TABLE\n"
        "postgresql = connection.vendor == 'postgresql'\n"
        "key = 'bigserial' if postgresql else 'integer'\n"
        "body = 'bytea' if postgresql else 'blob'\n"
        "with connection.cursor() as cursor:\n"
        "    cursor.execute(f'DROP TABLE IF EXISTS {STORED_TABLE}')\n"
    )
    if create:
        script += (
            "    cursor.execute(\n"
            "        f'CREATE TABLE {STORED_TABLE} (id {key} PRIMARY KEY, body {body} NOT NULL)'\n"
            "    )\n"
        )
    subprocess.run(
        [sys.executable, "manage.py", "shell", "-v", "0", "-c", script],
        cwd=ROOT, env=environment, capture_output=True, text=True, check=True,
    )  # fmt: skip


def run(args: argparse.Namespace, workdir: Path) -> int:
    wrk = shutil.which("wrk")
    script = workdir / "webhook.lua"
    script.write_text(_LUA)
    generate = wrk_post(wrk, script) if wrk else python_post
    failures: list[str] = []
    loads: dict[str, list[Load]] = {path: [] for _label, path in PROBES}
    catch_ups: list[float] = []
    with running_emulator(workdir) as emulator:
        environment = portal_environment(
            database=workdir / "portal.sqlite3", emulator_url=emulator.url
        ) | {"DJANGO_SETTINGS_MODULE": "bench.settings", "FLEET_WEBHOOK_TOKENS": TOKEN}
        database = "SQLite (a temporary file, WAL)"
        if args.database_url:
            environment["DATABASE_URL"] = args.database_url
            database = f"PostgreSQL at {urlsplit(args.database_url).hostname}"
        portal_migrate(environment)
        if args.database_url:
            portal_empty_webhook_tables(environment)
        _stored_table(environment, create=True)
        with (
            running_portal(
                environment,
                workdir,
                workers=args.workers,
                threads=args.threads,
                extra_args=SERVER_ARGS,
            ) as portal,
            running_worker(environment, workdir) as worker,
        ):
            print(
                f"Portal at {portal.url}: gunicorn {args.workers} workers x {args.threads} "
                f"threads ({'gthread' if args.threads > 1 else 'sync'}, --reuse-port), "
                f"{database}, DEBUG=False."
            )
            print(f"Machine: {os.cpu_count()} CPUs, load average {_load()} at start.")
            if wrk:
                print(f"Load: {wrk}, 1 thread, {args.connections} connections, Lua bodies.")
            else:
                print(
                    "WARNING: wrk is not installed (`apt-get install wrk`): a Python client "
                    "shares the CPU and its GIL with the portal, which compresses the ratio "
                    "towards 1."
                )
            seconds = args.duration // args.rounds
            offset = 0
            # Warm-up, not counted: both workers import, connect and compile.
            for _label, path in PROBES:
                load = generate(f"{portal.url}{path}", 10_000_000 + offset, args.connections, 3)
                offset += load.requests + 100
            portal_wait_processed(environment, worker, timeout=600)
            warm_deliveries = sum(_count_deliveries(environment).values())
            for round_number in range(args.rounds):
                turn = round_number % len(PROBES)
                for label, path in PROBES[turn:] + PROBES[:turn]:
                    # Watching for the worker's catch-up from the end of a receiver round;
                    # waiting for it before the next round, so that no round pays for
                    # the one before.
                    waiter = ProcessedWaiter(
                        environment, worker, not_before=time.time() + seconds, timeout=600
                    )
                    load = generate(f"{portal.url}{path}", offset, args.connections, seconds)
                    ended = time.time()
                    offset += load.requests + 100
                    loads[path].append(load)
                    if path == RECEIVER[1]:
                        catch_ups.append(max(0.0, waiter.done_at() - ended))
                    else:
                        waiter.done_at()
                    if load.errors:
                        failures.append(f"{label}: {load.errors} failed requests")
        counts = _count_deliveries(environment)
        _stored_table(environment, create=False)
    stored = sum(counts.values()) - warm_deliveries
    answered = sum(load.requests for load in loads[RECEIVER[1]])
    report(loads, args)
    print(f"Load average at the end: {_load()} (other work on the machine moves req/s).")
    print(f"\nDeliveries stored during the rounds: {stored:,} for {answered:,} answered;")
    print(f"  by status, warm-up included: {counts}")
    receiving = sum(load.seconds for load in loads[RECEIVER[1]])
    end_to_end = answered / (receiving + sum(catch_ups)) if receiving else 0.0
    lags = ", ".join(f"{lag:.2f}" for lag in catch_ups)
    print(
        f"The worker processed the last delivery of each receiver round {lags} s after it "
        f"ended:\n  {end_to_end:.0f} deliveries/s stored and processed "
        f"({end_to_end / _rate(loads[BARE[1]]):.2f}x bare), catch-up included."
    )
    if stored < answered:
        failures.append(f"{answered - stored} answered deliveries are not stored")
    if set(counts) - {"processed", "duplicate"}:
        failures.append(f"deliveries not processed: {counts}")
    if failures:
        print("\nFAILURES:")
        for failure in failures:
            print(f"  {failure}")
        return 1
    print("\nNo failures: every delivery answered 2xx, stored and processed.")
    return 0


def _load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def _rate(loads: Sequence[Load]) -> float:
    seconds = sum(load.seconds for load in loads)
    return sum(load.requests for load in loads) / seconds if seconds else 0.0


def report(loads: dict[str, list[Load]], args: argparse.Namespace) -> None:
    bare = _rate(loads[BARE[1]])
    print(f"\n{'':46}{'req/s':>8}{'x bare':>8}{'p50 ms':>8}{'p99 ms':>8}  rounds (req/s)")
    for label, path in PROBES:
        rate = _rate(loads[path])
        rounds = ", ".join(f"{load.requests / load.seconds:.0f}" for load in loads[path])
        p50 = statistics.median(load.p50_ms for load in loads[path])
        p99 = max(load.p99_ms for load in loads[path])
        print(f"{label:46}{rate:>8.0f}{rate / bare:>8.2f}{p50:>8.2f}{p99:>8.2f}  {rounds}")
    ratio = _rate(loads[RECEIVER[1]]) / bare if bare else 0.0
    verdict = "met" if ratio >= TARGET else "MISSED"
    print(f"\nTarget: receiver >= {TARGET}x the bare POST view: {ratio:.2f}x -> {verdict}")
    floor = _rate(loads[STORED[1]]) / bare if bare else 0.0
    print(
        f"Storing alone, in a table of two columns and with nothing to process, "
        f"reaches {floor:.2f}x on this database and machine."
    )


def parse_arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.webhooks",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--duration", type=int, default=18, help="seconds per URL (default 18)")
    parser.add_argument("--rounds", type=int, default=3, help="default 3")
    parser.add_argument("--connections", type=int, default=8, help="default 8")
    # The README's production line: `gunicorn portal.wsgi --workers 4`.
    parser.add_argument("--workers", type=int, default=4, help="gunicorn workers (default 4)")
    parser.add_argument(
        "--threads", type=int, default=1, help="threads per worker; 1: the sync worker (default 1)"
    )
    add_database_argument(parser)
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.duration < args.rounds:
        parser.error("--rounds must be at least 1 and --duration at least --rounds")
    if args.workers < 1 or args.threads < 1:
        parser.error("--workers and --threads must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_arguments(argv)
    return bench_main(lambda workdir: run(args, workdir))


if __name__ == "__main__":
    sys.exit(main())
