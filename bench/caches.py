"""What each cache kept for speed saves, at the size of the largest fleets.

    python -m bench.caches [--vehicles 1000000] [--fines 10000000] [--keep DIR]
                           [--rounds 10] [--database-url URL] [--only NAME ...]

On `bench.scale`'s data set (built, or reused from `--keep`), the portal under gunicorn
as `bench.scale` runs it is timed on the pages each cache serves, once with every cache
(`portal/lib/caches.py`), once with none (`SPEED_CACHES=false`) and once without each
cache in turn (`SPEED_CACHES_OFF=NAME`), in rounds that alternate each page and
`bench/bare`, each configuration in a portal of its own. It prints, for each cache and
page, the page's p50 with and without it, and their ratio: what the cache saves. A cache
whose pages are no slower without it is not worth its key.
"""

from __future__ import annotations

import argparse
import secrets
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path

import requests

from bench import scale, scale_pages
from bench.portal_setup import (
    PortalUser,
    add_database_argument,
    portal_environment,
    portal_log_in,
)
from bench.servers import (
    ROOT,
    ServerFailed,
    bench_main,
    running_emulator,
    running_portal,
    running_worker,
)
from bench.stats import percentile

# Pages timed once, not in rounds: what only their first request shows.
FIRST_OF_PROCESS = "dashboard, a process's first"  # the list not decoded yet (ungrouped)
FIRST_COUNT = "dashboard, two regions, first"  # until its figures show (scoped figures)
COUNTING = 'data-testid="figures-counting"'
FIRST_COUNT_WAIT_S = 3600

# The pages each cache serves, by the beginning of its name (portal/lib/caches.py).
SERVED: dict[str, tuple[str, ...]] = {
    "vehicles.": ("vehicles (warm)", "vehicles, search", "vehicles, region"),
    "fines.": ("fines", "fines, region", "fines ?driver="),
    "rows": ("fines", "notifications"),
    "lists.": (
        "fines, region",
        "fines, region ?page=200",
        "fines ?q= an infraction",
        "fines ?page=200",
    ),
    "dashboard.": (
        "dashboard",
        "dashboard, region",
        "dashboard, after a fine",
        "dashboard, region, a fine just arrived",
        "dashboard, two regions",
    ),
    "dashboard.scoped_figures": (FIRST_COUNT,),
}
CACHES = (
    "vehicles.results",
    "vehicles.page",
    "vehicles.chips",
    "vehicles.ungrouped",
    "fines.filter_form",
    "rows",
    "lists.scope_walked",
    "lists.scope_past_counted",
    "dashboard.figures",
    "dashboard.scoped_figures",
    "dashboard.money_html",
)


# A manager of two of the data set's regions, whose figures are summed from their fines
# (`dashboard.scoped_figures`): made here, since `bench.scale`'s data set has none.
TWO_REGIONS = PortalUser("bench-two-regions", secrets.token_urlsafe(16))


def _two_regions_manager(environment: dict[str, str]) -> None:
    code = (
        "from django.contrib.auth.models import User\n"
        "from fleet.models import VehicleGroup, VehicleGroupMember\n"
        "from fleet.services.scopes import scopes_changed\n"
        f"user, _ = User.objects.get_or_create(username={TWO_REGIONS.username!r})\n"
        f"user.set_password({TWO_REGIONS.password!r})\n"
        "user.save()\n"
        "for group in VehicleGroup.objects.order_by('pk')[:2]:\n"
        "    VehicleGroupMember.objects.get_or_create(user=user, group=group)\n"
        "scopes_changed()\n"
    )
    command = [sys.executable, "manage.py", "shell", "-c", code]
    subprocess.run(command, cwd=ROOT, env=environment, check=True)


def served(name: str) -> tuple[str, ...]:
    pages: tuple[str, ...] = ()
    for beginning, names in SERVED.items():
        if name.startswith(beginning):
            pages += names
    if name == "vehicles.ungrouped":
        pages += (FIRST_OF_PROCESS, "dashboard")
    return tuple(dict.fromkeys(pages))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.caches", description=__doc__)
    parser.add_argument("--vehicles", type=int, default=1_000_000)
    parser.add_argument("--fines", type=int, default=10_000_000)
    parser.add_argument("--notifications", type=int, default=None, help="default: fines / 10")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--keep", type=Path, help="a folder that keeps the data set for re-runs")
    parser.add_argument("--only", nargs="*", default=CACHES, help="the caches measured")
    add_database_argument(parser)
    options = parser.parse_args(argv)
    if options.notifications is None:
        options.notifications = options.fines // 10
    return bench_main(lambda workdir: run(options, options.keep or workdir))


def run(options: argparse.Namespace, folder: Path) -> int:
    folder.mkdir(parents=True, exist_ok=True)
    database = options.database_url or f"sqlite:///{folder / 'scale.sqlite3'}"
    with running_emulator(
        folder, "--vehicles", str(options.vehicles), "--seed", str(scale.SEED)
    ) as (emulator):
        environment = portal_environment(database=folder / "unused", emulator_url=emulator.url)
        environment |= {"DATABASE_URL": database, "DJANGO_SETTINGS_MODULE": "bench.settings"}
        data = scale._data_set(options, folder, environment)
        _two_regions_manager(environment)
        wanted = sorted({page for name in options.only for page in served(name)})
        configurations: list[tuple[str, dict[str, str]]] = [("every cache", {})]
        configurations += [(name, {"SPEED_CACHES_OFF": name}) for name in options.only]
        configurations += [("no cache", {"SPEED_CACHES": "false"})]
        timings: dict[str, dict[str, tuple[float, float]]] = {}
        for label, extra in configurations:
            pages = wanted if label in ("every cache", "no cache") else served(label)
            print(f"== {label}: {', '.join(pages)}", flush=True)
            timings[label] = _timed(environment | extra, folder, data, pages, options.rounds)
    _report(timings, options.only)
    return 0


def _timed(
    environment: dict[str, str],
    folder: Path,
    data: dict[str, object],
    names: Iterable[str],
    rounds: int,
) -> dict[str, tuple[float, float]]:
    """Each page's p50 and the bare view's beside it, in seconds, in a portal of its own."""
    found: dict[str, tuple[float, float]] = {}
    wanted = set(names)
    with running_portal(environment, folder, workers=1, threads=1) as portal:
        sessions = scale._sessions(portal, data)
        sessions[TWO_REGIONS.username] = requests.Session()
        portal_log_in(sessions[TWO_REGIONS.username], portal.url, TWO_REGIONS)
        if FIRST_OF_PROCESS in wanted:
            found[FIRST_OF_PROCESS] = _first_of_process(portal.url, sessions["bench-whole"])
        with running_worker(environment, folder) as worker:
            if FIRST_COUNT in wanted:
                found[FIRST_COUNT] = _first_count(portal.url, sessions[TWO_REGIONS.username])
            fines = iter(range(2 * 10**10, 3 * 10**10))
            plates = scale_pages._list(data, "plates")

            def post_fine() -> None:
                payload: dict[str, object] = {
                    "frame": {"id": next(fines), "treated": False, "carPlate": plates[0]}
                }
                scale_pages.post_fine_processed(portal, environment, worker, payload)

            two = scale_pages.Page(
                "dashboard, two regions", "/", TWO_REGIONS.username, scale_pages.DASHBOARD_GOAL
            )
            for page in [*scale_pages.pages(data, post_fine), two]:
                if page.name not in wanted:
                    continue
                try:
                    timed, bare = scale_pages._rounds(portal.url, sessions[page.user], page, rounds)
                except (requests.RequestException, ServerFailed) as error:
                    # Without a cache a page may hold the one-thread portal for minutes:
                    # said, and the next configuration measured all the same.
                    print(f"  {page.name}: not answered ({error})", flush=True)
                    break
                found[page.name] = (percentile(timed, 0.5), percentile(bare, 0.5))
                print(f"  {page.name}: p50 {found[page.name][0] * 1000:,.1f} ms", flush=True)
    return found


def _first_of_process(url: str, session: requests.Session) -> tuple[float, float]:
    """The whole fleet's dashboard as a portal process's first (which has not decoded the
    vehicle list), and the bare view's p50 of five before it."""
    bare: list[float] = []
    for _ in range(5):
        began = time.perf_counter()
        scale_pages._get(session, url + "/bench/bare")
        bare.append(time.perf_counter() - began)
    began = time.perf_counter()
    scale_pages._get(session, url + "/")
    first = time.perf_counter() - began
    print(f"  {FIRST_OF_PROCESS}: {first * 1000:,.1f} ms", flush=True)
    return first, percentile(bare, 0.5)


def _first_count(url: str, session: requests.Session) -> tuple[float, float]:
    """How long the two regions' first dashboard takes to show its figures: from its
    first request until a page shows them, asked every second as the page does (with the
    cache the worker sums them; without it the request itself does), and the longest
    request meanwhile (how long a web worker was held)."""
    began = time.perf_counter()
    pages, longest = 0, 0.0
    while time.perf_counter() - began < FIRST_COUNT_WAIT_S:
        asked = time.perf_counter()
        try:
            page = scale_pages._get(session, url + "/")
        except (requests.RequestException, ServerFailed) as error:
            print(f"  {FIRST_COUNT}: not answered ({error})", flush=True)
            break
        pages += 1
        longest = max(longest, time.perf_counter() - asked)
        if COUNTING not in page.text:
            waited = time.perf_counter() - began
            print(
                f"  {FIRST_COUNT}: figures after {waited:,.1f} s, {pages} pages, the longest"
                f" {longest * 1000:,.1f} ms",
                flush=True,
            )
            return waited, longest
        time.sleep(1)  # as the page asks again: a wait of the benchmark, not a test's
    return float("inf"), float("inf")


def _report(timings: dict[str, dict[str, tuple[float, float]]], names: Iterable[str]) -> None:
    """Each page's p50 as a ratio to the bare view's p50 of its own rounds (which runs
    measured apart cannot share), with the cache and without it, and what it saves:
    the second ratio over the first."""
    every = timings["every cache"]
    print("\nWhat each cache saves: p50 with and without it, in ms and x the bare view's")
    print(f"  {'cache':<34} {'page':<26} {'with':>15} {'without':>15} {'saves':>6}")
    for label in (*names, "no cache"):
        for page, (without, bare_without) in timings.get(label, {}).items():
            if page == FIRST_COUNT:
                continue
            with_it, bare_with = every[page]
            ratio_with, ratio_without = with_it / bare_with, without / bare_without
            print(
                f"  {label:<34} {page:<26}"
                f" {with_it * 1000:>6.1f} {ratio_with:>6.2f}x"
                f" {without * 1000:>6.1f} {ratio_without:>6.2f}x"
                f" {ratio_without / ratio_with:>5.2f}x"
            )
    print(f"\n{FIRST_COUNT}: until its figures show, and the longest request meanwhile")
    for label, found in timings.items():
        if FIRST_COUNT in found:
            waited, longest = found[FIRST_COUNT]
            print(f"  {label:<34} {waited:>8,.1f} s {longest * 1000:>10,.1f} ms")
    bare = [
        b for found in timings.values() for page, (_p50, b) in found.items() if page != FIRST_COUNT
    ]
    print(f"  the bare view's p50: {min(bare) * 1000:.1f} to {max(bare) * 1000:.1f} ms")


if __name__ == "__main__":
    sys.exit(main())
