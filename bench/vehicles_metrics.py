"""The time the portal's metrics add to the vehicles page: a portal with them beside one without.

`python -m bench.vehicles --metrics [--size 10000] [--duration 36] [--rounds 6]` starts an
emulator of `--size` vehicles and two portals on it, in one run, alike but for the
metrics: gunicorn with the workers and threads of `bench.vehicles`, each portal with its
own copy of one SQLite database and its own Redis database (so that neither serves the
other's vehicle list):

- with metrics, as shipped and as in production: `bench.settings` (MetricsMiddleware
  first), PROMETHEUS_MULTIPROC_DIR a fresh folder (prometheus-client's multiprocess mode,
  as under deploy/), METRICS_TOKEN set, and `/metrics` scraped once a second while it is
  under load, as Prometheus would: what the scrapes cost is in its numbers;
- without: `bench.settings_without_metrics` (no MetricsMiddleware; the counters and
  histograms services count through are no-ops), neither variable set.

Each is checked (the whole fleet, fresh) and warmed; then the bare view and the warm
`/vehicles/` under the same `wrk` load, with and without back to back for each URL, the
order reversed every other round, so that each portal goes first in half the rounds; then
requests one at a time, alternating. It prints each portal's requests/s and server time
(gunicorn's `%(D)s`), the time the metrics add per request, and whether that is within
the target; it exits 1 if any request failed.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import shutil
import statistics
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import redis
import requests
from prometheus_client.parser import text_string_to_metric_families

from bench.access_log import ACCESS_LOG_FORMAT, AccessLog
from bench.load_generators import wrk_load
from bench.outcome import bench_counting_failures, load_average
from bench.portal_setup import portal_environment, portal_prepare
from bench.servers import (
    Server,
    ServerFailed,
    ensure_running,
    running_emulator,
    running_portal,
    upstream_session,
)
from bench.stats import percentile
from bench.vehicles import logged_in, shared_cache
from bench.vehicles_rounds import (
    BARE,
    CONNECTIONS,
    MODEL_SEARCH,
    PAGE,
    THREADS,
    TTL,
    WORKERS,
    Probe,
    SizeResult,
    Target,
    check_page,
    list_cars_calls,
    measure_load,
    served,
)
from bench.webhooks import ensure_wrk

SIZE = 10_000
REDIS_URL = "redis://127.0.0.1:6379/10"  # the portal without metrics takes the next database
TARGET = 0.05  # the most the metrics may add to a warm page's time per request
PROBES = (BARE, PAGE)
SCRAPE = Probe("/metrics", "/metrics")
WITH, WITHOUT = "with metrics", "without metrics"
# How the portal counts the page (portal.lib.metrics.middleware): GET /vehicles/ answered 200.
_COUNTER = "fleet_portal_http_requests_total"
_PAGE_LABELS = {"view": "fleet:vehicles", "method": "GET", "status": "200"}


@dataclass(slots=True)
class Scraper:
    """Prometheus' part: `GET /metrics` with the bearer token every `interval` seconds,
    from a thread of its own, while the portal with metrics is under load."""

    url: str
    token: str
    interval: float
    failures: Counter[str]
    times: list[float] = field(default_factory=list)  # ms, client side

    def scrape(self, session: requests.Session) -> str:
        """The metrics' text, or "" (a failure) when the answer is not them."""
        try:
            response = session.get(
                f"{self.url}/metrics",
                headers={"Authorization": f"Bearer {self.token}"},
                timeout=30,
            )
        except requests.RequestException as error:
            self.failures[f"/metrics: {type(error).__name__}"] += 1
            return ""
        if response.status_code != 200 or _COUNTER not in response.text:
            self.failures[f"/metrics: HTTP {response.status_code} or no request counted"] += 1
            return ""
        return response.text

    @contextmanager
    def during(self) -> Iterator[None]:
        """Scrape from now until the block ends: at once, then every `interval` seconds."""
        stop = threading.Event()

        def scrape_until_stopped() -> None:
            with requests.Session() as session:
                while True:
                    started = time.perf_counter()
                    if self.scrape(session):
                        self.times.append((time.perf_counter() - started) * 1000)
                    if stop.wait(max(0.0, self.interval - (time.perf_counter() - started))):
                        return

        thread = threading.Thread(target=scrape_until_stopped, daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()


@dataclass(slots=True)
class Side:
    """One of the two portals and what it served (its loads and server times by path)."""

    name: str
    target: Target
    result: SizeResult
    scraper: Scraper | None = None  # only the portal with metrics is scraped

    def scraped(self) -> contextlib.AbstractContextManager[None]:
        return self.scraper.during() if self.scraper is not None else contextlib.nullcontext()

    def rate(self, probe: Probe, round_number: int | None = None) -> float:
        """Requests/s for `probe`: over every round, or in one."""
        if round_number is None:
            return self.result.requests_per_second(probe)
        load = self.result.loads[probe.path][round_number]
        return load.requests / load.seconds if load.seconds else 0.0


@dataclass(frozen=True, slots=True)
class Checks:
    """What shows that the portal with metrics counted, in multiprocess mode."""

    counted: int  # GET /vehicles/ answered 200, in its last scrape
    logged: int  # the same in its access log
    files: int  # in PROMETHEUS_MULTIPROC_DIR
    scrapes: list[float]  # server ms of the scrapes under load (gunicorn's %(D)s)


# --- Measurements -----------------------------------------------------------------


def measure(args: argparse.Namespace, sides: Sequence[Side]) -> None:
    """Check and warm both portals, then the rounds under load, then one at a time."""
    for side in sides:
        for probe in PROBES:
            check_page(side.target, probe, side.result)
    for side in sides:  # every worker decodes the list and renders before anything is timed
        for probe in PROBES:
            side.target.generate(
                f"{side.target.portal.url}{probe.path}", side.target.cookie, args.connections, 1
            )
    calls = list_cars_calls(sides[0].target)
    # With and without back to back for each URL; the whole order reversed every other round.
    pairs = [(side, probe) for probe in PROBES for side in sides]
    for round_number in range(args.rounds):
        for side, probe in pairs if round_number % 2 == 0 else pairs[::-1]:
            with side.scraped():
                measure_load(
                    side.target,
                    probe,
                    side.result,
                    connections=args.connections,
                    seconds=args.duration // args.rounds,
                )
    starts = [side.target.log.end() for side in sides]
    for number in range(args.sequential):
        for side in sides if number % 2 == 0 else sides[::-1]:
            for probe in PROBES:
                response = side.target.browser.get(
                    f"{side.target.portal.url}{probe.path}", timeout=30
                )
                if response.status_code != 200:
                    side.target.failures[
                        f"{probe.label}, {side.name}: HTTP {response.status_code}"
                    ] += 1
    for side, start in zip(sides, starts, strict=True):
        for probe in PROBES:
            side.result.alone[probe.path] = [
                hit.micros / 1000 for hit in served(side.target, start, probe)
            ]
    if warm_calls := list_cars_calls(sides[0].target) - calls:
        sides[0].target.failures[f"{warm_calls} list-cars calls while warm"] += 1


def check_counted(side: Side, metrics_dir: Path) -> Checks:
    """One last scrape: the portal with metrics must have counted every page its access log
    shows (more is possible: a request cut off at the end of a load is counted, not logged)."""
    assert side.scraper is not None
    scrapes = [hit.micros / 1000 for hit in served(side.target, 0, SCRAPE)]
    logged = sum(
        1 for hit in side.target.log.since(0) if hit.target == PAGE.path and hit.status == 200
    )
    with requests.Session() as session:
        text = side.scraper.scrape(session)
    counted = sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == _COUNTER and _PAGE_LABELS.items() <= sample.labels.items()
    )
    checks = Checks(int(counted), logged, len(list(metrics_dir.glob("*.db"))), scrapes)
    if checks.counted < checks.logged:
        side.target.failures[
            f"{side.name}: counted {checks.counted:,} pages, its access log shows {logged:,}"
        ] += 1
    if not checks.files:
        side.target.failures["PROMETHEUS_MULTIPROC_DIR is empty: not in multiprocess mode"] += 1
    return checks


# --- Report -----------------------------------------------------------------------


def _ms(values: Sequence[float], fraction: float) -> float:
    return percentile(values, fraction) if values else float("nan")


def _added(with_metrics: float, without: float) -> str:
    """How much more `with_metrics` is than `without`, in %."""
    return f"{with_metrics / without - 1:+.1%}" if without else "-"


def report(args: argparse.Namespace, sides: Sequence[Side], checks: Checks) -> None:
    """The table, the checks and where the target lands."""
    with_metrics, without = sides
    names = f"{'req/s':>8}{'wrk p50':>8}{'server':>9}{'p99':>9}  "
    units = f"{'':8}{'ms':>8}{'p50 ms':>9}{'ms':>9}  "
    print(f"\n{'':26}{WITH + ' (scraped)':^34}  {WITHOUT:^34}  {'time the metrics add':^28}")
    print(f"{'warm, under load':26}{names * 2}{'req/s':>9}{'server':>9}{'alone':>10}")
    print(f"{'':26}{units * 2}{'':9}{'p50':>9}{'p50 ms':>10}")
    for probe in PROBES:
        row = f"{probe.label:26}"
        for side in sides:
            loads = side.result.loads.get(probe.path, [])
            client = statistics.median(load.p50_ms for load in loads) if loads else 0.0
            loaded = side.result.loaded.get(probe.path, [])
            row += (
                f"{side.rate(probe):>8.0f}{client:>8.2f}"
                f"{_ms(loaded, 0.5):>9.2f}{_ms(loaded, 0.99):>9.2f}  "
            )
        alone = [_ms(side.result.alone.get(probe.path, []), 0.5) for side in sides]
        loaded_p50 = [_ms(side.result.loaded.get(probe.path, []), 0.5) for side in sides]
        print(
            f"{row}{_added(without.rate(probe), with_metrics.rate(probe)):>9}"
            f"{_added(*loaded_p50):>9}{alone[0] - alone[1]:>+10.3f}"
        )
    print(
        "time the metrics add: req/s without over req/s with, less 1 (at saturation, the time "
        "a request takes); server p50 under load with over without, less 1; the difference "
        f"of the server p50s of {args.sequential} requests per URL sent one at a time."
    )
    for probe in PROBES:
        rounds = ", ".join(
            _added(without.rate(probe, number), with_metrics.rate(probe, number))
            for number in range(args.rounds)
        )
        print(f"  {probe.label}, round by round: {rounds}")
    scraper = with_metrics.scraper
    assert scraper is not None
    print(
        f"/metrics scraped {len(scraper.times)} times while the portal with metrics was under "
        f"load, every {args.scrape_interval:g} s: client p50 {_ms(scraper.times, 0.5):.1f} ms, "
        f"server p50 {_ms(checks.scrapes, 0.5):.1f} ms (it sums "
        f"{checks.files} files of PROMETHEUS_MULTIPROC_DIR and reads the backlog)."
    )
    print(
        f"The portal with metrics counted {checks.counted:,} GET /vehicles/ answered 200; its "
        f"access log shows {checks.logged:,}."
    )
    print(
        "Without metrics: no MetricsMiddleware, and portal.lib.metrics' counters and histograms "
        "(the vehicle list's cache counts a hit on every page) replaced by no-ops "
        "(bench/settings_without_metrics.py); no PROMETHEUS_MULTIPROC_DIR, no /metrics."
    )
    ratio = without.rate(PAGE) / with_metrics.rate(PAGE)
    print(
        f"\nTarget: the metrics add <= {TARGET:.0%} per request to the warm /vehicles/ "
        f"(req/s without / with, all rounds): {ratio:.3f}, {ratio - 1:+.1%} -> "
        f"{'met' if ratio - 1 <= TARGET else 'MISSED'}"
    )


# --- Main -------------------------------------------------------------------------


def _next_database(url: str) -> str:
    """`url` with the next Redis database number: the portal without metrics's cache."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{int(parts.path.strip('/') or 0) + 1}"))


def run(args: argparse.Namespace, workdir: Path, failures: Counter[str]) -> int:
    wrk = ensure_wrk()  # a Python client would take the CPU a few % are measured on
    if wrk is None:
        return 2
    with (
        running_emulator(workdir, "--vehicles", str(args.size), "--rate-limit", "0") as emulator,
        upstream_session() as upstream,
    ):
        base = portal_environment(database=workdir / "with.sqlite3", emulator_url=emulator.url) | {
            "DJANGO_SETTINGS_MODULE": "bench.settings",
            "FLEET_VEHICLES_TTL": str(TTL),
        }
        for name in ("PROMETHEUS_MULTIPROC_DIR", "METRICS_TOKEN"):
            base.pop(name, None)
        user = portal_prepare(base)
        shutil.copyfile(workdir / "with.sqlite3", workdir / "without.sqlite3")
        metrics_dir = workdir / "prometheus"
        metrics_dir.mkdir()
        token = secrets.token_urlsafe(32)
        environments = {
            WITH: base | {"PROMETHEUS_MULTIPROC_DIR": str(metrics_dir), "METRICS_TOKEN": token},
            WITHOUT: base
            | {
                "DJANGO_SETTINGS_MODULE": "bench.settings_without_metrics",
                "DATABASE_URL": f"sqlite:///{workdir / 'without.sqlite3'}",
            },
        }
        urls = {WITH: args.redis, WITHOUT: _next_database(args.redis)}
        caches = {name: shared_cache(url) for name, url in urls.items()}
        if all(cache is not None for cache in caches.values()):
            for name, cache in caches.items():
                assert cache is not None
                cache.flushdb()
                environments[name]["CACHE_URL"] = urls[name]
        try:
            with contextlib.ExitStack() as stack:
                sides = []
                for name, environment in environments.items():
                    folder = workdir / name.replace(" ", "-")
                    folder.mkdir()
                    portal = stack.enter_context(
                        running_portal(
                            environment,
                            folder,
                            workers=WORKERS,
                            threads=THREADS,
                            extra_args=[
                                f"--access-logfile={folder / 'access.log'}",
                                f"--access-logformat={ACCESS_LOG_FORMAT}",
                                "--reuse-port",  # as bench.vehicles: see its README section
                            ],
                        )
                    )
                    browser = stack.enter_context(logged_in(portal, user))
                    target = Target(
                        portal,
                        emulator,
                        AccessLog(folder / "access.log"),
                        browser,
                        upstream,
                        f"sessionid={browser.cookies['sessionid']}",
                        wrk_load(wrk),
                        failures,
                    )
                    # No search is measured here: the model search only fills a field.
                    sides.append(Side(name, target, SizeResult(args.size, MODEL_SEARCH)))
                sides[0].scraper = Scraper(
                    sides[0].target.portal.url, token, args.scrape_interval, failures
                )
                print_setup(args, [side.target.portal for side in sides], urls, caches, wrk)
                try:
                    measure(args, sides)
                    checks = check_counted(sides[0], metrics_dir)
                except requests.RequestException as error:
                    for side in sides:
                        ensure_running(side.target.portal)
                    raise ServerFailed(f"a request failed: {error}") from error
        finally:
            for cache in caches.values():
                if cache is not None:
                    with contextlib.suppress(redis.RedisError):
                        cache.flushdb()
    report(args, sides, checks)
    return 0


def print_setup(
    args: argparse.Namespace,
    portals: Sequence[Server],
    urls: dict[str, str],
    caches: dict[str, redis.Redis | None],
    wrk: str,
) -> None:
    shared = all(cache is not None for cache in caches.values())
    print(
        f"Two portals, gunicorn {WORKERS} workers x {THREADS} threads (gthread, --reuse-port), "
        f"each its own copy of one SQLite database, DEBUG=False, FLEET_VEHICLES_TTL={TTL} s, "
        f"on one emulator of {args.size:,} vehicles (--rate-limit 0):"
    )
    for portal, (name, url) in zip(portals, urls.items(), strict=True):
        cache = f"Redis {url}" if shared else "local memory"
        what = (
            "bench.settings as shipped (MetricsMiddleware first), PROMETHEUS_MULTIPROC_DIR a "
            f"fresh folder, METRICS_TOKEN set, /metrics scraped every {args.scrape_interval:g} s "
            "while under load"
            if name == WITH
            else "bench.settings_without_metrics (no MetricsMiddleware, portal.lib.metrics' "
            "counters no-ops), no PROMETHEUS_MULTIPROC_DIR"
        )
        print(f"  {name:16}{portal.url}: {what}; cache {cache}")
    if not shared:
        print(
            f"  LOCAL MEMORY: Redis at {urls[WITH]} or {urls[WITHOUT]} did not answer, so each "
            "worker has its own cache."
        )
    print(
        f"Load: {wrk}, 1 thread, {args.connections} connections, {args.rounds} round(s) of "
        f"{args.duration // args.rounds} s per URL and portal, with and without back to back "
        "for each URL, the order reversed every other round, after 1 s of warm-up each; then "
        f"{args.sequential} requests per URL and portal one at a time, alternating."
    )
    print(f"Machine: {os.cpu_count()} CPUs, load average {load_average()} at start.")


def parse_arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.vehicles --metrics",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--size", type=int, default=SIZE, help="vehicles (default 10000)")
    parser.add_argument(
        "--duration", type=int, default=36, help="seconds of load per URL and portal (36)"
    )
    parser.add_argument(
        "--rounds", type=int, default=6, help="rounds the duration is split into, even (6)"
    )
    parser.add_argument("--connections", type=int, default=CONNECTIONS, help="default 8")
    parser.add_argument(
        "--sequential", type=int, default=100, help="one at a time per URL and portal (100)"
    )
    parser.add_argument(
        "--scrape-interval", type=float, default=1.0, help="seconds between scrapes (1)"
    )
    parser.add_argument(
        "--redis",
        default=REDIS_URL,
        help=f"the cache of the portal with metrics (default {REDIS_URL}); the portal "
        "without takes the next database",
    )
    args = parser.parse_args(argv)
    if not 1 <= args.size <= 100_000:
        parser.error("--size must be 1 to 100,000")
    if args.rounds < 1 or args.duration < args.rounds or args.sequential < 1:
        parser.error("--rounds and --sequential at least 1, --duration at least --rounds")
    if args.scrape_interval <= 0:
        parser.error("--scrape-interval must be more than 0")
    parts = urlsplit(args.redis)
    if parts.hostname not in {"127.0.0.1", "localhost", "::1"}:
        parser.error("--redis must be on the loopback interface")
    if not (parts.path.strip("/") or "0").isdigit() or int(parts.path.strip("/") or 0) > 14:
        parser.error("--redis must name a database from 0 to 14 (the next is also used)")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_arguments(argv)
    return bench_counting_failures(
        lambda workdir, failures: run(args, workdir, failures),
        passed="every request answered 200 with the fleet expected",
    )


if __name__ == "__main__":
    sys.exit(main())
