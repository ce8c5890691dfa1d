"""The dashboard's server time at 10,000 and 100,000 fines against the bare view.

The portal runs under gunicorn (one worker, one thread: requests one at a time) on its
own SQLite database (or `--database-url`, a PostgreSQL on this machine), filled with
fines written straight into the table (as processing leaves them: amount, date,
vehicle, driver), then the dashboard's tallies recomputed from them
(`fine_tallies_rebuild`, as after any bulk load). For each size, rounds interleave:

- `bench/bare`: the floor of an authenticated page (same middleware and session check);
- `/`: the dashboard as a manager gets it: its figures from the cache while the
  tallies' version is the one they were read at, else read from the tallies;
- `/` after `bench/forget` emptied the cache: the figures always read from the tallies.

With `--writer`, a process of the portal's writes fines during the timed rounds: 5 new
ones a second (`--writer-rate`) and, with every fifth, a change to an earlier one, each
stored as the receiver stores a delivery and processed by the worker's function
(`bench/dashboard_writer.py`), so that the tallies change between most views. The
cache is each process's local memory, unless `--redis` names one that the portal and
the writer share, as in production: there the figures a write leaves ready
(`fine_figures_prepare`) are those the next dashboard finds.

Server time is gunicorn's `%(D)s` (microseconds, the whole request in the worker),
reported at the median and the 95th percentile. The goal: the dashboard's p95 at
100,000 fines within 3x the bare view's, with the writer running. At the end the
figures the dashboard reads, and those its page shows, must equal the sums computed
from scratch over the fines; the exit status is 1 if not.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from urllib.parse import urlsplit

import redis
import requests

from bench.portal_setup import (
    PortalUser,
    add_database_argument,
    portal_empty_webhook_tables,
    portal_environment,
    portal_log_in,
    portal_prepare,
)
from bench.servers import (
    LOOPBACK,
    ROOT,
    Server,
    ServerFailed,
    bench_main,
    free_port,
    portal_call,
    python_run,
    running_emulator,
    running_portal,
    stop,
)

TARGET_RATIO = 3.0
ACCESS_LOG_FORMAT = '%(s)s %(D)s "%(r)s"'
_ACCESS_LINE = re.compile(r'(\d{3}) (\d+) "GET (\S+) HTTP/[\d.]+"')
_SETTLE = 0.2  # seconds between rounds
_WRITER_FIRST_ID = 10_000_000  # the writer's fines, after any the fill writes

# Writes BENCH_COUNT fines after those there are, with ids from BENCH_START: 2,000
# vehicles (old and Mercosul plates), or those of the file BENCH_PLATES (one a line),
# 800 drivers, 14 months of dates, 40 % treated.
_FILL = """
import os, random
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from django.utils import timezone
from fleet.models import DriverBasis, Fine
from fleet import plates
rng = random.Random(int(os.environ["BENCH_START"]))
now = timezone.now()
vehicles = Path(os.environ["BENCH_PLATES"]).read_text().split() if os.environ.get(
    "BENCH_PLATES"
) else [
    f"{chr(65 + n % 26)}{chr(65 + n // 26 % 26)}{chr(65 + n // 676 % 26)}"
    + (f"{n % 10}{chr(65 + n % 7)}{n % 100:02d}" if n % 2 else f"{n % 10000:04d}")
    for n in range(2000)
]
drivers = {plate: 100 + rng.randrange(800) for plate in vehicles}
start, count = int(os.environ["BENCH_START"]), int(os.environ["BENCH_COUNT"])
batch = []
for number in range(start, start + count):
    plate = rng.choice(vehicles)
    received = now - timedelta(minutes=rng.randrange(60 * 24 * 30))
    amount = Decimal(rng.choice(["88.38", "130.16", "195.23", "293.47", "880.41", "1467.35"]))
    batch.append(Fine(
        key=f"id:{number}", external_id=str(number), treated=rng.random() < 0.4,
        payload={"id": number, "carPlate": plate, "amount": str(amount)},
        registration=plates.registration(plate), amount=amount,
        occurred_at=now - timedelta(days=rng.randrange(430)), driver_id=drivers[plate],
        driver_basis=DriverBasis.LIST,
        received_at=received, updated_at=received,
    ))
    if len(batch) == 5000:
        Fine.objects.bulk_create(batch)
        batch = []
Fine.objects.bulk_create(batch)
from fleet.services.tallies import fine_tallies_rebuild
fine_tallies_rebuild()  # fines written past the ORM's writers: their tallies from scratch
"""


@dataclass(slots=True)
class SizeResult:
    size: int
    bare: list[float] = field(default_factory=list)  # server ms
    warm: list[float] = field(default_factory=list)
    cold: list[float] = field(default_factory=list)
    written: dict[str, int] = field(default_factory=dict)  # by the writer, if any
    versions: int = 0  # how many times the tallies changed during the rounds


def fill(
    environment: dict[str, str], *, start: int, count: int, plates: Path | None = None
) -> float:
    """Write `count` fines (for the vehicles of the file `plates`, one a line, if given);
    the seconds it took."""
    began = time.perf_counter()
    python_run(
        ["manage.py", "shell", "-v", "0", "-c", _FILL],
        environment
        | {"BENCH_START": str(start), "BENCH_COUNT": str(count), "BENCH_PLATES": str(plates or "")},
        what="writing fines",
        timeout=3600,
    )
    return time.perf_counter() - began


def server_times(log: Path, offset: int, count: int) -> tuple[list[tuple[str, float]], int]:
    """(path, server ms) of the `count` requests logged first after `offset` (waiting
    until gunicorn has written them), and the offset after them."""
    deadline = time.monotonic() + 30
    while True:
        with log.open("rb") as lines:
            lines.seek(offset)
            data = lines.read()
        found, position = [], offset
        for line in data.splitlines(keepends=True):
            if not line.endswith(b"\n"):
                break  # being written
            position += len(line)
            match = _ACCESS_LINE.fullmatch(line.decode(errors="replace").strip())
            if match is None:
                continue
            if match[1] != "200":
                raise ServerFailed(f"{match[3]} answered {match[1]}")
            found.append((match[3], int(match[2]) / 1000))
            if len(found) == count:
                return found, position
        if time.monotonic() > deadline:
            raise ServerFailed(f"gunicorn logged {len(found)} of {count} requests")
        time.sleep(0.02)


def measure(
    portal: Server, log: Path, session: requests.Session, size: int, rounds: int
) -> SizeResult:
    result = SizeResult(size)
    offset = log.stat().st_size
    for path in ("/", "/bench/bare"):  # warm-up: connections, templates, translations
        for _ in range(5):
            session.get(f"{portal.url}{path}", timeout=60).raise_for_status()
    _warm_up, offset = server_times(log, offset, 10)
    for number in range(rounds):
        time.sleep(_SETTLE)  # the rounds' pace, as before the writer: about 4 a second
        probes = ["bare", "warm", "cold"]
        probes = probes[number % 3 :] + probes[: number % 3]  # the order rotates
        for probe in probes:
            if probe == "cold":
                session.get(f"{portal.url}/bench/forget", timeout=60).raise_for_status()
            path = "/bench/bare" if probe == "bare" else "/"
            session.get(f"{portal.url}{path}", timeout=60).raise_for_status()
        logged, offset = server_times(log, offset, len(probes) + 1)  # and bench/forget
        hits = [hit for hit in logged if hit[0] != "/bench/forget"]
        by_probe = dict(zip(probes, hits, strict=True))
        for probe, (_path, ms) in by_probe.items():
            getattr(result, probe).append(ms)
    return result


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[18]


def report(result: SizeResult) -> bool:
    """Print the size's rows; whether the dashboard's p95 is within the goal."""
    bare, bare95 = statistics.median(result.bare), p95(result.bare)
    print(f"\n{result.size:,} fines ({len(result.bare)} rounds; server time, ms)")
    if result.written:
        written = result.written
        print(
            f"  writer: {written['written']} new fines and {written['changed']} changes "
            f"during the rounds ({written['late']} behind its pace); the tallies changed "
            f"{result.versions} times"
        )
    print(f"  {'':34}{'median':>8}{'p95':>9}   {'median':>8}{'p95':>7}")
    print(f"  {'bare view (bench/bare)':34}{bare:>8.2f}{bare95:>9.2f}")
    for label, values in (
        ("dashboard", result.warm),
        ("dashboard, cache emptied", result.cold),
    ):
        median, high = statistics.median(values), p95(values)
        print(
            f"  {label:34}{median:>8.2f}{high:>9.2f}   {median / bare:>7.2f}x{high / bare95:>6.2f}x"
        )
    return p95(result.warm) / bare95 <= TARGET_RATIO


@contextmanager
def running_writer(
    environment: dict[str, str], workdir: Path, *, rate: float, first_id: int
) -> Iterator[dict[str, int]]:
    """`bench/dashboard_writer.py` writing fines while the block runs; what it wrote,
    filled in once it stopped."""
    stop_file = workdir / f"writer-{first_id}.stop"
    process = subprocess.Popen(
        [sys.executable, "-m", "bench.dashboard_writer", str(rate), str(stop_file), str(first_id)],
        cwd=ROOT,
        env=environment,
        stdout=subprocess.PIPE,
    )
    written: dict[str, int] = {}
    try:
        assert process.stdout is not None
        if process.stdout.readline().strip() != b"writing":
            raise ServerFailed("the writer did not start")
        yield written
        stop_file.touch()
        output, _errors = process.communicate(timeout=60)
        if process.returncode != 0:
            raise ServerFailed(f"the writer failed (exit {process.returncode})")
        written.update(json.loads(output.splitlines()[-1]))
    finally:
        stop(process)


def page_check(session: requests.Session, portal: Server, expected: tuple[int, str]) -> list[str]:
    """Whether the dashboard's page shows the untreated fines' count and R$ `expected`."""
    text = session.get(f"{portal.url}/", headers={"Accept-Language": "en"}, timeout=60).text
    count, amount = expected
    amount_shown = f'data-testid="untreated-amount">R$&nbsp;{Decimal(amount):,.2f}<'
    plural = "fine" if count == 1 else "fines"
    problems = []
    if amount_shown not in text:
        problems.append(f"the page does not show R$ {amount} untreated")
    if not any(f"in {shown} untreated {plural}" in text for shown in (count, f"{count:,}")):
        problems.append(f"the page does not show {count} untreated fines")
    return problems


def run(args: argparse.Namespace, workdir: Path) -> int:
    database = workdir / "portal.sqlite3"
    port = free_port()
    environment = portal_environment(
        database=database, emulator_url=f"http://{LOOPBACK}:{port}"
    ) | {"DJANGO_SETTINGS_MODULE": "bench.settings"}
    described = "SQLite (a temporary file, WAL)"
    if args.database_url:
        environment["DATABASE_URL"] = args.database_url
        described = f"PostgreSQL, database {args.database_url.rsplit('/', 1)[-1]!r}"
    cache = "the local memory of each process"
    if args.redis:
        redis.Redis.from_url(args.redis, socket_timeout=2, socket_connect_timeout=2).flushdb()
        environment["CACHE_URL"] = args.redis
        cache = f"Redis {args.redis}, shared (flushed at the start)"
    user: PortalUser = portal_prepare(environment)
    if args.database_url:
        portal_empty_webhook_tables(environment)
    log = workdir / "access.log"
    gunicorn_args = [f"--access-logfile={log}", f"--access-logformat={ACCESS_LOG_FORMAT}"]
    met = []
    problems: list[str] = []
    with (
        running_emulator(workdir, "--vehicles", "100", "--port", str(port)),
        running_portal(
            environment, workdir, workers=1, threads=1, extra_args=gunicorn_args
        ) as portal,
        requests.Session() as session,
    ):
        writer = f"a writer at {args.writer_rate:g} fines/s" if args.writer else "no writer"
        print(f"Portal: gunicorn 1 worker x 1 thread, {described}; the cache in {cache}; {writer}.")
        portal_log_in(session, portal.url, user)
        written = 0
        for size in args.sizes:
            seconds = fill(environment, start=written + 1, count=size - written)
            print(f"Wrote {size - written:,} fines in {seconds:.1f} s.")
            written = size
            if args.writer:
                before = portal_call(environment, "bench.dashboard_writer:tallies_version")
                first_id = _WRITER_FIRST_ID + size
                with running_writer(
                    environment, workdir, rate=args.writer_rate, first_id=first_id
                ) as wrote:
                    result = measure(portal, log, session, size, args.rounds)
                result.written = wrote
                after = portal_call(environment, "bench.dashboard_writer:tallies_version")
                result.versions = after - before
            else:
                result = measure(portal, log, session, size, args.rounds)
            met.append((size, report(result)))
        # Every write done: what the dashboard reads and shows, against the fines.
        problems = portal_call(environment, "bench.dashboard_writer:figures_check")
        untreated = portal_call(environment, "bench.dashboard_writer:untreated_total")
        problems += page_check(session, portal, (untreated[0], untreated[1]))
    print()
    for size, ok in met:
        verdict = "met" if ok else "NOT met"
        print(f"Goal at {size:,} fines: dashboard p95 <= {TARGET_RATIO:.0f}x bare p95: {verdict}")
    print(f"Load average at the end: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    if problems:
        print("\nFAILURES: the dashboard's figures are not the sums over the fines:")
        for problem in problems:
            print(f"  {problem}")
        return 1
    print("The dashboard's figures equal the sums computed from scratch over the fines.")
    return 0


def parse_arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.dashboard", description=__doc__)
    parser.add_argument(
        "--sizes",
        type=lambda text: sorted(int(part) for part in text.split(",")),
        default=[10_000, 100_000],
        help="numbers of fines, comma-separated (default 10000,100000)",
    )
    parser.add_argument("--rounds", type=int, default=30, help="rounds per size (default 30)")
    parser.add_argument("--writer", action="store_true", help="write fines during the timed rounds")
    parser.add_argument(
        "--writer-rate",
        type=float,
        default=5.0,
        help="new fines a second with --writer (default 5)",
    )
    add_database_argument(parser)
    parser.add_argument(
        "--redis",
        type=_loopback_redis,
        help="the cache in Redis (redis://127.0.0.1:6379/8, say: flushed), shared by the "
        "portal and the writer as in production; by default each process's local memory",
    )
    return parser.parse_args(argv)


def _loopback_redis(url: str) -> str:
    if urlsplit(url).hostname not in ("127.0.0.1", "localhost", "::1"):
        raise argparse.ArgumentTypeError("must be on the loopback interface")
    return url


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_arguments(argv)
    return bench_main(lambda workdir: run(args, workdir))


if __name__ == "__main__":
    sys.exit(main())
