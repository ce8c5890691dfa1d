"""The dashboard's server time at 10,000 and 100,000 fines against the bare view.

The portal runs under gunicorn (one worker, one thread: requests one at a time) on its
own SQLite database, filled with fines written straight into the table (as processing
leaves them: amount, date, vehicle, driver). For each size, rounds interleave:

- `bench/bare`: the floor of an authenticated page (same middleware and session check);
- `/` warm: the dashboard as a manager sees it most of the time, its money figures
  from the cache (the key is read from two index ends);
- `/` cold: the same right after `bench/forget` emptied the cache, so the figures are
  aggregated again over every fine (what the first visit after a fine arrives costs).

Server time is gunicorn's `%(D)s` (microseconds, the whole request in the worker).
The goal: the warm dashboard at 100,000 fines within 3x the bare view.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import requests

from bench.portal_setup import PortalUser, portal_environment, portal_log_in, portal_prepare
from bench.servers import (
    LOOPBACK,
    ROOT,
    Server,
    ServerFailed,
    bench_main,
    free_port,
    running_emulator,
    running_portal,
)

TARGET_RATIO = 3.0
ACCESS_LOG_FORMAT = '%(s)s %(D)s "%(r)s"'
_ACCESS_LINE = re.compile(r'(\d{3}) (\d+) "GET (\S+) HTTP/[\d.]+"')
_SETTLE = 0.2  # seconds for gunicorn to write its access log

# Writes BENCH_COUNT fines after those there are, with ids from BENCH_START: 2,000
# vehicles (old and Mercosul plates), 800 drivers, 14 months of dates, 40 % treated.
_FILL = """
import os, random
from datetime import timedelta
from decimal import Decimal
from django.utils import timezone
from fleet.models import Fine
from fleet import plates
rng = random.Random(int(os.environ["BENCH_START"]))
now = timezone.now()
vehicles = [
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
        received_at=received, updated_at=received,
    ))
    if len(batch) == 5000:
        Fine.objects.bulk_create(batch)
        batch = []
Fine.objects.bulk_create(batch)
"""


@dataclass(slots=True)
class SizeResult:
    size: int
    bare: list[float] = field(default_factory=list)  # server ms
    warm: list[float] = field(default_factory=list)
    cold: list[float] = field(default_factory=list)


def fill(environment: dict[str, str], *, start: int, count: int) -> float:
    """Write `count` fines; the seconds it took."""
    began = time.perf_counter()
    subprocess.run(
        [sys.executable, "manage.py", "shell", "-v", "0", "-c", _FILL],
        cwd=ROOT,
        env=environment | {"BENCH_START": str(start), "BENCH_COUNT": str(count)},
        check=True,
    )
    return time.perf_counter() - began


def server_times(log: Path, offset: int) -> list[tuple[str, float]]:
    """(path, server ms) of each request logged after `offset`."""
    time.sleep(_SETTLE)
    with log.open("rb") as lines:
        lines.seek(offset)
        text = lines.read().decode(errors="replace")
    found = []
    for match in map(_ACCESS_LINE.fullmatch, text.splitlines()):
        if match is None:
            continue
        if match[1] != "200":
            raise ServerFailed(f"{match[3]} answered {match[1]}")
        found.append((match[3], int(match[2]) / 1000))
    return found


def measure(
    portal: Server, log: Path, session: requests.Session, size: int, rounds: int
) -> SizeResult:
    result = SizeResult(size)
    for path in ("/", "/bench/bare"):  # warm-up: connections, templates, translations
        for _ in range(5):
            session.get(f"{portal.url}{path}", timeout=60).raise_for_status()
    for number in range(rounds):
        offset = log.stat().st_size
        probes = ["bare", "warm", "cold"]
        probes = probes[number % 3 :] + probes[: number % 3]  # the order rotates
        for probe in probes:
            if probe == "cold":
                session.get(f"{portal.url}/bench/forget", timeout=60).raise_for_status()
            path = "/bench/bare" if probe == "bare" else "/"
            session.get(f"{portal.url}{path}", timeout=60).raise_for_status()
        hits = [hit for hit in server_times(log, offset) if hit[0] != "/bench/forget"]
        by_probe = dict(zip(probes, hits, strict=True))
        for probe, (_path, ms) in by_probe.items():
            getattr(result, probe).append(ms)
    return result


def report(result: SizeResult) -> bool:
    bare = statistics.median(result.bare)
    warm = statistics.median(result.warm)
    cold = statistics.median(result.cold)
    print(f"\n{result.size:,} fines ({len(result.bare)} rounds; server time, median ms)")
    print(f"  {'bare view (bench/bare)':34}{bare:>8.2f}")
    print(f"  {'dashboard, figures cached':34}{warm:>8.2f}   = {warm / bare:.2f}x bare")
    print(f"  {'dashboard, figures computed':34}{cold:>8.2f}   = {cold / bare:.2f}x bare")
    return warm / bare <= TARGET_RATIO


def run(args: argparse.Namespace, workdir: Path) -> int:
    database = workdir / "portal.sqlite3"
    port = free_port()
    environment = portal_environment(
        database=database, emulator_url=f"http://{LOOPBACK}:{port}"
    ) | {"DJANGO_SETTINGS_MODULE": "bench.settings"}
    user: PortalUser = portal_prepare(environment)
    log = workdir / "access.log"
    gunicorn_args = [f"--access-logfile={log}", f"--access-logformat={ACCESS_LOG_FORMAT}"]
    met = []
    with (
        running_emulator(workdir, "--vehicles", "100", "--port", str(port)),
        running_portal(
            environment, workdir, workers=1, threads=1, extra_args=gunicorn_args
        ) as portal,
        requests.Session() as session,
    ):
        portal_log_in(session, portal.url, user)
        written = 0
        for size in args.sizes:
            seconds = fill(environment, start=written + 1, count=size - written)
            print(f"Wrote {size - written:,} fines in {seconds:.1f} s.")
            written = size
            result = measure(portal, log, session, size, args.rounds)
            met.append((size, report(result)))
    print()
    for size, ok in met:
        verdict = "met" if ok else "NOT met"
        print(f"Goal at {size:,} fines: dashboard (cached) <= {TARGET_RATIO:.0f}x bare: {verdict}")
    print(f"Load average at the end: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
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
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_arguments(argv)
    return bench_main(lambda workdir: run(args, workdir))


if __name__ == "__main__":
    sys.exit(main())
