"""`manage.py run_dev`: the emulator, the portal and its worker together, for `make run`.

Starts `python -m emulator` (when FLEET_ENVIRONMENT is `emulator`), the
development server and the background worker (`manage.py db_worker`, which
runs the CNH lookups) as child processes, waits until they are up, prints the
address and the demo logins, and stops them all on Ctrl-C or when one exits.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from fleet.management.commands.demo_users import DEMO_USERS

_START_TIMEOUT = 30.0


class Command(BaseCommand):
    help = "Run the Fleet API emulator and the portal together (stop both with Ctrl-C)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--vehicles", type=int, default=500)

    def handle(self, *args: Any, **options: Any) -> None:
        children: list[subprocess.Popen[bytes]] = []
        # A SIGTERM (from `kill` or a supervisor) stops the children like Ctrl-C does.
        signal.signal(signal.SIGTERM, signal.default_int_handler)
        try:
            if settings.FLEET_ENVIRONMENT == "emulator":
                children.append(self._start_emulator(options["vehicles"]))
            portal_url = f"http://{options['host']}:{options['port']}"
            children.append(
                subprocess.Popen(  # noqa: S603 (our own interpreter and arguments)
                    [
                        sys.executable,
                        "manage.py",
                        "runserver",
                        "--noreload",
                        f"{options['host']}:{options['port']}",
                    ],
                    cwd=settings.BASE_DIR,
                )
            )
            _wait_for(f"{portal_url}/healthz", children)
            # Without autoreload: a reloader's grandchild would outlive Ctrl-C.
            worker = subprocess.Popen(
                [sys.executable, "manage.py", "db_worker", "--no-reload", "--interval", "1"],
                cwd=settings.BASE_DIR,
            )
            children.append(worker)
            self._announce(portal_url, worker)
            while all(child.poll() is None for child in children):
                time.sleep(0.5)
            raise CommandError("a process stopped; stopping the others")
        except KeyboardInterrupt:
            self.stdout.write("\nStopping…")
        finally:
            for child in children:
                if child.poll() is None:
                    child.terminate()
            for child in children:
                try:
                    child.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    child.kill()

    def _start_emulator(self, vehicles: int) -> subprocess.Popen[bytes]:
        base = urlsplit(settings.FLEET_BASE_URL)
        process = subprocess.Popen(  # noqa: S603 (our own interpreter and arguments)
            [
                sys.executable,
                "-m",
                "emulator",
                "--host",
                base.hostname or "127.0.0.1",
                "--port",
                str(base.port or 8001),
                "--vehicles",
                str(vehicles),
            ],
            cwd=settings.BASE_DIR,
            stdout=subprocess.DEVNULL,
        )
        _wait_for(f"{settings.FLEET_BASE_URL}/healthz", [process])
        return process

    def _announce(self, portal_url: str, worker: subprocess.Popen[bytes]) -> None:
        style = self.style
        self.stdout.write("")
        self.stdout.write(style.SUCCESS(f"Fleet Portal is running at {portal_url}/"))
        self.stdout.write(f"Background worker (manage.py db_worker) running, pid {worker.pid}")
        if settings.FLEET_ENVIRONMENT == "emulator":
            self.stdout.write(f"Fleet API emulator at {settings.FLEET_BASE_URL}/")
            self.stdout.write("Demo logins:")
            for demo in DEMO_USERS:
                self.stdout.write(f"  {demo.role:<14} {demo.username} / {demo.password}")
        self.stdout.write("Press Ctrl-C to stop.")


def _wait_for(url: str, processes: list[subprocess.Popen[bytes]]) -> None:
    """Poll `url` until it answers 200, failing fast if a process died."""
    deadline = time.monotonic() + _START_TIMEOUT
    while time.monotonic() < deadline:
        if any(process.poll() is not None for process in processes):
            raise CommandError(f"a process exited before {url} answered (is the port in use?)")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 (our own URL)
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.2)
    raise CommandError(f"{url} did not answer within {_START_TIMEOUT:.0f} s")
