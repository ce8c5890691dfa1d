"""Fixtures of the tests of deploy/: the portal under gunicorn with its configuration file,
and Prometheus' promtool for deploy/prometheus and deploy/grafana."""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from bench.servers import stop
from tests.conftest import ROOT, _database_url

TOKEN = secrets.token_urlsafe(32)
_LISTENING = re.compile(r"Listening at: http://127\.0\.0\.1:(\d+)")
_START_TIMEOUT = 20.0


@dataclass
class Gunicorn:
    url: str
    port: int
    access_log: Path
    error_log: Path


def _wait_until_serving(process: subprocess.Popen[bytes], error_log: Path) -> int:
    """The port gunicorn listens on, once a worker answers there."""
    deadline = time.monotonic() + _START_TIMEOUT
    port = 0
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"gunicorn stopped:\n{error_log.read_text()}")
        if not port and (match := _LISTENING.search(error_log.read_text())):
            port = int(match.group(1))
        if port:
            try:
                requests.get(f"http://127.0.0.1:{port}/healthz", timeout=2)
                return port
            # A worker's first answer may take longer on a busy machine: ask again.
            except (requests.ConnectionError, requests.Timeout):
                pass
        time.sleep(0.1)
    pytest.fail(f"gunicorn did not start:\n{error_log.read_text()}")


@pytest.fixture
def gunicorn(start_gunicorn: Callable[..., Gunicorn]) -> Gunicorn:
    """One gunicorn worker with deploy/gunicorn.conf.py, on a free loopback port."""
    return start_gunicorn()


@pytest.fixture
def start_gunicorn(tmp_path: Path) -> Iterator[Callable[..., Gunicorn]]:
    """Start gunicorn with deploy/gunicorn.conf.py (`workers`, extra environment); stopped
    when the test ends."""
    processes: list[subprocess.Popen[bytes]] = []

    def start(*, workers: int = 1, **extra: str) -> Gunicorn:
        # Each its own logs (a second server's port is read from its own).
        folder = tmp_path / f"gunicorn-{len(processes)}" if processes else tmp_path
        folder.mkdir(exist_ok=True)
        process, server = _start(folder, workers=workers, extra=extra)
        processes.append(process)
        return server

    yield start
    for process in processes:
        stop(process)


def _start(
    tmp_path: Path, *, workers: int, extra: dict[str, str]
) -> tuple[subprocess.Popen[bytes], Gunicorn]:
    access_log, error_log = tmp_path / "access.log", tmp_path / "error.log"
    error_log.touch()
    environment = (
        {
            name: value
            for name, value in os.environ.items()
            if not name.startswith(("FLEET_", "DJANGO_", "GUNICORN_", "DATABASE_URL"))
        }
        | {
            "DJANGO_SETTINGS_MODULE": "portal.settings",
            "DJANGO_ENV_FILE": "",
            "DJANGO_SECRET_KEY": "gunicorn-test-secret-key-long-enough",
            "FLEET_WEBHOOK_TOKENS": TOKEN,
            "DATABASE_URL": _database_url(),
        }
        | extra
    )
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "--config",
            str(ROOT / "deploy" / "gunicorn.conf.py"),
            "--bind",
            "127.0.0.1:0",  # the port is read from the error log: no race for a free one
            "--workers",
            str(workers),
            "--no-control-socket",  # several test runs at once must not share it
            "--access-logfile",
            str(access_log),
            "--error-logfile",
            str(error_log),
        ],
        cwd=tmp_path,  # the configuration finds the project by itself
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        port = _wait_until_serving(process, error_log)
    except BaseException:
        process.kill()
        process.wait()
        raise
    return process, Gunicorn(f"http://127.0.0.1:{port}", port, access_log, error_log)


@pytest.fixture(scope="session")
def promtool() -> str:
    """Prometheus' promtool (Debian's prometheus package). Missing, the tests that need it
    are skipped loudly, and fail under CI=true: CI must run them."""
    path = shutil.which("promtool")
    if path is None:
        message = (
            "promtool (Debian's prometheus package) is missing: run `make prometheus` "
            "(as root) to install it"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(message, pytrace=False)
        pytest.skip(f"!!! SKIPPED: {message}")
    return path


def promtool_run(promtool: str, *arguments: str, cwd: Path) -> str:
    """Run promtool; its output, or the test fails showing all it said."""
    completed = subprocess.run(
        [promtool, *arguments], cwd=cwd, capture_output=True, text=True, timeout=300
    )
    output = completed.stdout + completed.stderr
    if completed.returncode != 0:
        pytest.fail(
            f"promtool {' '.join(arguments)} failed ({completed.returncode}):\n{output}",
            pytrace=False,
        )
    return output
