"""`make run`'s last step: the emulator, the portal and its worker start and stop together."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import requests

from bench.servers import LOOPBACK, free_port
from tests.conftest import ROOT
from tests.idp import sign_in_at_provider, skip_unless_identity_provider_can_run


def refused(url: str) -> bool:
    try:
        requests.get(url, timeout=2)
    except requests.ConnectionError:
        return True
    return False


def free_ports_in_a_row(count: int) -> int:
    """The first of `count` TCP ports in a row that are free on loopback right now."""
    for _ in range(100):
        first = free_port()
        with contextlib.ExitStack() as held:
            try:
                for port in range(first + 1, first + count):
                    held.enter_context(socket.create_server((LOOPBACK, port)))
            except (OSError, OverflowError):  # taken, or past the last port
                continue
        return first
    raise AssertionError(f"no {count} free ports in a row")


@pytest.fixture
def start_run_dev(tmp_path):
    """run_dev with these options, in a fresh database of its own and no .env; stopped as
    Ctrl-C stops it after the test."""
    skip_unless_identity_provider_can_run()  # make run starts the demo provider too
    env = os.environ | {
        "DJANGO_ENV_FILE": "",
        "DJANGO_SECRET_KEY": "run-dev-test-secret-key",
        "DEBUG": "True",  # as make run's .env: cookies over plain http
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
    }
    for variable in ("DJANGO_SETTINGS_MODULE", "CACHE_URL", "FLEET_BASE_URL", "FLEET_LOGIN_URL"):
        env.pop(variable, None)
    # As `make run` does before it (`make setup`): the worker needs its tables, and the
    # provider's manager is the demo manager, who sees the whole fleet.
    for command in (["migrate", "--no-input", "-v", "0"], ["demo_users"]):
        subprocess.run(
            [sys.executable, "manage.py", *command],
            cwd=ROOT,
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
        )
    started: list[subprocess.Popen[str]] = []

    def start(*options: str) -> tuple[subprocess.Popen[str], dict[str, str]]:
        # Started as a script's background job is (`make run &`, `nohup`): with SIGINT
        # ignored, which it inherits, and Ctrl-C must still stop it.
        command = [sys.executable, "manage.py", "run_dev", "--vehicles", "50", *options]
        process = subprocess.Popen(
            ["sh", "-c", 'trap "" INT && exec "$@"', "run_dev", *command],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        started.append(process)
        return process, env

    yield start
    for process in started:
        if process.poll() is None:
            # As Ctrl-C: run_dev stops its children (a kill would leave them running).
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=120)  # as in the test below
            except subprocess.TimeoutExpired:
                process.kill()


@pytest.fixture
def run_dev(start_run_dev):
    portal_port, emulator_port, idp_port = free_port(), free_port(), free_port()
    process, env = start_run_dev(
        *("--port", str(portal_port)),
        *("--emulator-port", str(emulator_port)),
        *("--idp-port", str(idp_port)),
    )
    portal, emulator, idp = (
        f"http://127.0.0.1:{port}" for port in (portal_port, emulator_port, idp_port)
    )
    # The shell commands of the test read the emulator where run_dev started it.
    emulator_env = {"FLEET_BASE_URL": emulator, "FLEET_LOGIN_URL": f"{emulator}/app"}
    return process, portal, emulator, idp, env | emulator_env


def read_until_started(process: subprocess.Popen[str]) -> tuple[str, list[str], threading.Thread]:
    """What run_dev printed until it said how to stop it; the list the rest goes into, and
    the thread that reads it there all along: run_dev and its children write to this pipe,
    and a full one (64 KB of log lines on a busy machine) would block them, Ctrl-C or not."""
    lines = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        lines.append(line)
        if "Press Ctrl-C" in line or not line:
            break
    later: list[str] = []
    output = process.stdout
    assert output is not None
    drain = threading.Thread(target=lambda: later.extend(output), daemon=True)
    drain.start()
    return "".join(lines), later, drain


# Run in the portal's own environment: a lookup queued like the form does, then
# waited for until the worker (and only it) has finished it.
LOOKUP_THROUGH_THE_WORKER = """
import time
from django.contrib.auth.models import User
from fleet.services.cnh import cnh_lookup_create
user = User.objects.create_user("run-dev-test")
lookup = cnh_lookup_create(owner=user, cpfs=["52998224725"], batch=False, purpose="periodic")
deadline = time.monotonic() + 30
while not lookup.is_final and time.monotonic() < deadline:
    time.sleep(0.2)
    lookup.refresh_from_db()
print("STATUS", lookup.status)
"""

COUNT_NAMED_DRIVERS = """
from fleet.models import Driver
print("NAMED", Driver.objects.exclude(name="").count())
"""


def test_run_dev_serves_both_prints_the_logins_and_stops_both_on_ctrl_c(run_dev):
    process, portal, emulator, idp, env = run_dev
    printed, later, drain = read_until_started(process)

    assert f"Fleet Portal is running at {portal}/" in printed
    assert "manager / manager-demo-password" in printed
    assert requests.get(f"{portal}/healthz", timeout=5).status_code == 200
    assert requests.get(f"{emulator}/healthz", timeout=5).status_code == 200
    worker_pid = int(re.search(r"db_worker\) running, pid (\d+)", printed).group(1))
    looked_up = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", LOOKUP_THROUGH_THE_WORKER],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "STATUS done" in looked_up.stdout
    # The emulator's drivers got names, read from it once it answered.
    named = re.search(r"Demo drivers: (\d+) of the fleet's (\d+) drivers named", printed)
    assert named
    assert named.group(1) == named.group(2) != "0"
    drivers = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", COUNT_NAMED_DRIVERS],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert f"NAMED {named.group(1)}" in drivers.stdout
    # The demo identity provider: its button on the login page, and a sign-in through it.
    assert f"Demo identity provider at {idp}/" in printed
    assert "manager / manager-sso-password  (fleet manager)" in printed
    assert "Olá, Marcos" in sign_in_through_the_demo_provider(portal, "manager")

    process.send_signal(signal.SIGINT)
    # It gives its children 10 s together to stop, then kills those left: twelve times that.
    assert process.wait(timeout=120) == 0
    drain.join(timeout=60)
    assert "Stopping…" in "".join(later)
    assert refused(f"{portal}/healthz")
    assert refused(f"{emulator}/healthz")
    assert refused(f"{idp}/.well-known/openid-configuration")
    assert not Path(f"/proc/{worker_pid}").exists()


def test_run_dev_puts_the_emulator_and_the_provider_on_the_two_ports_after_the_portals(
    start_run_dev,
):
    port = free_ports_in_a_row(3)
    portal, emulator, idp = (f"http://127.0.0.1:{port + n}" for n in range(3))
    process, _ = start_run_dev("--port", str(port))  # as `make run PORT=…` runs it
    printed, _, _ = read_until_started(process)

    assert f"Fleet Portal is running at {portal}/" in printed
    assert f"Fleet API emulator at {emulator}/" in printed
    assert f"Demo identity provider at {idp}/" in printed
    assert requests.get(f"{emulator}/healthz", timeout=5).status_code == 200
    discovery = requests.get(f"{idp}/.well-known/openid-configuration", timeout=5)
    assert discovery.json()["issuer"] == idp
    # The portal signs in through that provider, and reads its vehicles from that emulator.
    browser = requests.Session()
    assert "Olá, Marcos" in sign_in_through_the_demo_provider(portal, "manager", browser)
    vehicles = browser.get(f"{portal}/vehicles/", timeout=30).text
    shown = re.search(r'data-testid="result-count">\s*(\d+)', vehicles)
    assert shown
    assert int(shown.group(1)) > 0


def sign_in_through_the_demo_provider(
    portal: str, username: str, browser: requests.Session | None = None
) -> str:
    """A browser's way through the login page's button and the provider's page; the page
    the portal shows after."""
    browser = browser or requests.Session()
    login = browser.get(f"{portal}/accounts/login/", timeout=10)
    button = re.search(
        r'<form method="post" action="([^"]+)"[^>]*>\s*<input[^>]*value="([^"]+)"', login.text
    )
    assert "Entrar com Demo SSO" in login.text
    start = browser.post(
        f"{portal}{button.group(1)}",
        data={"csrfmiddlewaretoken": button.group(2)},
        allow_redirects=False,
        timeout=10,
    )
    callback = sign_in_at_provider(
        start.headers["Location"], username, f"{username}-sso-password", session=browser
    )
    return browser.get(callback, timeout=10).text
