"""`make screenshots`: the README's pictures, taken from the demo as `make run` starts it.

Starts the demo (`manage.py run_dev`: the emulator, the portal and its worker) on
spare ports with a database of its own in a temporary directory, so that neither a
running `make run` nor its data is touched; sends it the README's webhook deliveries,
waits until the worker has processed them, signs in as the demo manager in
Chromium and saves, under docs/screenshots/:

- dashboard-1280.png and dashboard-390.png: the dashboard on a laptop and a phone;
- fines-1280.png and fines-390.png: the fines list, and its first screen on a phone
  (the filters folded, each fine a card);
- vehicle-1280.png: the page of the vehicle with the most untreated fines.

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
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from bench.servers import free_port

if TYPE_CHECKING:
    from playwright.sync_api import ViewportSize

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "screenshots"
CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))
LAPTOP: Final[ViewportSize] = {"width": 1280, "height": 800}
PHONE: Final[ViewportSize] = {"width": 390, "height": 844}
# What each screen size shows: (the picture's name, the page, whole or its first screen);
# the page None: the vehicle with the most untreated fines.
SHOTS: Final[list[tuple[ViewportSize, list[tuple[str, str | None, bool]]]]] = [
    (
        LAPTOP,
        [
            ("dashboard-1280", "/", True),
            ("fines-1280", "/fines/", False),
            ("vehicle-1280", None, False),
        ],
    ),
    (PHONE, [("dashboard-390", "/", True), ("fines-390", "/fines/?treated=0", False)]),
]
DELIVERIES = 600  # the README's send-webhooks command
VEHICLES = 500  # make run's
START_TIMEOUT = 60.0
PROCESS_TIMEOUT = 120.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="where the pictures go")
    parser.add_argument("--count", type=int, default=DELIVERIES, help="webhook deliveries sent")
    args = parser.parse_args(argv)
    if not CHROMIUM.exists():
        print(f"{CHROMIUM} is missing: `make browser` installs it (as root)", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="fleet-screenshots-") as tmp, demo(Path(tmp)) as url:
        send_deliveries(url, args.count)
        wait_until_processed(Path(tmp) / "db.sqlite3", args.count)
        for name in shoot(url, args.out, Path(tmp) / "db.sqlite3"):
            print(f"wrote {name.relative_to(ROOT) if name.is_relative_to(ROOT) else name}")
    return 0


@contextmanager
def demo(tmp: Path) -> Iterator[str]:
    """The demo running on spare ports with its own database; its portal's address."""
    portal, emulator, idp = free_port(), free_port(), free_port()
    env = os.environ | {
        "DATABASE_URL": f"sqlite:///{tmp / 'db.sqlite3'}",
        "CACHE_URL": "locmemcache://",
        "DEBUG": "True",
    }
    manage = [sys.executable, "manage.py"]
    for command in (["migrate", "--no-input", "-v", "0"], ["demo_users"]):
        subprocess.run(  # noqa: S603 (our own interpreter and arguments)
            [*manage, *command], cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL
        )
    log = (tmp / "run_dev.log").open("w")
    ports = ["--port", str(portal), "--emulator-port", str(emulator), "--idp-port", str(idp)]
    process = subprocess.Popen(  # noqa: S603 (our own interpreter and arguments)
        [*manage, "run_dev", *ports],
        cwd=ROOT,
        env=env,
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


def shoot(url: str, out: Path, database: Path) -> list[Path]:
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
            for name, path, whole in pages:
                page.goto(path or most_fined_vehicle(database))
                page.wait_for_load_state("networkidle")
                written.append(out / f"{name}.png")
                page.screenshot(path=written[-1], full_page=whole)
            context.close()
        browser.close()
    return written


def sign_in(page: Any) -> None:
    page.goto("/accounts/login/")
    page.fill("input[name=username]", "manager")
    page.fill("input[name=password]", "manager-demo-password")
    page.click("form:has(input[name=username]) button[type=submit]")
    page.wait_for_url("**/")


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
