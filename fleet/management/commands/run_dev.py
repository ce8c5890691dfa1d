"""`manage.py run_dev`: the emulator, the portal and its worker together, for `make run`.

Starts `python -m emulator` (when FLEET_ENVIRONMENT is `emulator`, its vehicles changing
hands as the hours go by; once it answers, `demo_drivers` names its drivers, and once the
portal answers `demo_history` writes the past days of who had each vehicle), the demo
identity provider (`idp/`, when Node.js and its packages are there and no OIDC_ISSUER is
configured), the development server and the background worker (`manage.py db_worker`:
webhook deliveries, CNH lookups and alerts) as child processes, waits until they are up,
prints the addresses and the demo logins, and stops them all on Ctrl-C or when one exits.

The emulator and the demo provider listen on the two ports after the portal's (8001 and
8002 beside 8000) unless told otherwise, so that two portals can run side by side.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from fleet.management.commands.demo_users import DEMO_USERS

_START_TIMEOUT = 30.0
# After Ctrl-C, how long the children have, together, to stop before they are killed.
_STOP_WAIT_S = 10.0


class Command(BaseCommand):
    help = "Run the Fleet API emulator and the portal together (stop both with Ctrl-C)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--vehicles", type=int, default=500)
        parser.add_argument(
            "--emulator-port", type=int, help="the Fleet API emulator's (default: --port + 1)"
        )
        parser.add_argument(
            "--idp-port", type=int, help="the demo identity provider's (default: --port + 2)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        children: list[subprocess.Popen[bytes]] = []
        # Ctrl-C stops the children, also when run_dev was started with SIGINT ignored
        # (which Python then leaves ignored): a job a script put in the background
        # (`make run &`, `nohup`) inherits that. A SIGTERM (from `kill` or a supervisor)
        # stops them the same way.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.default_int_handler)
        port = options["port"]
        emulator_port = port + 1 if options["emulator_port"] is None else options["emulator_port"]
        idp_port = port + 2 if options["idp_port"] is None else options["idp_port"]
        portal_url = f"http://{options['host']}:{port}"
        portal_env = os.environ.copy()
        try:
            if settings.FLEET_ENVIRONMENT == "emulator":
                portal_env |= self._use_emulator_at(emulator_port)
                # The links in alerts lead to this portal, unless PORTAL_BASE_URL says otherwise.
                portal_env.setdefault("PORTAL_BASE_URL", portal_url)
                children.append(self._start_emulator(emulator_port, options["vehicles"]))
                self._name_demo_drivers()
            demo_idp = self._start_demo_idp(portal_url, idp_port)
            if demo_idp is not None:
                children.append(demo_idp.process)
                portal_env |= demo_idp.portal_env
            children.append(
                subprocess.Popen(  # noqa: S603 (our own interpreter and arguments)
                    [
                        sys.executable,
                        "manage.py",
                        "runserver",
                        "--noreload",
                        f"{options['host']}:{port}",
                    ],
                    cwd=settings.BASE_DIR,
                    env=portal_env,
                )
            )
            _wait_for(f"{portal_url}/healthz", children)
            if settings.FLEET_ENVIRONMENT == "emulator":
                self._demo_history(portal_url)
            # Without autoreload: a reloader's grandchild would outlive Ctrl-C.
            worker = subprocess.Popen(
                [sys.executable, "manage.py", "db_worker", "--no-reload", "--interval", "1"],
                cwd=settings.BASE_DIR,
                env=portal_env,
            )
            children.append(worker)
            self._announce(portal_url, worker, demo_idp)
            while all(child.poll() is None for child in children):
                time.sleep(0.5)
            raise CommandError("a process stopped; stopping the others")
        except KeyboardInterrupt:
            self.stdout.write("\nStopping…")
        finally:
            for child in children:
                if child.poll() is None:
                    child.terminate()
            # One deadline for them all, which stop at once: then those left are killed.
            deadline = time.monotonic() + _STOP_WAIT_S
            for child in children:
                try:
                    child.wait(timeout=max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    child.kill()
                    child.wait()

    def _use_emulator_at(self, port: int) -> dict[str, str]:
        """Point this command, and the portal and worker it starts (the variables returned),
        at the emulator it starts on `port`, whatever FLEET_BASE_URL said."""
        emulator_url = f"http://127.0.0.1:{port}"
        # The demo commands run in this process, and read the API's address from settings.
        settings.FLEET_BASE_URL = emulator_url
        settings.FLEET_LOGIN_URL = f"{emulator_url}/app"
        return {"FLEET_BASE_URL": emulator_url, "FLEET_LOGIN_URL": f"{emulator_url}/app"}

    def _start_emulator(self, port: int, vehicles: int) -> subprocess.Popen[bytes]:
        process = subprocess.Popen(  # noqa: S603 (our own interpreter and arguments)
            [
                sys.executable,
                "-m",
                "emulator",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--vehicles",
                str(vehicles),
                "--handovers",  # vehicles change hands as the hours go by
            ],
            cwd=settings.BASE_DIR,
            stdout=subprocess.DEVNULL,
        )
        _wait_for(f"{settings.FLEET_BASE_URL}/healthz", [process])
        return process

    def _name_demo_drivers(self) -> None:
        """Names for the emulator's drivers (`demo_drivers`), read from it now that it
        answers; without them the pages show the drivers by number."""
        try:
            # Before anything reads the vehicle list: the history's past comes first.
            call_command("demo_history", stdout=self.stdout)
        except CommandError as exc:
            self.stdout.write(self.style.WARNING(f"The demo history was not written: {exc}."))
        try:
            call_command("demo_drivers", stdout=self.stdout)
        except CommandError as exc:
            self.stdout.write(self.style.WARNING(f"The demo drivers were not named: {exc}."))
        try:
            call_command("demo_groups", stdout=self.stdout)
        except CommandError as exc:
            self.stdout.write(self.style.WARNING(f"The demo vehicle groups were not made: {exc}."))

    def _demo_history(self, portal_url: str) -> None:
        """Fines of the past days around the hand-overs, one set by hand (`demo_history`)."""
        try:
            call_command("demo_history", fines_to=portal_url, stdout=self.stdout)
        except CommandError as exc:
            self.stdout.write(self.style.WARNING(f"The demo fines were not sent: {exc}."))

    def _start_demo_idp(self, portal_url: str, port: int) -> DemoIdentityProvider | None:
        """The demo identity provider, unless one is configured or Node.js is missing."""
        if settings.SOCIALACCOUNT_PROVIDERS["openid_connect"]["APPS"]:
            return None  # OIDC_ISSUER: the operator's own provider
        node = shutil.which("node")
        if node is None or not (IDP_DIR / "node_modules" / "oidc-provider").is_dir():
            self.stdout.write(
                self.style.WARNING(
                    "The demo identity provider needs Node.js and npm (`make run` installs its "
                    "packages when npm is there): not found, so sign-in is with the demo local "
                    "logins only."
                )
            )
            return None
        try:
            return DemoIdentityProvider.start(node=node, portal_url=portal_url, port=port)
        except CommandError as exc:
            self.stdout.write(
                self.style.WARNING(
                    f"The demo identity provider did not start ({exc}; --idp-port, or make "
                    "run's IDP_PORT, chooses another port): sign-in is with the demo local "
                    "logins only."
                )
            )
            return None

    def _announce(
        self,
        portal_url: str,
        worker: subprocess.Popen[bytes],
        demo_idp: DemoIdentityProvider | None,
    ) -> None:
        style = self.style
        self.stdout.write("")
        self.stdout.write(style.SUCCESS(f"Fleet Portal is running at {portal_url}/"))
        self.stdout.write(f"Background worker (manage.py db_worker) running, pid {worker.pid}")
        if settings.FLEET_ENVIRONMENT == "emulator":
            self.stdout.write(f"Fleet API emulator at {settings.FLEET_BASE_URL}/")
            self.stdout.write("Demo logins:")
            for demo in DEMO_USERS:
                self.stdout.write(f"  {demo.role:<17} {demo.username} / {demo.password}")
        if demo_idp is not None:
            self.stdout.write(
                f"Demo identity provider at {demo_idp.issuer}/ (the login page's "
                f'"{DEMO_IDP_NAME}" button); its users:'
            )
            for username, password, what in demo_idp.users:
                self.stdout.write(f"  {username} / {password}  ({what})")
        self.stdout.write("Press Ctrl-C to stop.")


IDP_DIR = Path(__file__).resolve().parents[3] / "idp"
DEMO_IDP_NAME = "Demo SSO"


class DemoIdentityProvider:
    """`node idp/server.mjs` with idp/demo.json, its redirect URIs those of this portal."""

    def __init__(self, process: subprocess.Popen[bytes], issuer: str, config: dict[str, Any]):
        self.process = process
        self.issuer = issuer
        client = config["clients"][0]
        # What the portal's runserver needs to offer it (the environment contract of the README).
        self.portal_env = {
            "OIDC_ISSUER": issuer,
            "OIDC_PROVIDER_ID": "demo",
            "OIDC_PROVIDER_NAME": DEMO_IDP_NAME,
            "OIDC_CLIENT_ID": client["client_id"],
            "OIDC_CLIENT_SECRET": client["client_secret"],
            "OIDC_ALLOWED_DOMAINS": "example.com",
            "OIDC_ADMIN_GROUPS": "fleet-admins",
            "LOCAL_LOGIN": "on",  # the demo local logins stay beside it
        }
        self.users = [
            (user["username"], user["password"], _demo_user_role(user)) for user in config["users"]
        ]

    @classmethod
    def start(cls, *, node: str, portal_url: str, port: int) -> DemoIdentityProvider:
        config = json.loads((IDP_DIR / "demo.json").read_text())
        portal = urlsplit(portal_url)
        # The browser may use either name of the loopback address.
        origins = {portal_url, f"http://localhost:{portal.port}", f"http://127.0.0.1:{portal.port}"}
        for client in config["clients"]:
            client["redirect_uris"] = [
                f"{origin}/accounts/oidc/demo/login/callback/" for origin in sorted(origins)
            ]
            client["post_logout_redirect_uris"] = [
                f"{origin}/accounts/signed-out/" for origin in sorted(origins)
            ]
        written = Path(tempfile.gettempdir()) / f"fleet-portal-demo-idp-{os.getpid()}.json"
        written.write_text(json.dumps(config))
        issuer = f"http://127.0.0.1:{port}"
        process = subprocess.Popen(  # noqa: S603 (node and our own script)
            [node, str(IDP_DIR / "server.mjs"), "--config", str(written), "--port", str(port)],
            cwd=IDP_DIR,
            stdout=subprocess.DEVNULL,
        )
        try:
            _wait_for(f"{issuer}/.well-known/openid-configuration", [process])
        except CommandError:
            process.kill()
            raise
        return cls(process, issuer, config)


def _demo_user_role(user: dict[str, Any]) -> str:
    if "fleet-admins" in user.get("groups", []):
        return "administrator"
    if not user.get("email_verified"):
        return "refused: e-mail not verified"
    if not str(user.get("email", "")).endswith("@example.com"):
        return "refused: domain not allowed"
    if "fleet-sp" in user.get("groups", []):
        return "regional manager: the provider's group fleet-sp, São Paulo"
    return "fleet manager"


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
