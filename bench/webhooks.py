"""Sustained webhook deliveries per second, against the floor of storing.

`python -m bench.webhooks [--duration 18] [--rounds 3] [--connections 8]
[--workers 4 --threads 1] [--worker during|after] [--database-url URL]` starts one portal under
gunicorn as the README's production line runs it (4 sync workers: a
connection per request, as behind a proxy such as nginx; `--workers 2
--threads 4` runs 2 gthread workers with keep-alive instead; each worker
listens on its own socket (`--reuse-port`), so that the kernel shares the
connections out among them; `bench.settings`, its own SQLite database, or
`--database-url` for a PostgreSQL on this machine) and loads, in turn, with
the same bodies and the same load:

- `bench/stored-post`: **the floor**, what any receiver that stores each
  delivery before it answers must do at the least: a CSRF-exempt POST view
  through the same middleware that writes the body with one ORM INSERT
  (`StoredPost.objects.create(body=request.read())`, autocommitted) in the
  same database, through the same connection settings, and answers a few
  bytes of JSON, with nothing processed afterwards (the bench-only app
  `bench`, installed by `bench.settings` alone, migrated by `bench/migrations/`);
- `/webhooks/fleet/<token>/`: the receiver, which stores each delivery
  (committed) and answers; the background worker (`manage.py db_worker`)
  processes them once the round ends (`--worker after`, the default: paused
  with SIGSTOP during the round, so that the receiver is measured on the
  same terms as the floor, which has nothing to process) or meanwhile, on
  the same CPUs, as in production (`--worker during`: the round then pays
  for the processing too);
- `bench/bare-post`: the same view without the INSERT (it stores nothing),
  for information.

Every body is a different fine event, numbered on from the previous round:
three in four create a fine, one in four updates one made just before
(`treated: true`). The order of the three turns every round. It prints
requests/s of each and client p50/p99, and as the headline the ratio
receiver / floor: the target is >= 0.8 (an earlier target, >= 0.5 of the bare
view that stores nothing, is retired); receiver / bare is printed for
information. Whether the target was met is a finding, not a failure. It
also prints how long after each receiver round the worker processed its last
delivery (it waits for that before the next round) and the rate of
deliveries stored and processed, catch-up included, then checks that the
portal stored one delivery per answer and processed each, and the floor one
row per answer, and exits 1 if not or if any request failed.

Load generator: `wrk` (Debian's package) with a Lua script, only: when it is
missing and this runs as root with apt-get, it installs it (`apt-get update
-qq && apt-get install -y -qq wrk`) and says so; when it cannot, it says so
and exits 2. (A Python client in the same machine shares the CPU, and its
interpreter lock, with what it measures.)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from urllib.parse import urlsplit

import requests

from bench.portal_setup import (
    add_database_argument,
    portal_empty_webhook_tables,
    portal_environment,
    portal_migrate,
)
from bench.servers import (
    ROOT,
    ProcessedWaiter,
    ServerFailed,
    bench_main,
    portal_wait_processed,
    running_emulator,
    running_portal,
    running_worker,
)
from bench.wrk import Load, parse_wrk

TOKEN = "bench-webhook-token"
TARGET = 0.8  # receiver / floor; the earlier 0.5 of the bare view is retired
# Each worker its own listening socket: the kernel shares connections out among them.
# On one shared socket, the worker that woke first often took all of a round's
# keep-alive connections, and a round measured one worker of two (the bare view at
# 1,300 or 4,000 requests/s from one round to the next).
SERVER_ARGS = ("--reuse-port",)
BARE = ("bare POST view, no INSERT (bench/bare-post)", "/bench/bare-post")
RECEIVER = ("receiver /webhooks/fleet/<token>/", f"/webhooks/fleet/{TOKEN}/")
FLOOR = ("floor: one ORM INSERT (bench/stored-post)", "/bench/stored-post")
PROBES = (FLOOR, RECEIVER, BARE)
APT_INSTALL = (("apt-get", "update", "-qq"), ("apt-get", "install", "-y", "-qq", "wrk"))

# The n-th body of a round, in Lua for wrk (`body()` makes the same in Python).
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


# Run in a Django process of the portal's (`bench.settings`): the receiver's deliveries
# by status and the floor's rows, as one line of JSON. Models only.
_COUNT = """
import json
from django.db.models import Count
from bench.models import StoredPost
from fleet.models import WebhookDelivery
statuses = WebhookDelivery.objects.values_list("status").annotate(n=Count("pk"))
print(json.dumps({
    "deliveries": dict(statuses.values_list("status", "n")),
    "floor_rows": StoredPost.objects.count(),
}))
"""
_EMPTY_FLOOR = "from bench.models import StoredPost\nStoredPost.objects.all().delete()\n"


def _shell(environment: dict[str, str], script: str) -> str:
    """`manage.py shell -c script` with the portal's environment: what it printed."""
    completed = subprocess.run(
        [sys.executable, "manage.py", "shell", "-v", "0", "-c", script],
        cwd=ROOT, env=environment, capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    if completed.returncode != 0:
        raise ServerFailed(f"manage.py shell failed:\n{completed.stderr[-3000:]}")
    return completed.stdout


def _counts(environment: dict[str, str]) -> tuple[dict[str, int], int]:
    """The receiver's deliveries by status, and the floor's rows."""
    counts = json.loads(_shell(environment, _COUNT).splitlines()[-1])
    deliveries: dict[str, int] = counts["deliveries"]
    return deliveries, int(counts["floor_rows"])


def ensure_wrk() -> str | None:
    """The path of `wrk`; installed from Debian's package when missing and we may."""
    if wrk := shutil.which("wrk"):
        return wrk
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        print(
            "wrk is not installed, and cannot be installed here (it takes root and apt-get): "
            "`apt-get install wrk` (Debian's package), then run this again.",
            file=sys.stderr,
        )
        return None
    shown = " && ".join(" ".join(command) for command in APT_INSTALL)
    print(f"wrk is not installed: installing Debian's package ({shown}) ...", flush=True)
    environment = os.environ | {"DEBIAN_FRONTEND": "noninteractive"}
    for command in APT_INSTALL:
        try:
            completed = subprocess.run(
                command, env=environment, capture_output=True, text=True, check=False, timeout=900
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            print(f"wrk could not be installed: {' '.join(command)}: {error}", file=sys.stderr)
            return None
        if completed.returncode != 0:
            print(
                f"wrk could not be installed: {' '.join(command)} exited with "
                f"{completed.returncode}:\n{(completed.stdout + completed.stderr)[-2000:]}",
                file=sys.stderr,
            )
            return None
    if wrk := shutil.which("wrk"):
        print(f"Installed {wrk}.")
        return wrk
    print("wrk could not be installed: apt-get succeeded but no wrk is on PATH.", file=sys.stderr)
    return None


def _check_answers(portal_url: str) -> list[str]:
    """One request to each URL before any load: what did not answer 2xx."""
    problems = []
    for number, (label, path) in enumerate(PROBES):
        try:
            response = requests.post(
                f"{portal_url}{path}",
                data=body(20_000_000 + 10 * number, 1),
                headers={"Content-Type": "application/json"},
                timeout=30,
            )
        except requests.RequestException as error:
            problems.append(f"{label}: {error}")
            continue
        if not 200 <= response.status_code < 300:
            problems.append(f"{label}: HTTP {response.status_code} {response.text[:300]!r}")
    return problems


def run(args: argparse.Namespace, workdir: Path, wrk: str) -> int:
    script = workdir / "webhook.lua"
    script.write_text(_LUA)
    generate = wrk_post(wrk, script)
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
            parts = urlsplit(args.database_url)
            database = f"PostgreSQL at {parts.hostname}, database {parts.path.lstrip('/')!r}"
        # bench.settings: the portal's migrations and the floor's (bench/migrations/).
        portal_migrate(environment)
        if args.database_url:
            portal_empty_webhook_tables(environment)
        _shell(environment, _EMPTY_FLOOR)
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
            print(f"Load: {wrk}, 1 thread, {args.connections} connections, Lua bodies.")
            print(
                "Background worker: processing during the receiver rounds, on the same CPUs."
                if args.worker == "during"
                else "Background worker: paused during the receiver rounds, processing after."
            )
            if problems := _check_answers(portal.url):
                print("\nFAILURES (one request to each URL, before any load):")
                for problem in problems:
                    print(f"  {problem}")
                return 1
            seconds = args.duration // args.rounds
            offset = 0
            # Warm-up, not counted: both workers import, connect and compile.
            for _label, path in PROBES:
                load = generate(f"{portal.url}{path}", 10_000_000 + offset, args.connections, 3)
                offset += load.requests + 100
            portal_wait_processed(environment, worker, timeout=600)
            warm_deliveries, warm_rows = _counts(environment)
            for round_number in range(args.rounds):
                turn = round_number % len(PROBES)
                for label, path in PROBES[turn:] + PROBES[:turn]:
                    # Watching for the worker's catch-up from the end of a receiver round;
                    # waiting for it before the next round, so that no round pays for
                    # the one before.
                    waiter = ProcessedWaiter(
                        environment, worker, not_before=time.time() + seconds, timeout=600
                    )
                    paused = args.worker == "after" and path == RECEIVER[1]
                    if paused:  # the worker waits for the round's end: the receiver alone
                        os.kill(worker.process.pid, signal.SIGSTOP)
                    try:
                        load = generate(f"{portal.url}{path}", offset, args.connections, seconds)
                    finally:
                        if paused:
                            os.kill(worker.process.pid, signal.SIGCONT)
                    ended = time.time()
                    offset += load.requests + 100
                    loads[path].append(load)
                    if path == RECEIVER[1]:
                        catch_ups.append(max(0.0, waiter.done_at() - ended))
                    else:
                        waiter.done_at()
                    if load.errors:
                        failures.append(f"{label}: {load.errors} failed requests")
        counts, rows = _counts(environment)
        _shell(environment, _EMPTY_FLOOR)
    stored = sum(counts.values()) - sum(warm_deliveries.values())
    answered = sum(load.requests for load in loads[RECEIVER[1]])
    floor_rows = rows - warm_rows
    floor_answered = sum(load.requests for load in loads[FLOOR[1]])
    report(loads, database)
    print(f"Load average at the end: {_load()} (other work on the machine moves req/s).")
    print(f"\nDeliveries stored during the rounds: {stored:,} for {answered:,} answered;")
    print(f"  by status, warm-up included: {counts}")
    print(f"Floor rows stored during the rounds: {floor_rows:,} for {floor_answered:,} answered.")
    receiving = sum(load.seconds for load in loads[RECEIVER[1]])
    end_to_end = answered / (receiving + sum(catch_ups)) if receiving else 0.0
    lags = ", ".join(f"{lag:.2f}" for lag in catch_ups)
    print(
        f"The worker processed the last delivery of each receiver round {lags} s after it "
        f"ended:\n  {end_to_end:.0f} deliveries/s stored and processed, catch-up included "
        f"({_share(end_to_end, loads[FLOOR[1]])} floor, {_share(end_to_end, loads[BARE[1]])} "
        "bare)."
    )
    if stored < answered:
        failures.append(f"{answered - stored} answered deliveries are not stored (lost)")
    if set(counts) - {"processed", "duplicate"}:
        failures.append(f"deliveries not processed: {counts}")
    if floor_rows < floor_answered:
        failures.append(f"{floor_answered - floor_rows} answered floor requests stored no row")
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


def _share(rate: float, baseline: Sequence[Load]) -> str:
    base = _rate(baseline)
    return f"{rate / base:.2f}x" if base else "n/a"


def report(loads: dict[str, list[Load]], database: str) -> None:
    floor, bare = _rate(loads[FLOOR[1]]), _rate(loads[BARE[1]])
    print(
        f"\n{'':46}{'req/s':>8}{'x floor':>9}{'x bare':>8}{'p50 ms':>8}{'p99 ms':>8}"
        "  rounds (req/s)"
    )
    for label, path in PROBES:
        rate = _rate(loads[path])
        rounds = ", ".join(f"{load.requests / load.seconds:.0f}" for load in loads[path])
        p50 = statistics.median(load.p50_ms for load in loads[path])
        p99 = max(load.p99_ms for load in loads[path])
        shares = f"{_share(rate, loads[FLOOR[1]]):>9}{_share(rate, loads[BARE[1]]):>8}"
        print(f"{label:46}{rate:>8.0f}{shares}{p50:>8.2f}{p99:>8.2f}  {rounds}")
    receiver = _rate(loads[RECEIVER[1]])
    ratio = receiver / floor if floor else 0.0
    verdict = "met" if ratio >= TARGET else "NOT met"
    print(
        f"\nHeadline, {database}: receiver / floor (one ORM INSERT) = "
        f"{receiver:.0f} / {floor:.0f} req/s = {ratio:.2f}x; "
        f"target >= {TARGET}x: {verdict} (a finding, not a failure)."
    )
    print(
        f"For information: receiver / bare = {_share(receiver, loads[BARE[1]])}, "
        f"floor / bare = {_share(floor, loads[BARE[1]])} (bare: {bare:.0f} req/s, stores nothing)."
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
        "--worker",
        choices=("during", "after"),
        default="after",
        help="when the background worker processes a receiver round's deliveries: 'after' "
        "it (paused with SIGSTOP meanwhile, the default): the receiver's own throughput "
        "against the floor's on the same terms, the catch-up reported apart; or 'during' the "
        "round, on the same CPUs, as in production: the receiver pays for the processing too",
    )
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
    wrk = ensure_wrk()
    if wrk is None:
        return 2
    return bench_main(lambda workdir: run(args, workdir, wrk))


if __name__ == "__main__":
    sys.exit(main())
