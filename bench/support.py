"""What every benchmark needs: the emulator and the portal as real servers, and statistics.

Each server runs on a free loopback port with its output in a log file, and
is stopped by the context manager that started it, also on Ctrl-C or
SIGTERM. The portal gets its own SQLite database and an environment built
here, so a developer's `.env` or shell cannot change what is measured.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import os
import re
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

import requests

ROOT = Path(__file__).resolve().parent.parent
LOOPBACK = "127.0.0.1"
START_TIMEOUT = 30.0

# The emulator's public demo values (emulator/README.md).
DEMO_ACCESS_TOKEN = "demo-access-token"
DEMO_SECRET_KEY = "demo-secret-key"
DEMO_FLEET_EMAIL = "manager@example.com"
DEMO_FLEET_PASSWORD = "demo-password"

_LISTENING = re.compile(r"listening on (http://\S+)")
# Variables the portal's settings read: dropped from the inherited environment.
_PORTAL_PREFIXES = ("FLEET_", "DJANGO_", "SECURE_", "SESSION_", "CSRF_")
_PORTAL_NAMES = frozenset(
    [
        "DEBUG",
        "ALLOWED_HOSTS",
        "DATABASE_URL",
        "CACHE_URL",
        "CONN_MAX_AGE",
        "TIME_ZONE",
        "USE_X_FORWARDED_PROTO",
    ]
)
# Creates the benchmark's portal user and links the emulator's manager to it.
_CREATE_MANAGER = """
import os
from django.contrib.auth import get_user_model
from fleet.models import FleetAccount
user = get_user_model().objects.create_user(
    username=os.environ["BENCH_USERNAME"], password=os.environ["BENCH_PASSWORD"]
)
account = FleetAccount(user=user, email=os.environ["BENCH_FLEET_EMAIL"])
account.set_password(os.environ["BENCH_FLEET_PASSWORD"])
account.save()
"""


_WRK_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3}


class ServerFailed(RuntimeError):
    """A server did not come up or stopped; the message ends with the tail of its log."""


@dataclass(frozen=True, slots=True)
class Server:
    url: str
    process: subprocess.Popen[bytes]
    log: Path


@dataclass(frozen=True, slots=True)
class PortalUser:
    username: str
    password: str


@dataclass(frozen=True, slots=True)
class Summary:
    """Latencies of one kind of request, in milliseconds."""

    name: str
    count: int
    p50: float
    p95: float
    mean: float


@dataclass(frozen=True, slots=True)
class Load:
    """One load run against one URL: what the client saw."""

    requests: int
    seconds: float
    p50_ms: float
    p99_ms: float
    errors: int  # socket errors, timeouts and answers the client counted as failed


def parse_wrk(output: str, errors: str, returncode: int) -> Load:
    """What `wrk --latency` printed: requests, time, p50/p99, and failures of any kind."""
    done = re.search(r"(\d+) requests in ([\d.]+)(us|ms|s|m),", output)
    percentiles = dict(re.findall(r"^\s+(50|99)\.?0*%\s+([\d.]+\w+)\s*$", output, re.MULTILINE))
    if returncode != 0 or not done or set(percentiles) != {"50", "99"}:
        raise ServerFailed(f"wrk failed (exit {returncode}):\n{output}{errors}")
    socket_errors = re.search(r"Socket errors: (.*)", output)
    failed = sum(map(int, re.findall(r"\d+", socket_errors[1]))) if socket_errors else 0
    if non_2xx := re.search(r"Non-2xx or 3xx responses: (\d+)", output):
        failed += int(non_2xx[1])
    return Load(
        requests=int(done[1]),
        seconds=_milliseconds(done[2] + done[3]) / 1000,
        p50_ms=_milliseconds(percentiles["50"]),
        p99_ms=_milliseconds(percentiles["99"]),
        errors=failed,
    )


def _milliseconds(text: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+)(\w+)", text).groups()
    return float(number) * _WRK_UNITS[unit]


def free_port() -> int:
    """A TCP port free on the loopback interface right now."""
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Let SIGTERM unwind like Ctrl-C, so that every `finally` stops its servers."""

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def running_emulator(workdir: Path, *args: str) -> Iterator[Server]:
    """`python -m emulator` on a free loopback port, with extra `args`."""
    log = workdir / "emulator.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "emulator", "--host", LOOPBACK, "--port", "0", *args],
            cwd=ROOT,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        url = _wait_for_line(process, log)
        _wait_for_health(f"{url}/healthz", process, log)
        yield Server(url=url, process=process, log=log)
    finally:
        stop(process)


def portal_environment(*, database: Path, emulator_url: str) -> dict[str, str]:
    """The environment of a production-like portal on `emulator_url`, with its own database."""
    environment = {
        name: value
        for name, value in os.environ.items()
        if name not in _PORTAL_NAMES and not name.startswith(_PORTAL_PREFIXES)
    }
    environment |= {
        "DJANGO_ENV_FILE": "",
        "DJANGO_SETTINGS_MODULE": "portal.settings",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "DEBUG": "False",
        "DATABASE_URL": f"sqlite:///{database}",
        "FLEET_ENVIRONMENT": "emulator",
        "FLEET_BASE_URL": emulator_url,
        "FLEET_LOGIN_URL": f"{emulator_url}/app",
        "ALLOWED_HOSTS": f"{LOOPBACK},localhost",
        "SESSION_COOKIE_SECURE": "False",
        "CSRF_COOKIE_SECURE": "False",
    }
    return environment


def portal_migrate(environment: dict[str, str]) -> None:
    """Bring the portal's database to the current migrations (a new one: create it,
    a PostgreSQL database included)."""
    url = environment.get("DATABASE_URL", "")
    if ensure_database(url):
        print(f"Created the database {urlsplit(url).path.lstrip('/')!r} on {urlsplit(url).netloc}.")
    _run([sys.executable, "manage.py", "migrate", "--no-input", "-v", "0"], environment)


def ensure_database(url: str) -> bool:
    """Create the PostgreSQL database of `url` (a `--database-url`) if it does not exist.

    Connects to the server's `postgres` database as the URL's user; True when it
    created the database. Other schemes are left as they are.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("postgres", "postgresql", "pgsql"):
        return False
    import psycopg
    from psycopg import sql

    name = unquote(parts.path.lstrip("/"))
    if not name:
        raise ServerFailed(f"{url} names no database")
    maintenance = urlunsplit(("postgresql", parts.netloc, "/postgres", parts.query, ""))
    try:
        with psycopg.connect(maintenance, autocommit=True, connect_timeout=10) as connection:
            found = connection.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", [name]
            ).fetchone()
            if found:
                return False
            connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    except psycopg.Error as error:
        raise ServerFailed(f"creating the database {name!r} failed: {error}") from error
    return True


def portal_empty_webhook_tables(environment: dict[str, str]) -> None:
    """Delete every webhook delivery, fine, notification and unknown key (a reused database)."""
    script = (
        "from fleet.models import Fine, Notification, UnknownWebhookKey, WebhookDelivery\n"
        "for model in (UnknownWebhookKey, WebhookDelivery, Fine, Notification):\n"
        "    model.objects.all().delete()"
    )
    subprocess.run(
        [sys.executable, "manage.py", "shell", "-v", "0", "-c", script],
        cwd=ROOT,
        env=environment,
        check=True,
        capture_output=True,
    )


def portal_call(environment: dict[str, str], function: str) -> Any:
    """What `function` ("package.module:name", taking nothing and returning JSON-able data)
    returns when run in a process of its own with the portal's environment, Django set up:
    how a benchmark reads what the portal left in its database, through its models."""
    module, name = function.split(":")
    script = (
        f"import django, json; django.setup(); import {module} as m; print(json.dumps(m.{name}()))"
    )
    completed = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    if completed.returncode != 0:
        raise ServerFailed(f"reading the portal's database failed:\n{completed.stderr[-2000:]}")
    return json.loads(completed.stdout.splitlines()[-1])


def portal_prepare(environment: dict[str, str]) -> PortalUser:
    """Migrate the portal's database and create a manager linked to the emulator's one."""
    user = PortalUser(username="bench-manager", password=secrets.token_urlsafe(16))
    manage = [sys.executable, "manage.py"]
    portal_migrate(environment)
    _run(
        [*manage, "shell", "-v", "0", "-c", _CREATE_MANAGER],
        environment
        | {
            "BENCH_USERNAME": user.username,
            "BENCH_PASSWORD": user.password,
            "BENCH_FLEET_EMAIL": DEMO_FLEET_EMAIL,
            "BENCH_FLEET_PASSWORD": DEMO_FLEET_PASSWORD,
        },
    )
    return user


@contextmanager
def running_portal(
    environment: dict[str, str],
    workdir: Path,
    *,
    workers: int = 2,
    threads: int = 4,
    extra_args: Sequence[str] = (),
) -> Iterator[Server]:
    """The portal under gunicorn on a free loopback port, as in production.

    `extra_args` go to gunicorn as they are (an access log, for instance).
    """
    url = f"http://{LOOPBACK}:{free_port()}"
    log = workdir / "gunicorn.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "portal.wsgi",
                "--workers",
                str(workers),
                "--threads",
                str(threads),
                "--bind",
                url.removeprefix("http://"),
                # Several benchmarks (or engineers) at once must not share a socket.
                "--no-control-socket",
                *extra_args,
            ],
            cwd=ROOT,
            env=environment,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        _wait_for_health(f"{url}/healthz", process, log)
        yield Server(url=url, process=process, log=log)
    finally:
        stop(process)


@contextmanager
def running_worker(environment: dict[str, str], workdir: Path) -> Iterator[Server]:
    """`manage.py db_worker` on the portal's database, as in production: it processes
    the stored webhook deliveries (and runs the CNH lookups), below the web workers
    (`nice 5`, as deploy/systemd/fleet-portal-worker.service runs it)."""
    log = workdir / "db_worker.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [
                "nice", "-n", "5", sys.executable, "manage.py", "db_worker",
                "--no-reload", "--no-startup-delay", "--interval", "0.2", "--worker-id", "bench",
            ],
            cwd=ROOT, env=environment, stdout=output, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        yield Server(url="", process=process, log=log)
    finally:
        stop(process)


# Run in a Django process of the portal's: from the time given (a Unix time), waits
# until no delivery is `received` and prints when that was.
_WAIT_PROCESSED = """
import sys, time
import django
django.setup()
from fleet.models import DeliveryStatus, WebhookDelivery
not_before, timeout = float(sys.argv[1]), float(sys.argv[2])
time.sleep(max(0.0, not_before - time.time()))
deadline = time.monotonic() + timeout
while WebhookDelivery.objects.filter(status=DeliveryStatus.RECEIVED).exists():
    if time.monotonic() > deadline:
        sys.exit(1)
    time.sleep(0.02)
print(repr(time.time()))
"""


class ProcessedWaiter:
    """Started ahead (Django takes a while to start), from `not_before` (a Unix time)
    it watches the database until the worker has processed every stored delivery."""

    def __init__(
        self, environment: dict[str, str], worker: Server, *, not_before: float, timeout: float
    ) -> None:
        self.worker, self.timeout = worker, timeout
        self.process = subprocess.Popen(
            [sys.executable, "-c", _WAIT_PROCESSED, repr(not_before), str(timeout)],
            cwd=ROOT, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip

    def done_at(self) -> float:
        """The Unix time at which no delivery was waiting any more."""
        output, errors = self.process.communicate()
        if self.process.returncode != 0:
            _fail_if_exited(self.worker.process, self.worker.log)
            raise ServerFailed(
                f"deliveries still received {self.timeout:g} s after the load:\n"
                f"{errors[-2000:]}{_tail(self.worker.log)}"
            )
        return float(output.strip().splitlines()[-1])


def portal_wait_processed(environment: dict[str, str], worker: Server, *, timeout: float) -> float:
    """Seconds until the worker has processed every stored webhook delivery, from now."""
    now = time.time()
    waiter = ProcessedWaiter(environment, worker, not_before=now, timeout=timeout)
    return max(0.0, waiter.done_at() - now)


def bench_main(run: Callable[[Path], int]) -> int:
    """Run a benchmark in a temporary folder: its exit status, 2 when a server failed,
    130 when interrupted (Ctrl-C or SIGTERM), its servers stopped either way."""
    try:
        with sigterm_as_interrupt(), tempfile.TemporaryDirectory(prefix="fleet-bench-") as tmp:
            return run(Path(tmp))
    except ServerFailed as error:
        print(f"A server failed: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\nInterrupted; the servers are stopped.", file=sys.stderr)
        return 130


def add_database_argument(parser: argparse.ArgumentParser) -> None:
    """`--database-url`: a PostgreSQL on this machine instead of the temporary SQLite."""
    parser.add_argument(
        "--database-url",
        type=_loopback_database,
        help="a PostgreSQL on this machine (postgres://user@127.0.0.1:5432/name) instead of "
        "SQLite; the benchmark empties its webhook tables",
    )


def _loopback_database(url: str) -> str:
    if urlsplit(url).hostname not in ("127.0.0.1", "localhost", "::1"):
        raise argparse.ArgumentTypeError("must be on the loopback interface")
    return url


def portal_log_in(session: requests.Session, portal_url: str, user: PortalUser) -> None:
    """Log `session` in through the login form, as a browser does."""
    login_url = f"{portal_url}/accounts/login/"
    session.get(login_url, timeout=10).raise_for_status()
    response = session.post(
        login_url,
        data={
            "csrfmiddlewaretoken": session.cookies["csrftoken"],
            "username": user.username,
            "password": user.password,
        },
        allow_redirects=False,  # the dashboard is not what we measure
        timeout=30,
    )
    if response.status_code != 302 or "sessionid" not in session.cookies:
        raise ServerFailed(f"logging in to the portal failed (HTTP {response.status_code})")


def portal_restart_workers(server: Server, *, workers: int) -> None:
    """Replace every gunicorn worker of `server` by a fresh process (SIGHUP).

    What a process keeps in memory goes with it; the master, its socket and
    the database stay. Returns once `workers` new workers answer.
    """
    old = worker_pids(server)
    server.process.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        _fail_if_exited(server.process, server.log)
        current = worker_pids(server)
        if len(current) == workers and not current & old:
            _wait_for_health(f"{server.url}/healthz", server.process, server.log)
            return
        time.sleep(0.1)
    raise ServerFailed(f"gunicorn did not replace its workers after SIGHUP:\n{_tail(server.log)}")


def worker_pids(server: Server) -> set[int]:
    """The process ids of `server`'s children (gunicorn's workers), from /proc."""
    children = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            # The command name (field 2) may hold spaces: the parent id follows its ")".
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:  # the process ended while we looked
            continue
        if int(fields[1]) == server.process.pid:
            children.add(int(stat.parent.name))
    return children


def upstream_session() -> requests.Session:
    """A keep-alive session with the three headers of spec 5.2, like the portal's client."""
    session = requests.Session()
    signature = hmac.new(
        DEMO_SECRET_KEY.encode(), DEMO_ACCESS_TOKEN.encode(), hashlib.sha256
    ).hexdigest()
    session.headers.update(
        {
            "Authorization": f"Basic {DEMO_ACCESS_TOKEN}",
            "Key": signature,
            "cache-control": "no-cache",
        }
    )
    return session


def ensure_running(server: Server) -> None:
    """Raise `ServerFailed` if `server` has exited (rather than time a dead server)."""
    _fail_if_exited(server.process, server.log)


def stop(process: subprocess.Popen[bytes]) -> None:
    """Stop `process` politely, then firmly."""
    if process.poll() is None:
        process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def summarize(name: str, seconds: Sequence[float]) -> Summary:
    """p50, p95 and mean of `seconds`, in milliseconds."""
    milliseconds = [value * 1000 for value in seconds]
    return Summary(
        name=name,
        count=len(milliseconds),
        p50=statistics.median(milliseconds),
        p95=statistics.quantiles(milliseconds, n=20, method="inclusive")[18],
        mean=statistics.fmean(milliseconds),
    )


def percentile(values: Sequence[float], fraction: float) -> float:
    """The `fraction` quantile of `values` (0.5: the median), by linear interpolation."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no values")
    position = (len(ordered) - 1) * fraction
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _run(command: list[str], environment: dict[str, str]) -> None:
    completed = subprocess.run(
        command, cwd=ROOT, env=environment, capture_output=True, text=True, check=False
    )
    if completed.returncode != 0:
        raise ServerFailed(
            f"{' '.join(command[1:3])} failed (exit {completed.returncode}):\n"
            f"{_tail(completed.stdout + completed.stderr)}"
        )


def _wait_for_line(process: subprocess.Popen[bytes], log: Path) -> str:
    """The URL in the emulator's first line, once it has printed it."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if match := _LISTENING.search(log.read_text(errors="replace")):
            return match.group(1)
        _fail_if_exited(process, log)
        time.sleep(0.05)
    raise ServerFailed(f"the emulator did not say where it listens:\n{_tail(log)}")


def _wait_for_health(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        _fail_if_exited(process, log)
        try:
            if requests.get(url, timeout=2).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.1)
    raise ServerFailed(f"{url} did not answer 200 within {START_TIMEOUT:.0f} s:\n{_tail(log)}")


def _fail_if_exited(process: subprocess.Popen[bytes], log: Path) -> None:
    if process.poll() is not None:
        raise ServerFailed(f"{log.stem} exited with {process.returncode}:\n{_tail(log)}")


def _tail(source: Path | str, lines: int = 20) -> str:
    text = source.read_text(errors="replace") if isinstance(source, Path) else source
    return "\n".join(text.splitlines()[-lines:])
