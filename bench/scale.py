"""Every page at the size of the largest fleets, against the bare view in the same run.

    python -m bench.scale [--vehicles 1000000] [--fines 10000000] [--notifications N]
                          [--database-url URL] [--keep DIR] [--rounds 20] [--fill-only]
                          [--only NAME ...]

It builds the data set (`bench.scale_fill`: the emulator's fleet, named drivers,
regions, years of fines and notifications, the tallies; the time of each part printed)
in a fresh SQLite database, or in `--database-url` (a PostgreSQL on this machine). With
`--keep DIR` the database (SQLite's file, or a note of what PostgreSQL's holds) is kept
in DIR and reused by a run of the same sizes: a re-run costs minutes. `--fill-only`
builds it (into `--keep`) and stops: the fill may run while the machine is busy, the
timing only on an idle one.

Then the emulator of that fleet, the portal under gunicorn (one worker, one thread,
`make run`'s per-process cache: no shared cache) and its worker, and, page by page, in
rounds that alternate the page and `bench/bare` (the floor of an authenticated page):
each page and filter the forms offer, scoped and whole-fleet (`bench.scale_pages`), the
dashboard also on the first view after a fine arrived, the admin's lists and searches;
the exports' rows per second and the server's memory meanwhile; the vehicle list's
cold page against the `list-cars` call and its JSON decode alone, and the server's
memory after it; the webhook receiver's rate against its rate on an empty database.

The fines still to indicate (`indications: ...`): the queue `/fines/indications/`, each
of its filters, a later page and the CSV's first bytes, the dashboard's figures of them,
also right after such a fine arrived; then the worker's daily run of their deadlines
(`bench.scale_reminders`: its time and SQL statements, rolled back). `--only NAME ...`
times only the pages whose name begins with one of these (`--only indications`: those,
and the daily run), nothing else.

It prints a table (p50 and p95 of each page and their ratios to the bare view's) and
exits 1 when a goal is missed (`bench.scale_pages.GOALS`), 2 when a server failed.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psycopg
import requests

from bench import scale_pages
from bench.portal_setup import (
    PortalUser,
    add_database_argument,
    portal_environment,
    portal_log_in,
    portal_migrate,
)
from bench.servers import ROOT, Server, ServerFailed, bench_main, running_emulator, running_portal

SEED = 3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__)
    parser.add_argument("--vehicles", type=int, default=1_000_000)
    parser.add_argument("--fines", type=int, default=10_000_000)
    parser.add_argument("--notifications", type=int, default=None, help="default: fines / 10")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--keep", type=Path, help="a folder that keeps the data set for re-runs")
    parser.add_argument(
        "--fill-only", action="store_true", help="build the data set into --keep, time nothing"
    )
    parser.add_argument(
        "--only",
        nargs="+",
        default=(),
        metavar="NAME",
        help="only the pages whose name begins with one of these (e.g. 'indications'); "
        "nothing else but, for 'indications', the worker's daily reminders job",
    )
    parser.add_argument(
        "--reminders-limit",
        type=int,
        default=600,
        metavar="SECONDS",
        help="each part of the reminders job is stopped after this long (reported so)",
    )
    add_database_argument(parser)
    options = parser.parse_args(argv)
    if options.notifications is None:
        options.notifications = options.fines // 10
    if options.fill_only and options.keep is None:
        parser.error("--fill-only needs --keep DIR: the data set is built to be kept")
    return bench_main(lambda workdir: run(options, options.keep or workdir))


def run(options: argparse.Namespace, folder: Path) -> int:
    folder.mkdir(parents=True, exist_ok=True)
    database = options.database_url or f"sqlite:///{folder / 'scale.sqlite3'}"
    with running_emulator(folder, "--vehicles", str(options.vehicles), "--seed", str(SEED)) as (
        emulator
    ):
        environment = portal_environment(database=folder / "unused", emulator_url=emulator.url)
        environment |= {"DATABASE_URL": database, "DJANGO_SETTINGS_MODULE": "bench.settings"}
        data = _data_set(options, folder, environment)
        _statistics(database)
        if options.fill_only:
            return 0
        with running_portal(environment, folder, workers=1, threads=1) as portal:
            results = scale_pages.measure(
                portal=portal,
                emulator=emulator,
                environment=environment,
                data=data,
                sessions=_sessions(portal, data),
                rounds=options.rounds,
                folder=folder,
                only=tuple(options.only),
            )
            if not options.only:
                full = scale_pages.receiver_rate(portal, first=2 * 10**10)
        if not options.only or any("indications".startswith(n) for n in options.only):
            _reminders_job(results, environment, options.reminders_limit)
        if options.only:
            return scale_pages.report(results, sizes=_sizes(options), database=database)
        empty = _empty_receiver_rate(environment, folder, database)
    results.figures.append(
        ("webhook receiver, deliveries/s ÷ on an empty database", full / empty,
         scale_pages.RECEIVER_RATIO, "x ≥")
    )  # fmt: skip
    print(f"  webhook receiver: {full:,.0f} deliveries/s here, {empty:,.0f} on an empty database")
    return scale_pages.report(results, sizes=_sizes(options), database=database)


def _reminders_job(results: scale_pages.Results, environment: dict[str, str], limit: int) -> None:
    """The worker's daily run of indication deadlines on the data set (`bench.scale_reminders`,
    rolled back): each part's wall time and SQL statements, reported, not judged."""
    found = _module_json(
        ["bench.scale_reminders", "--limit", str(limit)], environment, what="the reminders job"
    )
    reminders = found["reminders"]
    told = reminders["result"] or {"fines": 0, "alerts": 0}
    stopped = f"STOPPED after {limit} s, " if reminders["stopped"] else ""
    print(
        f"  reminders job ({found['people']} people): {stopped}{told['fines']:,} fines looked "
        f"at, {told['alerts']:,} alerts in {reminders['seconds']:,.1f} s, "
        f"{reminders['queries']:,} queries",
        flush=True,
    )
    name = "indication_reminders_create"
    results.figures.append((f"reminders job: {name}, s", reminders["seconds"], 0, "s"))
    results.figures.append((f"reminders job: {name}, queries", reminders["queries"], 0, "queries"))


def _empty_receiver_rate(environment: dict[str, str], folder: Path, database: str) -> float:
    """The receiver's rate on a database of the same kind with nothing in it."""
    empty = (
        f"{database.rsplit('/', 1)[0]}/{database.rsplit('/', 1)[1]}_empty"
        if database.startswith("postgres")
        else f"sqlite:///{folder / 'empty.sqlite3'}"
    )
    environment = environment | {"DATABASE_URL": empty}
    portal_migrate(environment)
    (folder / "empty").mkdir(exist_ok=True)
    with running_portal(environment, folder / "empty", workers=1, threads=1) as portal:
        return scale_pages.receiver_rate(portal, first=3 * 10**10)


def _statistics(database: str) -> None:
    """PostgreSQL's tables vacuumed and their statistics read, as autovacuum keeps them on
    a server in use (it is off on some machines, these among them): without statistics
    its planner takes any value for one in two hundred rows, and walked the fines' list
    for a driver's twenty (30 s); without a vacuum no index is read alone. SQLite keeps
    none unless asked (`ANALYZE`), as on a user's laptop: left so."""
    if database.startswith("postgres"):
        began = time.perf_counter()
        with psycopg.connect(database, autocommit=True) as connection:
            connection.execute("VACUUM (ANALYZE)")
        print(f"  VACUUM (ANALYZE): {time.perf_counter() - began:,.1f} s", flush=True)


def _sizes(options: argparse.Namespace) -> str:
    return (
        f"{options.vehicles:,} vehicles, {options.fines:,} fines, "
        f"{options.notifications:,} notifications"
    )


def _data_set(
    options: argparse.Namespace, folder: Path, environment: dict[str, str]
) -> dict[str, object]:
    """The data set's details, built now or found in `--keep`'s stamp."""
    stamp = folder / "scale.json"
    wanted = {
        "vehicles": options.vehicles,
        "fines": options.fines,
        "notifications": options.notifications,
        "database": environment["DATABASE_URL"],
    }
    if stamp.exists():
        kept = json.loads(stamp.read_text())
        if kept["sizes"] == wanted:
            print(f"The data set in {folder} ({_sizes(options)}): reused.")
            portal_migrate(environment)
            # Its groups' tallies, if it was built before they had them (or a fill stopped).
            subprocess.run(
                [sys.executable, "manage.py", "fine_tallies", "--groups"],
                cwd=ROOT,
                env=environment,
                check=True,
            )
            return dict(kept["data"])
        raise ServerFailed(f"{stamp} holds another data set: {kept['sizes']}; empty the folder")
    print(f"Building the data set: {_sizes(options)}.", flush=True)
    began = time.perf_counter()
    portal_migrate(environment)
    data = _module_json(
        [
            "bench.scale_fill",
            "--vehicles",
            str(options.vehicles),
            "--seed",
            str(SEED),
            "--fines",
            str(options.fines),
            "--notifications",
            str(options.notifications),
        ],
        environment,
        what="filling the database",
    )
    print(f"Built in {time.perf_counter() - began:,.0f} s.", flush=True)
    stamp.write_text(json.dumps({"sizes": wanted, "data": data}))
    return dict(data)


def _module_json(arguments: list[str], environment: dict[str, str], *, what: str) -> Any:
    """Run `python -m` with `arguments` in `environment`; the JSON of its last line."""
    completed = subprocess.run(
        [sys.executable, "-m", *arguments],
        cwd=ROOT,
        env=environment,
        stdout=subprocess.PIPE,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        raise ServerFailed(f"{what} failed (exit {completed.returncode})")
    return json.loads(completed.stdout.splitlines()[-1])


def _sessions(portal: Server, data: dict[str, object]) -> dict[str, requests.Session]:
    """A logged-in keep-alive session for each of the data set's managers."""
    sessions = {}
    managers = data["managers"]
    assert isinstance(managers, dict)
    for username, manager in managers.items():
        session = requests.Session()
        portal_log_in(session, portal.url, PortalUser(manager["username"], manager["password"]))
        sessions[username] = session
    return sessions


if __name__ == "__main__":
    sys.exit(main())
