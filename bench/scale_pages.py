"""What `bench.scale` measures, its goals, and its report.

Each page is asked once to warm up, then `rounds` times, each time beside `bench/bare`
(which of the two goes first alternates). Times are the client's (the whole answer
read), on one keep-alive connection, one request at a time.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import requests

from bench.servers import (
    Server,
    ServerFailed,
    portal_wait_processed,
    running_worker,
    upstream_session,
)
from bench.stats import percentile

WEBHOOK = "/webhooks/fleet/dev-webhook-token/"
QUEUE = "/fines/indications/"
# Goals, as ratios to the bare view's same percentile: (p50, p95).
PAGE_GOAL = (5.0, 10.0)
DASHBOARD_GOAL = (3.0, 3.0)
WARM_VEHICLES_GOAL = (1.5, 1.5)
ADMIN_GOAL = (10.0, 10.0)
EXPORT_ROWS_PER_S = 50_000
EXPORT_MEMORY_MB = 50  # "flat": what the server's memory may grow while it streams
VEHICLES_RSS_MB = 300
COLD_VEHICLES_RATIO = 1.2
RECEIVER_RATIO = 0.8
# An export is read for this long, or to its end.
EXPORT_SECONDS = 10.0
RECEIVER_DELIVERIES = 500


@dataclass(frozen=True, slots=True)
class Page:
    name: str
    path: str
    user: str = "bench-whole"
    goal: tuple[float, float] = PAGE_GOAL
    before: Callable[[], None] | None = None  # done before each timed request, not timed
    first_bytes: int = 0  # read only this much of the answer (a long download), if not 0


@dataclass(slots=True)
class Results:
    pages: list[tuple[Page, list[float], list[float]]] = field(default_factory=list)
    figures: list[tuple[str, float, float, str]] = field(
        default_factory=list
    )  # name, value, goal, unit
    failures: list[str] = field(default_factory=list)


def pages(data: dict[str, object], post_fine: Callable[[], None]) -> list[Page]:
    """Every page and filter the forms offer, whole-fleet and scoped."""
    plates = _list(data, "plates")
    drivers = _list(data, "drivers")
    references = _list(data, "references")
    month = (time.strftime("%Y-%m", time.localtime(time.time() - 40 * 86400)),)[0]
    received = time.strftime("%Y-%m-%d", time.localtime(time.time() - 30 * 86400))
    region = "bench-region"
    return [
        Page("dashboard", "/", goal=DASHBOARD_GOAL),
        Page("dashboard, region", "/", region, DASHBOARD_GOAL),
        Page("dashboard, region, a fine just arrived", "/", region, DASHBOARD_GOAL, post_fine),
        Page("dashboard, after a fine", "/", goal=DASHBOARD_GOAL, before=post_fine),
        Page("vehicles (warm)", "/vehicles/", goal=WARM_VEHICLES_GOAL),
        Page("vehicles, search", f"/vehicles/?q={plates[0][:5]}", goal=WARM_VEHICLES_GOAL),
        Page("vehicles, region", "/vehicles/", region),
        # A plate typed in its other spelling (the list holds ABC-1234; ABC1C34 is typed),
        # and a driver's name, which finds their vehicles.
        Page(
            "vehicles, search a plate's other spelling",
            f"/vehicles/?q={_mercosul(plates[8])}",
            goal=WARM_VEHICLES_GOAL,
        ),
        Page("vehicles, search a driver's name", "/vehicles/?q=ana", goal=WARM_VEHICLES_GOAL),
        Page("a vehicle", f"/vehicles/{plates[1]}/"),
        Page("a driver", f"/drivers/{drivers[2]}/"),
        Page("fines", "/fines/"),
        Page("fines, region", "/fines/", region),
        Page("fines ?q= a notice number", f"/fines/?q={references[0]}"),
        Page("fines ?q= its beginning", f"/fines/?q={str(references[1])[:7]}"),
        Page("fines ?q= an infraction", "/fines/?q=velocidade"),
        Page("fines ?plate=", f"/fines/?plate={plates[3]}"),
        Page("fines ?q= a plate (Mercosul)", f"/fines/?q={_mercosul(plates[9])}"),
        Page("fines ?q= a plate (old spelling)", f"/fines/?q={plates[10]}"),
        Page("fines, region ?q= a plate", f"/fines/?q={plates[10]}", region),
        Page("fines ?driver=", f"/fines/?driver={drivers[4]}"),
        Page("fines ?basis=uncertain", "/fines/?basis=uncertain"),
        Page("fines, region ?basis=uncertain", "/fines/?basis=uncertain", region),
        Page("fines ?basis=list (probable)", "/fines/?basis=list"),
        Page("fines, region ?basis=list", "/fines/?basis=list", region),
        Page("fines ?basis=history", "/fines/?basis=history"),
        Page("fines ?basis=established", "/fines/?basis=established"),
        Page("fines, region ?basis=established", "/fines/?basis=established", region),
        Page("fines ?basis=manual (none)", "/fines/?basis=manual"),
        Page("fines ?basis=list&treated=0", "/fines/?basis=list&treated=0"),
        Page("fines ?treated=0", "/fines/?treated=0"),
        Page("fines ?document=0", "/fines/?document=0"),
        Page("fines ?month=", f"/fines/?month={month}"),
        Page("fines ?amount_min=&sort=-amount", "/fines/?amount_min=500&sort=-amount"),
        Page("fines ?received_from=", f"/fines/?received_from={received}"),
        Page("fines ?sort=occurred_at", "/fines/?sort=occurred_at"),
        Page("fines ?page=200", "/fines/?page=200"),
        Page("fines, region ?page=200", "/fines/?page=200", region),
        Page("a fine", "/fines/1/"),
        Page("driver picker", "/fines/drivers/?driver=ana"),
        # The same picker chooses a fine's driver by name: within a part of the fleet, its
        # drivers only (now or in the history).
        Page("driver picker, region", "/fines/drivers/?driver=ana", region),
        Page("notifications", "/notifications/"),
        Page("notifications ?q= a title", "/notifications/?q=recall"),
        Page("notifications ?q= a plate", f"/notifications/?q={_mercosul(plates[11])}"),
        Page("notifications ?page=200", "/notifications/?page=200"),
        Page("admin: fines", "/admin/fleet/fine/", goal=ADMIN_GOAL),
        Page("admin: fines, search", f"/admin/fleet/fine/?q={references[5]}", goal=ADMIN_GOAL),
        Page(
            "admin: fines, search a plate",
            f"/admin/fleet/fine/?q={_mercosul(plates[12])}",
            goal=ADMIN_GOAL,
        ),
        Page(
            "admin: corrections, search a plate",
            f"/admin/fleet/finedrivercorrection/?q={plates[12]}",
            goal=ADMIN_GOAL,
        ),
        Page("admin: notifications", "/admin/fleet/notification/", goal=ADMIN_GOAL),
        Page("admin: deliveries", "/admin/fleet/webhookdelivery/", goal=ADMIN_GOAL),
    ]


def measure(
    *,
    portal: Server,
    emulator: Server,
    environment: dict[str, str],
    data: dict[str, object],
    sessions: dict[str, requests.Session],
    rounds: int,
    folder: Path,
    only: tuple[str, ...] = (),
) -> Results:
    """Every page (`pages`, then `indication_pages`), or those whose name begins with one
    of `only`; without `only`, the cold vehicle list and the export too."""
    results = Results()
    whole = sessions["bench-whole"]
    pid = int(whole.get(f"{portal.url}/bench/bare", timeout=30).text)
    if not only:
        _vehicle_list(results, portal, emulator, whole, pid)
    with running_worker(environment, folder) as worker:
        fines = iter(range(10**9, 10**10))
        plates = _list(data, "plates")

        def post_fine() -> None:
            # A new fine of the region's first vehicle, processed by the worker.
            number = next(fines)
            payload = {
                "frame": {"id": number, "treated": False, "carPlate": plates[0], "amount": "88.38"}
            }
            post_fine_processed(portal, environment, worker, payload)

        def post_fine_to_indicate() -> None:
            # The same, a fine whose driver is to be indicated within days: it changes
            # the figures of the fines to indicate (`TallyDimension.TO_INDICATE`).
            number = next(fines)
            due = time.strftime("%Y-%m-%d", time.localtime(time.time() + 3 * 86400))
            frame = {"id": number, "treated": False, "carPlate": plates[0], "amount": "88.38"}
            frame |= {"indicationRequired": True, "indicationDeadline": due}
            post_fine_processed(portal, environment, worker, {"frame": frame})

        every = pages(data, post_fine) + indication_pages(
            data, post_fine_to_indicate, whole, portal.url
        )
        for page in every:
            if only and not page.name.startswith(only):
                continue
            try:
                timed, bare = _rounds(portal.url, sessions[page.user], page, rounds)
            except (ServerFailed, requests.RequestException) as error:
                # A page that fails (the portal's 30 s timeout): said, and the others timed.
                results.failures.append(f"{page.name}: {error}")
                print(f"  {page.name}: FAILED: {error}", flush=True)
                continue
            results.pages.append((page, timed, bare))
            print(f"  {page.name}: p50 {percentile(timed, 0.5) * 1000:,.1f} ms", flush=True)
    if not only:
        _export(results, portal, whole, pid)
    return results


def indication_pages(
    data: dict[str, object], post_fine: Callable[[], None], session: requests.Session, url: str
) -> list[Page]:
    """The queue of the fines still to indicate (`/fines/indications/`), each filter, a
    later page, the CSV's first bytes; the dashboard's figures of the fines to indicate,
    also right after such a fine arrived. The queue's first page (fetched once, untimed)
    gives a group's value and the next page's cursor."""
    plates = _list(data, "plates")
    drivers = _list(data, "drivers")
    first = _get(session, f"{url}{QUEUE}").text
    group = re.search(r'name="group".*?<option value="(\d+)"', first, re.DOTALL)
    after = re.search(r'after=([0-9-]+\.[0-9]+)"', first)
    if group is None or after is None:
        raise ServerFailed("the queue's first page shows no group or no next page")
    name = "indications"
    return [
        Page(f"{name}: queue", QUEUE),
        Page(f"{name}: queue, region", QUEUE, "bench-region"),
        Page(f"{name}: ?group=", f"{QUEUE}?group={group[1]}"),
        Page(f"{name}: ?plate= (Mercosul)", f"{QUEUE}?plate={_mercosul(plates[5])}"),
        Page(f"{name}: ?plate= (old spelling)", f"{QUEUE}?plate={_old(plates[6:])}"),
        Page(f"{name}: ?driver=", f"{QUEUE}?driver={drivers[7]}"),
        Page(f"{name}: ?within=overdue", f"{QUEUE}?within=overdue"),
        Page(f"{name}: ?within=7", f"{QUEUE}?within=7"),
        Page(f"{name}: ?within=30", f"{QUEUE}?within=30"),
        Page(f"{name}: ?after= (2nd page)", f"{QUEUE}?after={after[1]}"),
        Page(f"{name}: region ?within=7", f"{QUEUE}?within=7", "bench-region"),
        Page(f"{name}: CSV, first 64 KB", f"{QUEUE}export.csv", first_bytes=65536),
        Page(f"{name}: figures (dashboard)", "/", goal=DASHBOARD_GOAL),
        Page(f"{name}: figures (dashboard), region", "/", "bench-region", DASHBOARD_GOAL),
        Page(
            f"{name}: figures, a fine to indicate arrived",
            "/",
            goal=DASHBOARD_GOAL,
            before=post_fine,
        ),
        Page(
            f"{name}: figures, region, such a fine arrived",
            "/",
            "bench-region",
            DASHBOARD_GOAL,
            post_fine,
        ),
    ]


def _mercosul(plate: str) -> str:
    """`plate` (as the emulator writes it) as a Mercosul plate: ABC-1234 is ABC1C34."""
    plate = plate.replace("-", "").upper()
    if plate[4].isdigit():
        return f"{plate[:4]}{'ABCDEFGHIJ'[int(plate[4])]}{plate[5:]}"
    return plate


def _old(plates: list[str]) -> str:
    """The first of `plates` that has an old spelling, in it: ABC-1234 (its Mercosul
    ABC1C34 names the same vehicle; a Mercosul plate past J in its fifth has none)."""
    plate = next(_mercosul(p) for p in plates if _mercosul(p)[4] in "ABCDEFGHIJ")
    return f"{plate[:3]}-{plate[3]}{'ABCDEFGHIJ'.index(plate[4])}{plate[5:]}"


def post_fine_processed(
    portal: Server, environment: dict[str, str], worker: Server, payload: Mapping[str, object]
) -> None:
    """Send a fine to the portal's receiver and wait until its worker processed it."""
    answer = requests.post(f"{portal.url}{WEBHOOK}", json=payload, timeout=300)
    if answer.status_code != 202:
        raise ServerFailed(f"the receiver answered {answer.status_code}")
    portal_wait_processed(environment, worker, timeout=120)


def _rounds(
    url: str, session: requests.Session, page: Page, rounds: int
) -> tuple[list[float], list[float]]:
    timed: list[float] = []
    bare: list[float] = []
    if page.first_bytes:  # warm-up
        _get_first(session, url + page.path, page.first_bytes)
    else:
        _get(session, url + page.path)
    for number in range(rounds):
        if page.before is not None:
            page.before()
        order = [(page.path, timed), ("/bench/bare", bare)]
        for path, into in order if number % 2 else order[::-1]:
            began = time.perf_counter()
            if page.first_bytes and path == page.path:
                _get_first(session, url + path, page.first_bytes)
            else:
                _get(session, url + path)
            into.append(time.perf_counter() - began)
    return timed, bare


def _get(session: requests.Session, url: str) -> requests.Response:
    response = session.get(url, timeout=300)
    if response.status_code != 200:
        raise ServerFailed(f"GET {url} answered {response.status_code}")
    return response


def _get_first(session: requests.Session, url: str, size: int) -> None:
    """The first `size` bytes of the answer at `url`; the connection then dropped."""
    with session.get(url, stream=True, timeout=300) as response:
        if response.status_code != 200:
            raise ServerFailed(f"GET {url} answered {response.status_code}")
        read = 0
        for chunk in response.iter_content(8192):
            read += len(chunk)
            if read >= size:
                break


def _vehicle_list(
    results: Results, portal: Server, emulator: Server, session: requests.Session, pid: int
) -> None:
    """The cold vehicle list against the `list-cars` call and its decode; the memory after."""
    upstream = upstream_session()
    began = time.perf_counter()
    json.loads(upstream.get(f"{emulator.url}/key/list-cars", timeout=300).content)
    call = time.perf_counter() - began
    _get(session, f"{portal.url}/bench/forget")
    began = time.perf_counter()
    _get(session, f"{portal.url}/vehicles/")
    cold = time.perf_counter() - began
    results.figures.append(
        ("vehicle list, cold page ÷ list-cars and decode", cold / call, COLD_VEHICLES_RATIO, "x")
    )
    results.figures.append(("server memory after it", _rss_mb(pid), VEHICLES_RSS_MB, "MB ≤"))


def _export(results: Results, portal: Server, session: requests.Session, pid: int) -> None:
    """Rows a second of the fines' export, and how much the server's memory grew."""
    peak = [_rss_mb(pid)]
    start = peak[0]
    done = threading.Event()

    def watch() -> None:
        while not done.wait(0.2):
            peak.append(_rss_mb(pid))

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    rows = 0
    began = time.perf_counter()
    with session.get(f"{portal.url}/fines/export.csv", stream=True, timeout=300) as answer:
        for line in answer.iter_lines():
            rows += bool(line)
            if time.perf_counter() - began > EXPORT_SECONDS:
                break
    elapsed = time.perf_counter() - began
    done.set()
    watcher.join()
    results.figures.append(("fines export", rows / elapsed, EXPORT_ROWS_PER_S, "rows/s ≥"))
    results.figures.append(
        ("server memory grown meanwhile", max(peak) - start, EXPORT_MEMORY_MB, "MB ≤")
    )


def receiver_rate(portal: Server, *, first: int) -> float:
    """Deliveries a second the receiver stores, one after the other on one connection."""
    session = requests.Session()
    began = time.perf_counter()
    for number in range(first, first + RECEIVER_DELIVERIES):
        payload = {"frame": {"id": number, "treated": False}}
        answer = session.post(f"{portal.url}{WEBHOOK}", json=payload, timeout=30)
        if answer.status_code != 202:
            raise ServerFailed(f"the receiver answered {answer.status_code}")
    return RECEIVER_DELIVERIES / (time.perf_counter() - began)


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise ServerFailed(f"no memory figure for process {pid}")


def _list(data: dict[str, object], name: str) -> list[str]:
    found = data[name]
    assert isinstance(found, list)
    return [str(item) for item in found]


def report(results: Results, *, sizes: str, database: str) -> int:
    """Print the table; 1 if a goal is missed."""
    print(f"\n{sizes}, {database.split(':')[0]}")
    print(f"{'page':48} {'p50 ms':>9} {'p95 ms':>9} {'p50 x':>7} {'p95 x':>7}  goal")
    missed = []
    for page, timed, bare in results.pages:
        p50, p95 = percentile(timed, 0.5), percentile(timed, 0.95)
        r50, r95 = p50 / percentile(bare, 0.5), p95 / percentile(bare, 0.95)
        ok = r50 <= page.goal[0] and r95 <= page.goal[1]
        if not ok:
            missed.append(page.name)
        print(
            f"{page.name:48} {p50 * 1000:9.1f} {p95 * 1000:9.1f} {r50:7.1f} {r95:7.1f}"
            f"  {page.goal[0]:g}/{page.goal[1]:g}{'' if ok else '  MISSED'}"
        )
    bare_all = [value for _page, _timed, bare in results.pages for value in bare]
    print(
        f"{'bench/bare (all rounds)':48} {percentile(bare_all, 0.5) * 1000:9.1f} "
        f"{percentile(bare_all, 0.95) * 1000:9.1f}"
    )
    for name, value, goal, unit in results.figures:
        ok = _figure_ok(unit, value, goal)
        if not ok:
            missed.append(name)
        print(f"{name:48} {value:12,.1f} {unit} {goal:g}{'' if ok else '  MISSED'}")
    for failure in results.failures:
        print(f"FAILED {failure}")
        missed.append(failure)
    if missed:
        print(f"\nGoals missed: {len(missed)}: " + "; ".join(missed))
        return 1
    print("\nEvery goal met.")
    return 0


def _figure_ok(unit: str, value: float, goal: float) -> bool:
    if not goal:
        return True  # reported, not judged
    if unit.endswith("≥"):
        return value >= goal
    return value <= goal
