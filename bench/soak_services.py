"""The soak's own servers: PostgreSQL and Redis it may kill, and the portal's processes
started as deploy/systemd's units start them.

PostgreSQL is a new cluster (`initdb` in the run's folder, Debian's package) and
Redis a `redis-server` that keeps nothing on disk, each on a free loopback
port: killing and restarting them touches none of the machine's services.

The portal's command lines come from the shipped units, not from a copy here:
`ExecStart` of deploy/systemd/fleet-portal.service and fleet-portal-worker.service,
with the host's paths (`/srv/fleet-portal`) read as this checkout and its
virtualenv as the running Python's; `Nice=` and `RestartSec=` are applied
as systemd applies them (the supervisor restarts a process that stops, like
`Restart=always`).
"""

from __future__ import annotations

import glob
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.servers import LOOPBACK, ROOT, ServerFailed, free_port, stop

HOST_ROOT = "/srv/fleet-portal"
_START_TIMEOUT = 30.0


def _postgres_bin() -> Path:
    """The folder of Debian's PostgreSQL server programs (the newest installed)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"), reverse=True)
    if found:
        return Path(found[0]).parent
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).resolve().parent
    raise ServerFailed("PostgreSQL's server programs are missing: `apt-get install postgresql`")


def _as_postgres_user() -> dict[str, Any]:
    """PostgreSQL refuses to run as root: as root, run it as the `postgres` user."""
    if os.geteuid() != 0:
        return {}
    return {"user": "postgres", "group": "postgres", "extra_groups": []}


def _wait_for_port(port: int, process: subprocess.Popen[bytes], log: Path, what: str) -> None:
    import socket

    deadline = time.monotonic() + _START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ServerFailed(f"{what} stopped:\n{log.read_text(errors='replace')[-2000:]}")
        try:
            with socket.create_connection((LOOPBACK, port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise ServerFailed(f"{what} did not start:\n{log.read_text(errors='replace')[-2000:]}")


@dataclass
class Postgres:
    """A PostgreSQL cluster of the soak's own."""

    folder: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"postgres://postgres@{LOOPBACK}:{self.port}/fleet_portal"

    def create(self) -> None:
        self.folder.mkdir(parents=True)
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres", "postgres")
            # The server, as `postgres`, must reach its folder inside the run's.
            self.folder.parent.chmod(0o711)
        data = self.folder / "data"
        completed = subprocess.run(
            [
                str(_postgres_bin() / "initdb"),
                "-D", str(data), "-U", "postgres", "--auth=trust", "--no-sync",
                "--encoding=UTF8", "--locale=C",
            ],
            capture_output=True,
            text=True,
            check=False,
            **_as_postgres_user(),
        )  # fmt: skip
        if completed.returncode != 0:
            raise ServerFailed(f"initdb failed:\n{completed.stdout}{completed.stderr}")

    def start(self) -> None:
        log = self.folder / "postgres.log"
        with log.open("ab") as output:
            self.process = subprocess.Popen(
                [
                    str(_postgres_bin() / "postgres"),
                    "-D", str(self.folder / "data"), "-p", str(self.port),
                    "-c", f"listen_addresses={LOOPBACK}",
                    "-c", f"unix_socket_directories={self.folder}",
                    "-c", "max_connections=100",
                ],
                stdout=output,
                stderr=subprocess.STDOUT,
                **_as_postgres_user(),
            )  # fmt: skip
        _wait_for_port(self.port, self.process, log, "PostgreSQL")
        self._wait_ready()

    def _wait_ready(self) -> None:
        import psycopg

        deadline = time.monotonic() + _START_TIMEOUT
        while True:
            try:
                url = f"postgresql://postgres@{LOOPBACK}:{self.port}/postgres"
                psycopg.connect(url, connect_timeout=2).close()
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def stop(self) -> None:
        """A fast shutdown (SIGINT): sessions are cut, what was committed stays."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@dataclass
class Redis:
    """A redis-server of the soak's own, keeping nothing on disk (as the machine's)."""

    folder: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://{LOOPBACK}:{self.port}/1"

    def start(self) -> None:
        program = shutil.which("redis-server") or "/usr/bin/redis-server"
        if not os.path.exists(program):
            raise ServerFailed("redis-server is missing: `apt-get install redis-server`")
        self.folder.mkdir(parents=True, exist_ok=True)
        log = self.folder / "redis.log"
        with log.open("ab") as output:
            self.process = subprocess.Popen(
                [
                    program,
                    "--bind", LOOPBACK, "--port", str(self.port),
                    "--save", "", "--appendonly", "no", "--dir", str(self.folder),
                ],
                stdout=output,
                stderr=subprocess.STDOUT,
            )  # fmt: skip
        _wait_for_port(self.port, self.process, log, "Redis")

    def stop(self) -> None:
        if self.process is not None:
            stop(self.process)


@dataclass(frozen=True)
class Unit:
    """What the soak takes from a shipped systemd unit."""

    command: list[str]
    nice: int
    restart_seconds: float
    root: Path  # WorkingDirectory=: the checkout it runs in


def read_unit(name: str, *, root: Path = ROOT) -> Unit:
    """deploy/systemd/`name` as the checkout at `root` runs it: `ExecStart` with the host's
    paths made that checkout's, `Nice=` and `RestartSec=`."""
    settings: dict[str, str] = {}
    for line in (root / "deploy" / "systemd" / name).read_text().splitlines():
        key, equals, value = line.partition("=")
        if equals and not line.startswith("#"):
            settings[key.strip()] = value.strip()
    command = []
    for word in shlex.split(settings["ExecStart"]):
        if word == f"{HOST_ROOT}/.venv/bin/python":
            command.append(sys.executable)
        elif word.startswith(f"{HOST_ROOT}/.venv/bin/"):
            command += [sys.executable, "-m", word.rsplit("/", 1)[1]]
        else:
            command.append(word.replace(HOST_ROOT, str(root)))
    return Unit(
        command,
        int(settings.get("Nice", "0")),
        float(settings.get("RestartSec", "0.1")),
        root,
    )


class Supervised:
    """A process kept running as systemd's `Restart=always` keeps it: started again
    `RestartSec` after it stops, whatever stopped it."""

    def __init__(self, name: str, unit: Unit, environment: dict[str, str], log: Path) -> None:
        self.name, self.unit, self.environment, self.log = name, unit, environment, log
        self.restarts = 0
        self.process = self._start()
        self._stopping = threading.Event()
        self._held = threading.Event()
        self._thread = threading.Thread(target=self._watch, name=f"supervise {name}", daemon=True)
        self._thread.start()

    def _start(self) -> subprocess.Popen[bytes]:
        nice = ["nice", "-n", str(self.unit.nice)] if self.unit.nice else []
        with self.log.open("ab") as output:
            return subprocess.Popen(
                [*nice, *self.unit.command],
                cwd=self.unit.root,
                env=self.environment,
                stdout=output,
                stderr=subprocess.STDOUT,
            )

    def _watch(self) -> None:
        while not self._stopping.wait(0.2):
            if self.process.poll() is not None and not self._held.is_set():
                if self._stopping.wait(self.unit.restart_seconds):
                    return
                self.restarts += 1
                self.process = self._start()

    def kill(self) -> int:
        """SIGKILL the process (the supervisor starts it again); its pid."""
        pid = self.process.pid
        self.process.kill()
        return pid

    def hold(self) -> int:
        """SIGKILL the process and keep it down (a host whose worker is gone); its pid."""
        self._held.set()
        return self.kill()

    def release(self) -> None:
        """Let the supervisor start it again, `RestartSec` from now."""
        self._held.clear()

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join()
        stop(self.process)


def gunicorn_worker_pids(master: subprocess.Popen[bytes]) -> set[int]:
    """The pids of gunicorn's workers: the master's children, from /proc."""
    children = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[1]) == master.pid:
            children.add(int(stat.parent.name))
    return children


def start_gunicorn(
    environment: dict[str, str], folder: Path, *, workers: int, root: Path = ROOT
) -> tuple[subprocess.Popen[bytes], int]:
    """gunicorn as deploy/systemd/fleet-portal.service starts it (deploy/gunicorn.conf.py)
    in the checkout at `root`, on a free loopback port with `workers` workers; returns
    once it answers."""
    port = free_port()
    unit = read_unit("fleet-portal.service", root=root)
    log = folder / "gunicorn.log"
    environment = environment | {
        "GUNICORN_BIND": f"{LOOPBACK}:{port}",
        "GUNICORN_WORKERS": str(workers),
        # Another gunicorn on this machine (a test run, `make run`) must not share its socket.
        "GUNICORN_CMD_ARGS": "--no-control-socket",
    }
    with log.open("ab") as output:
        process = subprocess.Popen(
            unit.command, cwd=root, env=environment, stdout=output, stderr=subprocess.STDOUT
        )
    _wait_for_port(port, process, log, "gunicorn")
    deadline = time.monotonic() + _START_TIMEOUT
    while len(gunicorn_worker_pids(process)) < workers and time.monotonic() < deadline:
        time.sleep(0.1)
    return process, port
