"""Starting and listing a 100,000-vehicle fleet, and importing 50,000 plates into groups.

`python -m bench.listing [--repeat N] [--vehicles N]` times, in each of N rounds, each
thing beside its baseline in the same round (their order alternating from round to round):

- the start-up of `python -m emulator --vehicles 100000 --seed 3` (from the spawn to the
  line that says where it listens), against that of a 200-vehicle emulator; then, on
  each, the first and a second `GET /key/list-cars` (the answer is serialised once and
  kept: the second is about the transfer alone). The same again with `--minimal
  --spelling-seed 3`, where the first request serialises the answer;
- `FleetClient.list_vehicle_columns()` against the big emulator, against a plain
  `requests.get` of the same URL with the same headers and `json.loads` of its body;
- `manage.py vehicle_groups import` of 50,000 plates into 200 groups, on a fresh SQLite
  database, against a process that only creates the groups and `bulk_create`s the same
  50,000 rows in batches of 1,000 on another. Both are wall times of a whole process,
  Django's start-up included.

It prints the median of each, the median of its baseline and their ratio. It reports and
does not judge: it exits 0, 1 if something failed (listed under FAILURES), 2 if a server
did not start, 130 when interrupted.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import requests

from bench.outcome import bench_counting_failures, load_average
from bench.portal_setup import portal_environment, portal_migrate
from bench.servers import (
    DEMO_ACCESS_TOKEN,
    DEMO_SECRET_KEY,
    LOOPBACK,
    ROOT,
    ServerFailed,
    log_tail,
    running_emulator,
    stop,
    upstream_headers,
)
from fleet.api.client import FleetClient
from fleet.api.errors import FleetError

SMALL = 200
SEED = "3"
SPELLING_SEED = "3"
PLATES = 50_000
GROUPS = 200
BATCH = 1_000
# The invalid plates of the import's file go after these many valid plates.
PLANTED_AFTER = (0, 7, 4_999, 10_000, 17_321, 25_000, 31_415, 40_404, 49_998, 50_000)
LIST_CARS = "/key/list-cars"
_LISTENING = re.compile(r"listening on (http://\S+)")

# The baseline of the import, in a Django process of the portal's: the groups and the
# valid rows of the file (argv[1]), written with `bulk_create` in batches of argv[2].
_BULK_CREATE = """
import sys
from itertools import batched
import django
django.setup()
from django.db import transaction
from fleet import plates
from fleet.models import VehicleGroup, VehicleGroupPlate
with open(sys.argv[1], encoding="utf-8") as file:
    rows = [line.split(",") for line in file.read().splitlines()[1:]]
valid = [(plates.registration(text), group) for text, group in rows if plates.is_valid(text)]
with transaction.atomic():
    names = dict.fromkeys(group for _registration, group in valid)
    VehicleGroup.objects.bulk_create([VehicleGroup(name=name) for name in names])
    by_name = dict(VehicleGroup.objects.values_list("name", "pk"))
    for batch in batched(valid, int(sys.argv[2])):
        VehicleGroupPlate.objects.bulk_create(
            [VehicleGroupPlate(group_id=by_name[group], registration=r) for r, group in batch]
        )
print(VehicleGroupPlate.objects.count())
"""

# What is timed per round, by key: seconds. Each row of the table is a key and its baseline.
type Timings = dict[str, list[float]]


@dataclass(frozen=True, slots=True)
class Row:
    what: str
    key: str
    baseline: str
    baseline_key: str


ROWS = (
    Row("emulator start-up", "start", f"{SMALL} vehicles", "start-small"),
    Row(f"GET {LIST_CARS}, first", "first", f"{SMALL} vehicles", "first-small"),
    Row(f"GET {LIST_CARS}, second", "second", f"{SMALL} vehicles", "second-small"),
    Row(
        "--minimal: emulator start-up", "minimal-start", f"{SMALL} vehicles", "minimal-start-small"
    ),
    Row(
        f"--minimal: GET {LIST_CARS}, first",
        "minimal-first",
        f"{SMALL} vehicles",
        "minimal-first-small",
    ),
    Row(
        f"--minimal: GET {LIST_CARS}, second",
        "minimal-second",
        f"{SMALL} vehicles",
        "minimal-second-small",
    ),
    Row("FleetClient.list_vehicle_columns()", "client", "requests.get + json.loads", "plain"),
    Row("manage.py vehicle_groups import", "import", "bulk_create by 1,000", "bulk-create"),
)


@contextmanager
def timed_emulator(workdir: Path, vehicles: int, *args: str) -> Iterator[tuple[str, float]]:
    """An emulator of `vehicles`: its URL, and the seconds from its spawn to its first line,
    which it prints once its fleet is built and its socket listens."""
    log = workdir / f"emulator-{vehicles}.log"
    command = [sys.executable, "-m", "emulator", "--host", LOOPBACK, "--port", "0"]
    with log.open("wb") as errors:
        started = time.perf_counter()
        process = subprocess.Popen(
            [*command, "--vehicles", str(vehicles), "--seed", SEED, *args],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=errors,
        )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().decode(errors="replace")
        elapsed = time.perf_counter() - started
        if not (match := _LISTENING.search(line)):
            process.kill()
            process.wait()
            raise ServerFailed(f"the emulator did not start: {line!r}\n{log_tail(log)}")
        yield match.group(1), elapsed
    finally:
        stop(process)
        if process.stdout is not None:
            process.stdout.close()


def list_cars(url: str) -> tuple[float, bytes]:
    """Seconds of one `GET /key/list-cars` on a new connection, and its body."""
    started = time.perf_counter()
    response = requests.get(f"{url}{LIST_CARS}", headers=upstream_headers(), timeout=60)
    elapsed = time.perf_counter() - started
    if response.status_code != 200:
        raise ServerFailed(f"GET {LIST_CARS}: HTTP {response.status_code}")
    return elapsed, response.content


def measure_emulators(
    workdir: Path, vehicles: int, timings: Timings, *, minimal: bool, small_first: bool
) -> None:
    """Start-up and two listings of each emulator, the small one first or second."""
    prefix = "minimal-" if minimal else ""
    args = ("--minimal", "--spelling-seed", SPELLING_SEED) if minimal else ()
    sizes = [(SMALL, "-small"), (vehicles, "")]
    for size, suffix in sizes if small_first else reversed(sizes):
        with timed_emulator(workdir, size, *args) as (url, start_up):
            first, body = list_cars(url)
            second, again = list_cars(url)
            if again != body:
                raise ServerFailed(f"a second GET {LIST_CARS} answered other bytes")
            for name, seconds in (("start", start_up), ("first", first), ("second", second)):
                timings.setdefault(f"{prefix}{name}{suffix}", []).append(seconds)
            if not minimal and size == vehicles:
                measure_client(url, vehicles, timings, plain_first=small_first)


def measure_client(url: str, vehicles: int, timings: Timings, *, plain_first: bool) -> None:
    """The portal's client reading the fleet column by column, and the plain baseline."""

    def plain() -> int:
        response = requests.get(f"{url}{LIST_CARS}", headers=upstream_headers(), timeout=60)
        response.raise_for_status()
        total: int = json.loads(response.content)["cars"]["total"]
        return total

    def client() -> int:
        with FleetClient(
            base_url=url,
            access_token=DEMO_ACCESS_TOKEN,
            secret_key=DEMO_SECRET_KEY,
            read_timeout=30,
        ) as fleet:
            columns = fleet.list_vehicle_columns()
        return columns.total if len(columns) == columns.total else -1

    probes: list[tuple[str, Callable[[], int]]] = [("plain", plain), ("client", client)]
    for key, probe in probes if plain_first else reversed(probes):
        started = time.perf_counter()
        total = probe()
        elapsed = time.perf_counter() - started
        if total != vehicles:
            raise ServerFailed(f"{key}: {total} vehicles read of {vehicles}")
        timings.setdefault(key, []).append(elapsed)


def plate(number: int) -> str:
    """The `number`th plate: even ones old (`ABC-1234`), odd ones Mercosul (`ABC1K23`), no
    two of them one vehicle (a Mercosul plate here never has A to J as its fifth letter)."""
    letters = "".join(chr(ord("A") + number // 26**power % 26) for power in (2, 1, 0))
    digits = f"{number % 10_000:04d}"
    if number % 2 == 0:
        return f"{letters}-{digits}" if number % 4 == 0 else f"{letters.lower()}{digits}"
    return f"{letters}{digits[0]}{chr(ord('K') + int(digits[1]))}{digits[2:]}"


def plates_csv(path: Path) -> None:
    """An operator's `plate,group` file: 50,000 plates in 200 groups, and 10 invalid lines."""
    lines = ["plate,group"]
    for number in range(PLATES + 1):
        if number in PLANTED_AFTER:
            planted = PLANTED_AFTER.index(number)
            lines.append(f"ZZ{planted}-0000,Grupo {planted:03d}")
        if number < PLATES:
            lines.append(f"{plate(number)},Grupo {number % GROUPS:03d}")
    path.write_text("\n".join(lines) + "\n")


def django_process(
    args: list[str], environment: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """`python ARGS` with the portal's environment, run to its end."""
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )


def measure_import(
    environment: dict[str, str], template: Path, csv: Path, timings: Timings, *, import_first: bool
) -> None:
    """The import command and the baseline, each a process on a copy of the empty database."""
    database = Path(environment["DATABASE_URL"].removeprefix("sqlite:///"))

    def command() -> None:
        completed = django_process(["manage.py", "vehicle_groups", "import", str(csv)], environment)
        output = completed.stdout
        if completed.returncode != 0 or f"Plates added: {PLATES}\n" not in output:
            raise ServerFailed(f"the import failed:\n{log_tail(output + completed.stderr)}")
        if f"Lines refused: {len(PLANTED_AFTER)}\n" not in output:
            raise ServerFailed(f"the import refused other lines:\n{log_tail(output)}")

    def baseline() -> None:
        completed = django_process(["-c", _BULK_CREATE, str(csv), str(BATCH)], environment)
        written = completed.stdout.strip()
        if completed.returncode != 0 or written != str(PLATES):
            raise ServerFailed(
                f"the bulk_create baseline wrote {written or 'no'} rows of {PLATES}:\n"
                f"{log_tail(completed.stderr)}"
            )

    probes: list[tuple[str, Callable[[], None]]] = [("import", command), ("bulk-create", baseline)]
    for key, probe in probes if import_first else reversed(probes):
        shutil.copyfile(template, database)
        started = time.perf_counter()
        probe()
        timings.setdefault(key, []).append(time.perf_counter() - started)


def report(timings: Timings) -> None:
    print(f"\n{'what':38}{'median s':>10}  {'baseline':26}{'median s':>10}{'ratio':>9}")
    for row in ROWS:
        measured, baseline = timings.get(row.key), timings.get(row.baseline_key)
        if not measured or not baseline:
            continue
        median, baseline_median = statistics.median(measured), statistics.median(baseline)
        print(
            f"{row.what:38}{median:>10.4f}  {row.baseline:26}{baseline_median:>10.4f}"
            f"{median / baseline_median:>8.1f}x"
        )


def run(args: argparse.Namespace, workdir: Path, failures: Counter[str]) -> int:
    csv = workdir / "plates.csv"
    plates_csv(csv)
    timings: Timings = {}
    # The portal's vehicle list, which the import reads to name the plates it does not hold.
    with running_emulator(workdir, "--vehicles", str(SMALL), "--seed", SEED) as portal_emulator:
        template = workdir / "empty.sqlite3"
        portal_migrate(portal_environment(database=template, emulator_url=portal_emulator.url))
        environment = portal_environment(
            database=workdir / "portal.sqlite3", emulator_url=portal_emulator.url
        )
        print(
            f"{args.repeat} round(s): emulators of {args.vehicles:,} and {SMALL} vehicles "
            f"(seed {SEED}), an import of {PLATES:,} plates into {GROUPS} groups (SQLite). "
            f"Machine: {os.cpu_count()} CPUs, load average {load_average()} at start."
        )
        for round_number in range(args.repeat):
            forward = round_number % 2 == 0
            for minimal in (False, True):
                try:
                    measure_emulators(
                        workdir, args.vehicles, timings, minimal=minimal, small_first=forward
                    )
                except (ServerFailed, FleetError, requests.RequestException) as error:
                    failures[f"{'minimal ' if minimal else ''}emulators: {error}"] += 1
            try:
                measure_import(environment, template, csv, timings, import_first=forward)
            except ServerFailed as error:
                failures[f"import: {error}"] += 1
            print(f"  round {round_number + 1} of {args.repeat} done", flush=True)
    report(timings)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.listing",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--repeat", type=int, default=5, help="rounds (default 5)")
    parser.add_argument(
        "--vehicles", type=int, default=100_000, help="the big fleet (default 100000)"
    )
    args = parser.parse_args(argv)
    if args.repeat < 1 or not SMALL < args.vehicles <= 100_000:
        parser.error(f"--repeat must be at least 1, --vehicles above {SMALL} and at most 100000")
    return bench_counting_failures(
        lambda workdir, failures: run(args, workdir, failures),
        passed="every emulator started and listed its fleet, every import wrote its rows",
    )


if __name__ == "__main__":
    sys.exit(main())
