"""`make screenshots`: the README's pictures, taken from the demo as `make run` starts it.

Starts the demo (`manage.py run_dev`: the emulator, the portal and its worker) on
spare ports with a database of its own in a temporary directory, so that neither a
running `make run` nor its data is touched; sends it the README's webhook deliveries,
waits until the worker has processed them, signs in as the demo manager in
Chromium and saves, under docs/screenshots/:

- dashboard-1280.png and dashboard-390.png: the dashboard on a laptop and a phone;
- fines-1280.png and fines-390.png: the fines list, and its first screen on a phone
  (the filters folded, each fine a card);
- vehicle-1280.png: the page of the vehicle with the most untreated fines;
- indications-queue.png: the fines whose driver is still to indicate, a few of them
  missed or due within days (sent with their deadlines, or estimated from the notice);
- indication-packet.png: the first page of one of those fines' indication packet (the
  PDF drawn by pypdfium2).

`--only NAME` (repeatable) takes those pictures alone.

Run it again after changing a page: the pictures never go stale.
"""

from __future__ import annotations

import argparse
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from zoneinfo import ZoneInfo

import requests

from bench.servers import free_port

if TYPE_CHECKING:
    from playwright.sync_api import ViewportSize

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "screenshots"
CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))
LAPTOP: Final[ViewportSize] = {"width": 1280, "height": 800}
PHONE: Final[ViewportSize] = {"width": 390, "height": 844}
# What each screen size shows: (the picture's name, the page, how much of it: True the
# whole page, False its first screen, a number its top that many pixels); the page None:
# the vehicle with the most untreated fines.
SHOTS: Final[list[tuple[ViewportSize, list[tuple[str, str | None, bool | int]]]]] = [
    (
        LAPTOP,
        [
            ("dashboard-1280", "/", True),
            ("fines-1280", "/fines/", False),
            ("vehicle-1280", None, False),
            ("indications-queue", "/fines/indications/", 1500),  # QUEUE_FINES and more
        ],
    ),
    (PHONE, [("dashboard-390", "/", True), ("fines-390", "/fines/?treated=0", False)]),
]
PACKET: Final = "indication-packet"
DELIVERIES = 600  # the README's send-webhooks command
# The queue's picture: fines sent with their deadline this many days from today (negative:
# passed, so missed), or (None) with only the notice's day, this many days ago, for the
# portal to estimate it.
QUEUE_FINES: Final[list[tuple[int | None, int | None]]] = [
    (-6, None),
    (-1, None),
    (0, None),
    (2, None),
    (None, 27),
    (5, None),
    (None, 24),
]
QUEUE_FIRST_ID = 990_001
VEHICLES = 500  # make run's
START_TIMEOUT = 60.0
PROCESS_TIMEOUT = 120.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="where the pictures go")
    parser.add_argument("--count", type=int, default=DELIVERIES, help="webhook deliveries sent")
    names = [name for _viewport, pages in SHOTS for name, _path, _extent in pages] + [PACKET]
    parser.add_argument(
        "--only", action="append", choices=names, help="take this picture alone (repeatable)"
    )
    args = parser.parse_args(argv)
    if not CHROMIUM.exists():
        print(f"{CHROMIUM} is missing: `make browser` installs it (as root)", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="fleet-screenshots-") as tmp, demo(Path(tmp)) as url:
        database = Path(tmp) / "db.sqlite3"
        send_deliveries(url, args.count)
        wait_until_processed(database, args.count)
        send_queue_fines(url, database)
        wait_until_processed(database, args.count + len(QUEUE_FINES))
        for name in shoot(url, args.out, database, set(args.only or names)):
            print(f"wrote {name.relative_to(ROOT) if name.is_relative_to(ROOT) else name}")
    return 0


def demo_env(tmp: Path) -> dict[str, str]:
    """The environment of the demo's commands: its own database and cache."""
    return os.environ | {
        "DATABASE_URL": f"sqlite:///{tmp / 'db.sqlite3'}",
        "CACHE_URL": "locmemcache://",
        "DEBUG": "True",
    }


def manage(tmp: Path, *command: str) -> None:
    """`manage.py *command` on the demo's database."""
    subprocess.run(  # noqa: S603 (our own interpreter and arguments)
        [sys.executable, "manage.py", *command],
        cwd=ROOT,
        env=demo_env(tmp),
        check=True,
        stdout=subprocess.DEVNULL,
    )


@contextmanager
def demo(tmp: Path) -> Iterator[str]:
    """The demo running on spare ports with its own database; its portal's address."""
    portal, emulator, idp = free_port(), free_port(), free_port()
    manage(tmp, "migrate", "--no-input", "-v", "0")
    manage(tmp, "demo_users")
    log = (tmp / "run_dev.log").open("w")
    ports = ["--port", str(portal), "--emulator-port", str(emulator), "--idp-port", str(idp)]
    process = subprocess.Popen(  # noqa: S603 (our own interpreter and arguments)
        [sys.executable, "manage.py", "run_dev", *ports],
        cwd=ROOT,
        env=demo_env(tmp),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{portal}"
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while "Press Ctrl-C" not in (tmp / "run_dev.log").read_text():
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("the demo did not start:\n" + (tmp / "run_dev.log").read_text())
            time.sleep(0.2)
        yield url
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


def send_deliveries(url: str, count: int) -> None:
    """The README's `send-webhooks` command, with `count` deliveries."""
    subprocess.run(  # noqa: S603 (our own interpreter and arguments)
        [
            sys.executable,
            "-m",
            "emulator",
            "send-webhooks",
            "--url",
            f"{url}/webhooks/fleet/dev-webhook-token/",
            "--count",
            str(count),
            "--vehicles",
            str(VEHICLES),
        ],
        cwd=ROOT,
        check=True,
        stdout=subprocess.DEVNULL,
    )


def send_queue_fines(url: str, database: Path) -> None:
    """`QUEUE_FINES`, each of another of the demo's vehicles that has fines (so with a
    driver the vehicle list names), posted to the receiver as the platform would."""
    with sqlite3.connect(database) as connection:
        rows = connection.execute(
            "SELECT DISTINCT json_extract(payload, '$.carPlate') FROM fleet_fine"
            " WHERE driver_id IS NOT NULL AND json_extract(payload, '$.carPlate')"
            " IS NOT NULL LIMIT ?",
            [len(QUEUE_FINES)],
        ).fetchall()
    today = datetime.now(ZoneInfo("America/Sao_Paulo")).date()
    for number, ((due, notice), (plate,)) in enumerate(zip(QUEUE_FINES, rows, strict=True)):
        key = QUEUE_FIRST_ID + number
        frame = {
            "id": key,
            "carPlate": plate,
            "autoInfracao": f"E0{key}",
            "description": "Transitar em velocidade superior à máxima permitida em até 20%",
            "infractionCode": "745-50",
            "amount": "130.16",
            "treated": False,
            "occurredAt": f"{today - timedelta(days=40)}T08:15:00-03:00",
            "city": "Campinas",
            "state": "SP",
            "authority": "DER-SP",
        }
        if due is not None:
            frame["indicationDeadline"] = _day(today, due)
        if notice is not None:
            frame["noticeDate"] = _day(today, -notice)
        response = requests.post(
            f"{url}/webhooks/fleet/dev-webhook-token/", json={"frame": frame}, timeout=10
        )
        response.raise_for_status()


def _day(today: date, days: int) -> str:
    return (today + timedelta(days=days)).isoformat()


def wait_until_processed(database: Path, count: int) -> None:
    """Until the worker has processed every delivery received."""
    deadline = time.monotonic() + PROCESS_TIMEOUT
    while time.monotonic() < deadline:
        with sqlite3.connect(database) as connection:
            received, waiting = connection.execute(
                "SELECT COUNT(*), SUM(status = 'received') FROM fleet_webhookdelivery"
            ).fetchone()
        if received >= count and not waiting:
            return
        time.sleep(0.5)
    raise SystemExit(f"the worker did not process the {count} deliveries in time")


def shoot(url: str, out: Path, database: Path, wanted: set[str]) -> list[Path]:
    from playwright.sync_api import sync_playwright

    written = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM),
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--lang=pt-BR"],
        )
        for viewport, pages in SHOTS:
            context = browser.new_context(base_url=url, locale="pt-BR", viewport=viewport)
            page = context.new_page()
            sign_in(page)
            for name, path, extent in pages:
                if name not in wanted:
                    continue
                page.goto(path or most_fined_vehicle(database))
                page.wait_for_load_state("networkidle")
                written.append(out / f"{name}.png")
                if extent is True or extent is False:
                    page.screenshot(path=written[-1], full_page=extent)
                else:
                    page.screenshot(
                        path=written[-1],
                        full_page=True,
                        clip={"x": 0, "y": 0, "width": viewport["width"], "height": extent},
                    )
            if PACKET in wanted and viewport is LAPTOP:
                packet = context.request.get(f"/fines/{first_queued_fine(database)}/packet.pdf")
                assert packet.ok, f"the packet: {packet.status}"
                written.append(out / f"{PACKET}.png")
                packet_page_draw(packet.body(), written[-1])
            context.close()
        browser.close()
    return written


def sign_in(page: Any) -> None:
    page.goto("/accounts/login/")
    page.fill("input[name=username]", "manager")
    page.fill("input[name=password]", "manager-demo-password")
    page.click("form:has(input[name=username]) button[type=submit]")
    page.wait_for_url("**/")


def first_queued_fine(database: Path) -> int:
    """The id of the first of `QUEUE_FINES` in the queue: the one missed the longest."""
    with sqlite3.connect(database) as connection:
        (fine_id,) = connection.execute(
            "SELECT id FROM fleet_fine WHERE external_id = ?", [str(QUEUE_FIRST_ID)]
        ).fetchone()
    return int(fine_id)


def packet_page_draw(pdf: bytes, path: Path) -> None:
    """The packet's first page as a PNG, as a printer would draw it (pypdfium2: headless
    Chromium shows no PDF)."""
    import pypdfium2

    document = pypdfium2.PdfDocument(pdf)
    try:
        document[0].render(scale=1.5).to_pil().save(path)
    finally:
        document.close()


def most_fined_vehicle(database: Path) -> str:
    """The page of the vehicle with the most untreated fines."""
    with sqlite3.connect(database) as connection:
        (registration,) = connection.execute(
            "SELECT registration FROM fleet_fine WHERE NOT treated AND registration != ''"
            " GROUP BY registration ORDER BY COUNT(*) DESC, registration LIMIT 1"
        ).fetchone()
    return f"/vehicles/{registration}/"


if __name__ == "__main__":
    raise SystemExit(main())
