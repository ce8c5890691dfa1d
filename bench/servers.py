"""The emulator and the portal as real servers, for the benchmarks.

Each server runs on a free loopback port with its output in a log file, and
is stopped by the context manager that started it, also on Ctrl-C or
SIGTERM (`bench_main`). Also here: a session to the emulator like the
portal's client, and Django processes of the portal's own that read what it
stored (`portal_call`, `ProcessedWaiter`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import signal
import socket
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

import requests

ROOT = Path(__file__).resolve().parent.parent
LOOPBACK = "127.0.0.1"
START_TIMEOUT = 120.0  # a million vehicles generated on a busy machine

# The emulator's public demo credentials (emulator/README.md).
DEMO_ACCESS_TOKEN = "demo-access-token"
DEMO_SECRET_KEY = "demo-secret-key"

_LISTENING = re.compile(r"listening on (http://\S+)")


class ServerFailed(RuntimeError):
    """A server did not come up or stopped; the message ends with the tail of its log."""


@dataclass(frozen=True, slots=True)
class Server:
    url: str
    process: subprocess.Popen[bytes]
    log: Path


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
                f"{errors[-2000:]}{log_tail(self.worker.log)}"
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


def portal_call(environment: dict[str, str], function: str) -> Any:
    """What `function` ("package.module:name", taking nothing and returning JSON-able data)
    returns when run in a process of its own with the portal's environment, Django set up:
    how a benchmark reads what the portal left in its database, through its models."""
    module, name = function.split(":")
    script = (
        f"import django, json; django.setup(); import {module} as m; print(json.dumps(m.{name}()))"
    )
    output = python_run(["-c", script], environment, what="reading the portal's database")
    return json.loads(output.splitlines()[-1])


def python_run(
    args: Sequence[str], environment: dict[str, str], *, what: str, timeout: float = 300
) -> str:
    """`python ARGS` in the project's folder with `environment`, run to its end: what it
    printed; ServerFailed (saying `what` failed, and the end of its output) if it failed."""
    completed = subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )
    if completed.returncode != 0:
        raise ServerFailed(
            f"{what} failed (exit {completed.returncode}):\n"
            f"{log_tail(completed.stdout + completed.stderr)}"
        )
    return completed.stdout


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
    raise ServerFailed(
        f"gunicorn did not replace its workers after SIGHUP:\n{log_tail(server.log)}"
    )


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


def upstream_headers() -> dict[str, str]:
    """The three headers of spec 5.2 for the demo pair, as the portal's client sends them."""
    signature = hmac.new(
        DEMO_SECRET_KEY.encode(), DEMO_ACCESS_TOKEN.encode(), hashlib.sha256
    ).hexdigest()
    return {
        "Authorization": f"Basic {DEMO_ACCESS_TOKEN}",
        "Key": signature,
        "cache-control": "no-cache",
    }


def upstream_session() -> requests.Session:
    """A keep-alive session with the three headers of spec 5.2, like the portal's client."""
    session = requests.Session()
    session.headers.update(upstream_headers())
    return session


def ensure_running(server: Server) -> None:
    """Raise `ServerFailed` if `server` has exited (rather than time a dead server)."""
    _fail_if_exited(server.process, server.log)


def stop(process: subprocess.Popen[Any]) -> None:
    """Stop `process` politely, then firmly."""
    if process.poll() is None:
        process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _wait_for_line(process: subprocess.Popen[bytes], log: Path) -> str:
    """The URL in the emulator's first line, once it has printed it."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if match := _LISTENING.search(log.read_text(errors="replace")):
            return match.group(1)
        _fail_if_exited(process, log)
        time.sleep(0.05)
    raise ServerFailed(f"the emulator did not say where it listens:\n{log_tail(log)}")


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
    raise ServerFailed(f"{url} did not answer 200 within {START_TIMEOUT:.0f} s:\n{log_tail(log)}")


def _fail_if_exited(process: subprocess.Popen[bytes], log: Path) -> None:
    if process.poll() is not None:
        raise ServerFailed(f"{log.stem} exited with {process.returncode}:\n{log_tail(log)}")


def log_tail(source: Path | str, lines: int = 20) -> str:
    text = source.read_text(errors="replace") if isinstance(source, Path) else source
    return "\n".join(text.splitlines()[-lines:])
