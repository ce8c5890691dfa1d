"""The soak's portal brought up as deploy/ ships it, on loopback: a PostgreSQL cluster
and a Redis of its own, the emulator, each host's gunicorn and supervised db_worker
(one checkout each when there are several hosts), nginx in front, Prometheus scraping
every host, and the outgoing webhooks' subscribers. Everything started is stopped by
the `ExitStack` given, whatever happens to the run.
"""

from __future__ import annotations

import argparse
import secrets
import shutil
import subprocess
import sys
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import requests

from bench.nginx import start_nginx
from bench.portal_setup import portal_environment, portal_migrate
from bench.servers import ROOT, ServerFailed, running_emulator, stop
from bench.soak_prometheus import Prometheus, start_prometheus
from bench.soak_services import Postgres, Redis, Supervised, read_unit, start_gunicorn
from bench.soak_subscribers import Subscribers

GUNICORN_WORKERS = 4
VEHICLES_TTL = 10.0  # the portal's FLEET_VEHICLES_TTL here: several refreshes in a run
READ_TIMEOUT = 10.0  # the portal's FLEET_READ_TIMEOUT (its default)


@dataclass
class Host:
    """One host of the portal: its checkout, gunicorn and db_worker."""

    root: Path
    gunicorn: subprocess.Popen[bytes]
    port: int
    worker: Supervised


@dataclass
class Portal:
    """The portal of the run: its servers, where to reach them, and its tokens."""

    environment: dict[str, str]
    postgres: Postgres
    redis: Redis
    hosts: list[Host]
    emulator_url: str
    nginx_url: str
    nginx_port: int
    token: str
    metrics_token: str
    subscribers: Subscribers
    prometheus: Prometheus

    @property
    def gunicorn(self) -> subprocess.Popen[bytes]:
        return self.hosts[0].gunicorn  # the faults strike the first host

    @property
    def worker(self) -> Supervised:
        return self.hosts[0].worker


def start_portal(folder: Path, args: argparse.Namespace, stack: ExitStack) -> Portal:
    """Every server of the run, each in `folder` and stopped by `stack`; the portal
    migrated and its static files collected."""
    postgres = Postgres(folder / "postgres")
    postgres.create()
    postgres.start()
    stack.callback(postgres.stop)
    redis = Redis(folder / "redis")
    redis.start()
    stack.callback(redis.stop)
    emulator = stack.enter_context(
        running_emulator(
            folder,
            *("--vehicles", str(args.vehicles), "--cnh-timeout-wait", "3", "--handovers"),
        )
    )
    requests.post(f"{emulator.url}/_emulator/cnh", json={"retry_after": 2}, timeout=10)
    token = secrets.token_urlsafe(32)
    metrics_token = secrets.token_urlsafe(32)
    environment = portal_environment(
        database=folder / "unused.sqlite3", emulator_url=emulator.url
    ) | {
        "DATABASE_URL": postgres.url,
        "CACHE_URL": redis.url,
        "FLEET_WEBHOOK_TOKENS": token,
        "FLEET_WEBHOOK_PROXY_COUNT": "1",  # nginx in front
        "FLEET_CNH_DAILY_LIMIT": "1000000",  # officers look up all day long here
        "FLEET_READ_TIMEOUT": str(READ_TIMEOUT),
        "SECURE_SSL_REDIRECT": "False",  # plain HTTP on loopback
        "ALERTS_WEBHOOK_ALLOW_PRIVATE": "true",  # the subscribers are on loopback
        "ALERTS_SEND_LEASE_SECONDS": "60",  # a run lasts 30 s and a POST 10 s at most
        "FLEET_VEHICLES_TTL": str(VEHICLES_TTL),
        "METRICS_TOKEN": metrics_token,
    }
    portal_migrate(environment)
    manage(environment, "collectstatic", "--no-input", "-v", "0")
    hosts = []
    for number in range(args.hosts):
        place = folder / f"host-{number + 1}"
        place.mkdir()
        root = ROOT if args.hosts == 1 else _checkout_copy(place / "fleet-portal")
        # Its processes' metrics, summed by its /metrics (deploy/systemd's runtime folder).
        here = environment | {"PROMETHEUS_MULTIPROC_DIR": str(place / "metrics")}
        gunicorn, port = start_gunicorn(here, place, workers=GUNICORN_WORKERS, root=root)
        stack.callback(stop, gunicorn)
        worker = Supervised(
            "db_worker",
            read_unit("fleet-portal-worker.service", root=root),
            here,
            place / "worker.log",
        )
        stack.callback(worker.stop)
        hosts.append(Host(root, gunicorn, port, worker))
    nginx = start_nginx(
        folder,
        upstream=[host.port for host in hosts],
        static=ROOT / "staticfiles",
        connections=4096,
    )
    stack.callback(stop, nginx.process)
    prometheus = start_prometheus(
        folder, targets=[f"127.0.0.1:{host.port}" for host in hosts], token=metrics_token
    )
    stack.callback(stop, prometheus.process)
    subscribers = Subscribers()
    stack.callback(subscribers.stop)
    return Portal(
        environment,
        postgres,
        redis,
        hosts,
        emulator.url,
        nginx.url,
        nginx.port,
        token,
        metrics_token,
        subscribers,
        prometheus,
    )


# What a host's copy leaves out: what the repository does not ship, and this checkout's
# own state (its virtualenv stays shared: the same Python packages on every host).
_NOT_COPIED = shutil.ignore_patterns(
    ".git", ".venv", "node_modules", "__pycache__", ".*_cache", "*.sqlite3", ".env", "media"
)


def _checkout_copy(destination: Path) -> Path:
    """A host's own copy of this checkout (its code, compiled catalogues and collected
    static files), as a deployment puts one on each host: nothing on disk is shared."""

    def ignored(directory: str, names: list[str]) -> set[str]:
        # Not the soak's own folder, should `--keep` have put it inside the checkout.
        inside = {name for name in names if Path(directory, name) in destination.parents}
        return set(_NOT_COPIED(directory, names)) | inside

    shutil.copytree(ROOT, destination, ignore=ignored, symlinks=True)
    return destination


def manage(environment: dict[str, str], *args: str, stdin: str | None = None) -> str:
    """`manage.py args` in the portal's `environment`, fed `stdin`: what it printed."""
    completed = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=environment,
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    if completed.returncode != 0:
        raise ServerFailed(f"manage.py {args[0]} failed:\n{completed.stderr[-2000:]}")
    return completed.stdout
