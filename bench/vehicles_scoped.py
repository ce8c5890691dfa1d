"""The vehicles page, its plate search and the dashboard when users see their vehicle groups.

`python -m bench.vehicles --scoped [--vehicles 50000] [--fines 100000] [--duration 18]`
starts an emulator of `--vehicles` vehicles, files its plates (API order) into
`--groups` vehicle groups of `--group-size` (ORM rows written with the portal's settings,
`bench/vehicles_scoped_setup.py`), writes `--fines` fines over them as `bench.dashboard`
does, and logs three users in to one portal (gunicorn, Redis as the shared cache, SQLite):
the whole-fleet manager (`fleet.view_whole_fleet` given by hand, not staff: the baseline,
the page as unscoped users have it today), the scoped manager (member of the one group
holding the fleet's first vehicle) and a superuser (no permission query, staff).

Warm, as `bench.vehicles` measures (`wrk`, rounds whose order reverses, gunicorn's `%(D)s`
under load and one at a time): the bare view, `/vehicles/` and a plate search for each
user. Then plate searches nobody asked before (searched and rendered, one at a time), and
the dashboard `/` one request at a time against the bare view, its figures cached and
forgotten (`bench/forget-figures`). It prints the targets and where they land, and exits
1 if any request failed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import secrets
import shutil
import statistics
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import redis
import requests

from bench.access_log import ACCESS_LOG_FORMAT, AccessLog, Hit
from bench.dashboard import fill, page_check
from bench.load_generators import LoadGenerator, python_load, wrk_load
from bench.outcome import bench_counting_failures, load_average
from bench.portal_setup import PortalUser, portal_environment, portal_prepare
from bench.servers import (
    Server,
    ServerFailed,
    ensure_running,
    portal_call,
    running_emulator,
    running_portal,
    upstream_session,
)
from bench.stats import percentile
from bench.vehicles import logged_in, shared_cache
from bench.vehicles_report import SEARCH_TARGET_MS
from bench.vehicles_rounds import CONNECTIONS, THREADS, TTL, WORKERS, plate_fragment
from bench.vehicles_scoped_setup import SCOPED, SUPERUSER, USERNAMES, WHOLE
from bench.wrk import Load

REDIS_URL = "redis://127.0.0.1:6379/9"  # not bench.vehicles' database: both may run at once
PAGE_TARGET = 1.25  # times the baseline's cost (its requests/s over the page's)
DASHBOARD_TARGET = 3.0  # times the bare view's server time


@dataclass(frozen=True, slots=True)
class Probe:
    label: str
    path: str
    user: str  # whose session asks


@dataclass(slots=True)
class Result:
    bare: Probe
    pages: dict[str, Probe]  # `/vehicles/` by user
    searches: dict[str, Probe]  # a plate search by user
    expected: dict[str, int]  # vehicles each user sees
    matches: dict[Probe, int] = field(default_factory=dict)
    loads: dict[Probe, list[Load]] = field(default_factory=dict)
    loaded: dict[Probe, list[float]] = field(default_factory=dict)  # server ms under load
    alone: dict[Probe, list[float]] = field(default_factory=dict)  # server ms, one at a time
    new_searches: dict[str, list[float]] = field(default_factory=dict)  # by user, server ms
    dashboard: dict[str, list[float]] = field(default_factory=dict)  # by row, server ms

    @property
    def probes(self) -> tuple[Probe, ...]:
        return self.bare, *self.pages.values(), *self.searches.values()

    def baseline(self, probe: Probe) -> Probe:
        """The whole-fleet manager's request for the same URL."""
        return self.pages[WHOLE] if probe in self.pages.values() else self.searches[WHOLE]

    def requests_per_second(self, probe: Probe) -> float:
        loads = self.loads.get(probe, [])
        seconds = sum(load.seconds for load in loads)
        return sum(load.requests for load in loads) / seconds if seconds else 0.0

    def cost(self, probe: Probe, baseline: Probe) -> float:
        """How many times the baseline's cost `probe` has: its req/s over the probe's."""
        rate = self.requests_per_second(probe)
        return self.requests_per_second(baseline) / rate if rate else float("inf")


@dataclass(slots=True)
class Clients:
    portal: Server
    log: AccessLog
    sessions: dict[str, requests.Session]
    generate: LoadGenerator
    failures: Counter[str]

    def cookie(self, user: str) -> str:
        return f"sessionid={self.sessions[user].cookies['sessionid']}"

    def get(self, user: str, path: str) -> requests.Response:
        response = self.sessions[user].get(
            f"{self.portal.url}{path}", allow_redirects=False, timeout=60
        )
        if response.status_code != 200:
            self.failures[f"{path} ({user}): HTTP {response.status_code}"] += 1
        return response

    def served(self, start: int, path: str, label: str) -> list[Hit]:
        hits = [hit for hit in self.log.since(start) if hit.target == path]
        for status, count in Counter(h.status for h in hits if h.status != 200).items():
            self.failures[f"{label}: {count} x HTTP {status} in the access log"] += 1
        return hits


# --- Measurements -----------------------------------------------------------------


def check_pages(clients: Clients, result: Result) -> None:
    """One request per probe: 200, the vehicles its user sees counted, not stale."""
    for probe in result.probes:
        response = clients.get(probe.user, probe.path)
        if response.status_code != 200 or probe.path.startswith("/bench/"):
            continue
        counted = re.search(r'data-testid="result-count">(.*?)</p>', response.text, re.DOTALL)
        numbers = [int(n) for n in re.findall(r"\d+", counted[1])] if counted else []
        expected = result.expected[probe.user]
        if len(numbers) < 2 or numbers[1] != expected or "stale-notice" in response.text:
            clients.failures[f"{probe.label}: not the fresh {expected:,} vehicles"] += 1
        elif "?q=" in probe.path:
            result.matches[probe] = numbers[0]


def measure_warm(clients: Clients, result: Result, args: argparse.Namespace) -> None:
    """Each probe under the same load in turn, rounds reversed every other one; then
    `--sequential` requests per probe one at a time."""
    url, connections = clients.portal.url, args.connections
    rounds, seconds = args.rounds, args.duration // args.rounds
    for probe in result.probes:  # every worker decodes the list and renders before timing
        clients.generate(f"{url}{probe.path}", clients.cookie(probe.user), connections, 1)
    for number in range(rounds):
        for probe in result.probes if number % 2 == 0 else result.probes[::-1]:
            start = clients.log.end()
            load = clients.generate(
                f"{url}{probe.path}", clients.cookie(probe.user), connections, seconds
            )
            hits = clients.served(start, probe.path, probe.label)
            result.loads.setdefault(probe, []).append(load)
            result.loaded.setdefault(probe, []).extend(h.micros / 1000 for h in hits)
            if load.errors:
                clients.failures[f"{probe.label}: {load.errors} failed under load"] += 1
    for probe in result.probes:
        start = clients.log.end()
        for _ in range(args.sequential):
            clients.get(probe.user, probe.path)
        hits = clients.served(start, probe.path, probe.label)
        result.alone[probe] = [h.micros / 1000 for h in hits]


def measure_new_searches(clients: Clients, result: Result, fragments: dict[str, list[str]]) -> None:
    """Plate searches nobody asked before, one at a time: the search and render are paid."""
    for user, queries in fragments.items():
        start = clients.log.end()
        for query in queries:
            clients.get(user, f"/vehicles/?q={query}")
        hits = [h for h in clients.log.since(start) if h.target.startswith("/vehicles/?q=")]
        if len(hits) != len(queries) or any(h.status != 200 for h in hits):
            clients.failures[f"new searches ({user}): not {len(queries)} answers of 200"] += 1
        result.new_searches[user] = [h.micros / 1000 for h in hits]


def measure_dashboard(
    clients: Clients, result: Result, user: str, rows: Sequence[str], rounds: int
) -> None:
    """`rows` of the dashboard and the bare view, one request at a time over the user's
    one connection (so the access log lists them in order), the order rotating."""
    paths = {"bare": "/bench/bare", "dashboard": "/", "figures forgotten": "/"}
    for path in ("/", "/bench/bare"):  # warm-up: connection, templates, figures
        for _ in range(5):
            clients.get(user, path)
    start = clients.log.end()
    asked: list[tuple[str, str]] = []
    for number in range(rounds):
        for row in [*rows[number % len(rows) :], *rows[: number % len(rows)]]:
            if row == "figures forgotten":
                clients.get(user, "/bench/forget-figures")
                asked.append(("", "/bench/forget-figures"))
            clients.get(user, paths[row])
            asked.append((row, paths[row]))
    hits = clients.log.since(start)
    if [h.target for h in hits] != [path for _row, path in asked]:
        clients.failures[f"dashboard ({user}): the access log is not the requests in order"] += 1
        return
    for (row, _path), hit in zip(asked, hits, strict=True):
        if row:
            result.dashboard.setdefault(f"{row} ({user})", []).append(hit.micros / 1000)


# --- Report -----------------------------------------------------------------------


def _p(values: Sequence[float], fraction: float) -> str:
    return f"{percentile(values, fraction):.2f}" if values else "-"


def _verdict(met: bool) -> str:
    return "met" if met else "MISSED"


def report(result: Result) -> None:
    print(
        f"\n{'':44}{'client, under load':^40}  {'server ms (%D)':^30}\n"
        f"{'warm':44}{'req/s':>8}{'x bare':>8}{'cost x':>8}{'p50 ms':>8}{'p99 ms':>8}  "
        f"{'load p50':>9}{'p99':>7}{'alone p50':>10}{'p99':>7}"
    )
    for probe in result.probes:
        loads = result.loads.get(probe, [])
        p50 = statistics.median(load.p50_ms for load in loads) if loads else 0.0
        p99 = max((load.p99_ms for load in loads), default=0.0)
        found = f" ({result.matches[probe]:,} found)" if probe in result.matches else ""
        print(
            f"{probe.label + found:44}{result.requests_per_second(probe):>8.0f}"
            f"{1 / result.cost(probe, result.bare):>8.2f}"
            f"{result.cost(probe, result.baseline(probe)):>8.2f}"
            f"{p50:>8.2f}{p99:>8.2f}  {_p(result.loaded.get(probe, []), 0.5):>9}"
            f"{_p(result.loaded.get(probe, []), 0.99):>7}"
            f"{_p(result.alone.get(probe, []), 0.5):>10}{_p(result.alone.get(probe, []), 0.99):>7}"
        )
    print(
        "x bare: req/s over the bare view's. cost x: the whole-fleet manager's req/s for the "
        "same URL over the row's (how many times its cost)."
    )
    print(f"\n{'new plate searches, one at a time':44}{'count':>8}{'p50':>8}{'p95':>8}{'max':>8}")
    for user, times in result.new_searches.items():
        print(
            f"{'  ' + user:44}{len(times):>8}{_p(times, 0.5):>8}{_p(times, 0.95):>8}"
            f"{_p(times, 1.0):>8}"
        )
    print(
        f"\n{'dashboard, one at a time, server ms':44}{'count':>8}{'p50':>8}{'p95':>8}"
        f"{'x bare p50':>12}{'p95':>7}"
    )
    for row, times in result.dashboard.items():
        bare = result.dashboard[f"bare ({row.partition('(')[2]}"]
        print(
            f"{'  ' + row:44}{len(times):>8}{_p(times, 0.5):>8}{_p(times, 0.95):>8}"
            f"{_median(times) / _median(bare):>11.2f}x"
            f"{percentile(times, 0.95) / percentile(bare, 0.95):>6.2f}x"
        )
    report_targets(result)


def report_targets(result: Result) -> None:
    print("\nTargets: landed at")
    whole, scoped, superuser = (result.pages[user] for user in (WHOLE, SCOPED, SUPERUSER))
    for probe, baseline in ((scoped, whole), (whole, superuser)):
        cost = result.cost(probe, baseline)
        alone = _median(result.alone[probe]) / _median(result.alone[baseline])
        print(
            f"  {probe.label} <= {PAGE_TARGET}x the {baseline.user}'s: {cost:.2f}x in req/s "
            f"-> {_verdict(cost <= PAGE_TARGET)} ({alone:.2f}x in server p50 alone)"
        )
    for user, probe in result.searches.items():
        alone, loaded = _median(result.alone[probe]), _median(result.loaded[probe])
        new = _median(result.new_searches.get(user, []))
        worst = max(alone, loaded, new)
        print(
            f"  search server p50 < {SEARCH_TARGET_MS:.0f} ms, {user}: {probe.path} {alone:.2f} "
            f"ms alone, {loaded:.2f} ms under load; new queries {new:.2f} ms "
            f"-> {_verdict(worst < SEARCH_TARGET_MS)}"
        )
    bare = result.dashboard.get(f"bare ({SCOPED})", [])
    times = result.dashboard.get(f"dashboard ({SCOPED})", [])
    if bare and times:
        median = _median(times) / _median(bare)
        high = percentile(times, 0.95) / percentile(bare, 0.95)
        print(
            f"  scoped dashboard <= {DASHBOARD_TARGET:.0f}x bare, server time: p95 {high:.2f}x "
            f"-> {_verdict(high <= DASHBOARD_TARGET)} (bench.dashboard's measure); p50 "
            f"{median:.2f}x -> {_verdict(median <= DASHBOARD_TARGET)}"
        )


def _median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


# --- Main -------------------------------------------------------------------------


def portal_fill(
    args: argparse.Namespace, environment: dict[str, str], listed: list[str], workdir: Path
) -> tuple[dict[str, PortalUser], dict[str, Any]]:
    """The portal's database: migrated, the users, the groups of `listed`, the fines."""
    users = {WHOLE: portal_prepare(environment)} | {
        user: PortalUser(USERNAMES[user], secrets.token_urlsafe(16)) for user in (SCOPED, SUPERUSER)
    }
    plates_file = workdir / "plates.txt"
    plates_file.write_text("\n".join(listed))
    passwords = {user: users[user].password for user in (SCOPED, SUPERUSER)}
    made: dict[str, Any] = portal_call(
        environment
        | {
            "BENCH_PLATES": str(plates_file),
            "BENCH_GROUPS": str(args.groups),
            "BENCH_GROUP_SIZE": str(args.group_size),
            "BENCH_PASSWORDS": json.dumps(passwords),
        },
        "bench.vehicles_scoped_setup:scoped_setup",
    )
    seconds = fill(environment, start=1, count=args.fines, plates=plates_file)
    print(
        f"Fleet of {len(listed):,} vehicles (emulator --vehicles {args.vehicles}); "
        f"{made['grouped']:,} of them in {args.groups} groups of {args.group_size}; the "
        f"scoped manager in {made['group']!r} ({made['in_group']} vehicles). {args.fines:,} "
        f"fines over the fleet written in {seconds:.0f} s (bench.dashboard's fill: rows, then "
        "the tallies rebuilt)."
    )
    return users, made


def run(args: argparse.Namespace, workdir: Path, failures: Counter[str]) -> int:
    wrk = shutil.which("wrk")
    with (
        running_emulator(
            workdir, "--vehicles", str(args.vehicles), "--rate-limit", "0"
        ) as emulator,
        upstream_session() as upstream,
    ):
        answer = upstream.get(f"{emulator.url}/key/list-cars", timeout=60)
        answer.raise_for_status()
        listed = [car["car_plate"] for car in answer.json()["cars"]["data"]]
        environment = portal_environment(
            database=workdir / "portal.sqlite3", emulator_url=emulator.url
        ) | {"DJANGO_SETTINGS_MODULE": "bench.settings", "FLEET_VEHICLES_TTL": str(TTL)}
        shared = shared_cache(args.redis)
        if shared is not None:
            shared.flushdb()
            environment["CACHE_URL"] = args.redis
        users, made = portal_fill(args, environment, listed, workdir)
        query = plate_fragment(listed[0])  # the first vehicle is in the scoped group
        in_order = (WHOLE, SCOPED, SUPERUSER)
        result = Result(
            Probe("bare view (bench/bare)", "/bench/bare", WHOLE),
            {u: Probe(f"/vehicles/, {u}", "/vehicles/", u) for u in in_order},
            {u: Probe(f"?q={query}, {u}", f"/vehicles/?q={query}", u) for u in in_order},
            {WHOLE: len(listed), SCOPED: made["in_group"], SUPERUSER: len(listed)},
        )
        # Queries nobody asked before: starts of the scoped group's plates, others for each.
        group = dict.fromkeys(map(plate_fragment, listed[: args.group_size]))
        fragments = [fragment for fragment in group if fragment != query]
        new = {user: fragments[n::3][: args.searches] for n, user in enumerate(in_order)}
        access_log = workdir / "access.log"
        gunicorn_args = [
            f"--access-logfile={access_log}",
            f"--access-logformat={ACCESS_LOG_FORMAT}",
            "--reuse-port",
        ]
        with (
            running_portal(
                environment, workdir, workers=WORKERS, threads=THREADS, extra_args=gunicorn_args
            ) as portal,
            contextlib.ExitStack() as stack,
        ):
            sessions = {u: stack.enter_context(logged_in(portal, users[u])) for u in users}
            generate = wrk_load(wrk) if wrk else python_load
            clients = Clients(portal, AccessLog(access_log), sessions, generate, failures)
            print_setup(args, portal, shared is not None, wrk)
            try:
                calls = _list_cars_calls(upstream, emulator)
                measure(args, clients, result, new)
                # The first page fetches the list: once, or once per worker without Redis.
                fetched = _list_cars_calls(upstream, emulator) - calls
                if fetched > (1 if shared is not None else WORKERS):
                    failures[f"{fetched} list-cars calls: the list was fetched again"] += 1
                untreated = portal_call(environment, "bench.vehicles_scoped_setup:scoped_untreated")
                shown = page_check(sessions[SCOPED], portal, (untreated[0], untreated[1]))
                failures.update(f"scoped dashboard: {problem}" for problem in shown)
            except requests.RequestException as error:
                ensure_running(portal)
                raise ServerFailed(f"a request failed: {error}") from error
            finally:
                if shared is not None:
                    with contextlib.suppress(redis.RedisError):
                        shared.flushdb()
    print(f"Scoped dashboard: {untreated[0]:,} untreated fines, R$ {untreated[1]}, as it shows.")
    report(result)
    return 0


def measure(
    args: argparse.Namespace, clients: Clients, result: Result, new: dict[str, list[str]]
) -> None:
    check_pages(clients, result)
    measure_warm(clients, result, args)
    measure_new_searches(clients, result, new)
    rows = ("bare", "dashboard", "figures forgotten")
    measure_dashboard(clients, result, SCOPED, rows, args.dashboard_rounds)
    measure_dashboard(clients, result, WHOLE, rows[:2], args.dashboard_rounds)


def _list_cars_calls(upstream: requests.Session, emulator: Server) -> int:
    response = upstream.get(f"{emulator.url}/_emulator/stats", timeout=10)
    response.raise_for_status()
    return int(response.json()["calls"].get("GET /key/list-cars", 0))


def print_setup(args: argparse.Namespace, portal: Server, shared: bool, wrk: str | None) -> None:
    cache = f"Redis {args.redis} (flushed)" if shared else "LOCAL MEMORY: Redis did not answer"
    load = f"{wrk}, 1 thread" if wrk else "WARNING: no wrk, a Python client (ratios compressed)"
    print(
        f"Portal at {portal.url}: gunicorn {WORKERS} workers x {THREADS} threads (--reuse-port), "
        f"SQLite, DEBUG=False; cache: {cache}. Load: {load}, {args.connections} connections, "
        f"{args.rounds} round(s) of {args.duration // args.rounds} s per URL after 1 s of "
        f"warm-up; then {args.sequential} requests per URL one at a time, {args.searches} new "
        f"plate searches per user, {args.dashboard_rounds} dashboard rounds per user. "
        f"Machine: {os.cpu_count()} CPUs, load average {load_average()} at start."
    )


def parse_arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.vehicles --scoped",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--vehicles", type=int, default=50_000, help="default 50000")
    parser.add_argument("--groups", type=int, default=200, help="default 200")
    parser.add_argument("--group-size", type=int, default=250, help="default 250")
    parser.add_argument("--fines", type=int, default=100_000, help="default 100000")
    parser.add_argument("--duration", type=int, default=18, help="seconds of load per URL (18)")
    parser.add_argument("--rounds", type=int, default=3, help="default 3")
    parser.add_argument("--connections", type=int, default=CONNECTIONS, help="default 8")
    parser.add_argument("--sequential", type=int, default=50, help="one at a time per URL (50)")
    parser.add_argument("--searches", type=int, default=40, help="new searches per user (40)")
    parser.add_argument("--dashboard-rounds", type=int, default=30, help="default 30")
    parser.add_argument("--redis", default=REDIS_URL, help=f"default {REDIS_URL}")
    args = parser.parse_args(argv)
    if not 1 <= args.group_size * args.groups <= args.vehicles <= 100_000:
        parser.error("--groups x --group-size must fit in --vehicles (at most 100,000)")
    if args.rounds < 1 or args.duration < args.rounds or min(args.sequential, args.searches) < 1:
        parser.error("--rounds, --sequential and --searches at least 1, --duration >= --rounds")
    if urlsplit(args.redis).hostname not in {"127.0.0.1", "localhost", "::1"}:
        parser.error("--redis must be on the loopback interface")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_arguments(argv)
    return bench_counting_failures(
        lambda workdir, failures: run(args, workdir, failures),
        passed="every request answered 200 with the vehicles and figures expected",
    )


if __name__ == "__main__":
    sys.exit(main())
