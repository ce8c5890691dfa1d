"""The soak: the production shape on loopback, under mixed traffic, while things fail.

    python -m bench.soak [--seconds 600]        # or: make soak SOAK_SECONDS=600

It brings up deploy/ as shipped: nginx (deploy/nginx, `bench.nginx`'s frame)
in front of gunicorn (deploy/gunicorn.conf.py, 4 workers, the command line of
deploy/systemd/fleet-portal.service), `manage.py db_worker` as
fleet-portal-worker.service runs it (Nice=5, restarted like Restart=always),
a PostgreSQL cluster and a Redis of its own (`bench.soak_services`), and the
emulator with a fleet of 10,000 vehicles. Then locust, headless, drives the
traffic of `bench/soak_locust.py` for `--seconds`, on this timeline (fractions
of the run):

    0.00  managers sign in and work; CNH officers send batches
    0.15  50 slowloris connections open on nginx, and stay open to the end
    0.30  webhook burst (--burst-rate a second, 30 s at most; 20 % duplicates,
          shuffled); during it one gunicorn worker, then the db_worker, SIGKILLed
    0.55  the emulator answers 503 for a stretch, then 429 with Retry-After,
          then stalls calls past the portal's read timeout, then malformed JSON
    0.76  Redis restarted (down for 2 s)
    0.78  a second webhook burst; during it PostgreSQL restarted (fast shutdown,
          down for 2 s)
    0.85  calm: the senders' retries get through

Three managers subscribe to outgoing webhooks (`bench.soak_subscribers`): a
healthy receiver that counts what it gets, one that drips its answer a byte a
second and one that never answers; the portal's processes allow these loopback
addresses (ALERTS_WEBHOOK_ALLOW_PRIVATE) and hold claimed alerts for 60 s
(ALERTS_SEND_LEASE_SECONDS), so that those of the killed worker go out before
the end.

With `--hosts 2` (`make soak SOAK_HOSTS=2`) the portal runs as two hosts would: two
copies of the checkout, each with its gunicorn (the shipped unit, in its own working
directory) and its db_worker, behind one nginx upstream, against the one PostgreSQL and
Redis; the faults strike the first host. Either way Debian's Prometheus
(`bench.soak_prometheus`) scrapes each host's `/metrics` every second and evaluates the
shipped alert rules (deploy/prometheus).

The first two stretches hold no fault: the p95 of the normal pages in each
is the "without / with the slow connections" comparison. After the traffic
stops, it waits for the worker to process every stored delivery and to end
every CNH lookup, then reads the portal's database and prints:

- requests, p50 / p95 / p99 per route, and their statuses;
- every 5xx (or request without an answer) with the injected fault that
  explains it; those no fault explains are "unexplained";
- webhook deliveries sent (acknowledged) / stored / processed; lost (acknowledged
  and not stored); duplicate effects (a record held twice or not in the final
  state its events lead to);
- CNH lookups by status; stuck ones (not finished, or failed without a reason);
- what each subscriber got: the healthy one each of its alerts once (a repeat only
  for the worker's kill), none lost; the POSTs the two others held, and how they ended;
- the metrics Prometheus scraped beside its own counts: requests by status, deliveries by
  stage, CNH lookups by outcome; the vehicle list's fetches at the emulator per refresh
  (1: one host fetches it, never two); then, the worker-lag alert firing while every
  db_worker is killed and resolving once they are back; `/metrics` through nginx without
  the token (401), and no plate, CPF, e-mail or token in a scrape;
- who had each vehicle: the history the hosts wrote against the emulator's record of
  its hand-overs (`bench.soak_history`; the emulator's clock moved so that vehicles
  change hands mid-traffic), 0 differences;
- the last line: `soak: R requests, E unexplained 5xx, L lost deliveries, S stuck lookups`.

Exit status 0 when E, L, S and the duplicate effects are all 0 (and every
delivery got through, the healthy subscriber got every alert and every metrics check
holds), 1 otherwise, 2 when a server could not start, 130 when interrupted.
Needs Debian's nginx, postgresql, redis-server and prometheus, and locust
(requirements-soak.txt; `make soak` installs them).
"""

from __future__ import annotations

import argparse
import base64
import importlib.util
import json
import os
import secrets
import shutil
import subprocess
import sys
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

from bench import soak_history, soak_subscribers, webhooks_reliability
from bench.nginx import NGINX, start_nginx
from bench.portal_setup import (
    DEMO_FLEET_EMAIL,
    DEMO_FLEET_PASSWORD,
    portal_environment,
    portal_migrate,
)
from bench.servers import (
    ROOT,
    ServerFailed,
    bench_main,
    portal_call,
    running_emulator,
    stop,
    upstream_session,
)
from bench.soak_history import Placed, history_report, place_handovers
from bench.soak_metrics import print_metrics
from bench.soak_prometheus import Prometheus, start_prometheus
from bench.soak_services import (
    Postgres,
    Redis,
    Supervised,
    gunicorn_worker_pids,
    read_unit,
    start_gunicorn,
)
from bench.soak_slow import SlowConnections
from bench.soak_subscribers import DESCRIPTION, HEALTHY, SUBSCRIBE, Interruption, Subscribers
from bench.stats import percentile

GUNICORN_WORKERS = 4
VEHICLES_TTL = 10.0  # the portal's FLEET_VEHICLES_TTL here: several refreshes in a run
LAG_ALERT = "FleetPortalWorkerLagging"  # deploy/prometheus/fleet-portal-rules.yml
DOWN_SECONDS = 2.0  # how long Redis and PostgreSQL stay down when restarted
READ_TIMEOUT = 10.0  # the portal's FLEET_READ_TIMEOUT (its default)
# Pages whose p95 is compared without and with the slow connections.
NORMAL_PAGES = frozenset(
    ["/", "/vehicles/?page", "/vehicles/?q", "/fines/", "/fines/?plate", "/notifications/"]
)
FINAL_LOOKUP_STATUSES = frozenset(["done", "failed", "unknown"])
PROCESSED_STATUSES = frozenset(["processed", "duplicate", "invalid"])


# --- The timeline ------------------------------------------------------------------


@dataclass
class Fault:
    """An injected fault: what, from when to when (seconds into the run), and for how long
    after its end it may still explain a failure (a reconnection, a retry's wait)."""

    name: str
    start: float
    end: float = 0.0
    grace: float = 5.0

    def explains(self, request: Request) -> bool:
        """Whether `request` was under way while the fault acted."""
        return request.at <= max(self.end, self.start) + self.grace and request.ended >= self.start


@dataclass
class Timeline:
    seconds: float
    burst_rate: int
    bursts: list[dict[str, float]] = field(default_factory=list)

    def __post_init__(self) -> None:
        first = min(30.0, self.seconds / 3)
        second = min(30.0, self.seconds * 0.06)
        for start, length in ((0.30 * self.seconds, first), (0.78 * self.seconds, second)):
            self.bursts.append({"start": start, "end": start + length, "rate": self.burst_rate})

    def at(self, fraction: float) -> float:
        return fraction * self.seconds

    @property
    def deliveries(self) -> int:
        return round(sum((b["end"] - b["start"]) * b["rate"] for b in self.bursts))

    @property
    def without_slow(self) -> tuple[float, float]:
        return self.at(0.05), self.at(0.15)  # the sign-ins of the start left out

    @property
    def with_slow(self) -> tuple[float, float]:
        return self.at(0.16), self.at(0.30)


# --- The run -----------------------------------------------------------------------


@dataclass
class Host:
    """One host of the portal: its checkout, gunicorn and db_worker."""

    root: Path
    gunicorn: subprocess.Popen[bytes]
    port: int
    worker: Supervised


@dataclass
class Portal:
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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--seconds",
        type=int,
        default=int(os.environ.get("SOAK_SECONDS") or 600),
        help="how long the traffic runs (default: $SOAK_SECONDS, else 600)",
    )
    parser.add_argument("--managers", type=int, default=12, help="managers at work (12)")
    parser.add_argument("--cnh-officers", type=int, default=2, help="CNH officers (2)")
    parser.add_argument("--senders", type=int, default=40, help="webhook connections (40)")
    parser.add_argument("--burst-rate", type=int, default=220, help="deliveries/s in bursts")
    parser.add_argument("--slow", type=int, default=50, help="slowloris connections (50)")
    parser.add_argument("--vehicles", type=int, default=10_000, help="the fleet's size")
    parser.add_argument(
        "--hosts",
        type=int,
        default=int(os.environ.get("SOAK_HOSTS") or 1),
        help="portal hosts, each a gunicorn and a db_worker (default: $SOAK_HOSTS, else 1)",
    )
    parser.add_argument(
        "--keep",
        type=Path,
        metavar="FOLDER",
        help="run in FOLDER (new) and keep it: every server's log, the request log, the plan",
    )
    args = parser.parse_args(argv)
    if args.seconds < 30:
        parser.error("--seconds must be at least 30")
    if args.hosts < 1:
        parser.error("--hosts must be at least 1")
    if args.keep:
        args.keep.mkdir(parents=True)
        return bench_main(lambda _temporary: _soak(args.keep.resolve(), args))
    return bench_main(lambda folder: _soak(folder, args))


def _soak(folder: Path, args: argparse.Namespace) -> int:
    _check_tools()
    timeline = Timeline(float(args.seconds), args.burst_rate)
    with ExitStack() as stack:
        portal = _start(folder, args, stack)
        plan = _plan(folder, args, portal, timeline)
        # A whole hour of the emulator's clock, when vehicles change hands, mid-traffic.
        placed = place_handovers(portal.emulator_url, at=timeline.at(0.45))
        print(f"Traffic for {args.seconds} s through {portal.nginx_url} …", flush=True)
        slow = SlowConnections(portal.nginx_port, args.slow)
        stack.callback(slow.stop)
        faults = _drive(folder, plan, portal, timeline, slow)
        slow.stop()
        print("Traffic over; waiting for the worker to finish …", flush=True)
        # A CNH lookup whose worker died ends after its lease (fleet.services.cnh), and so
        # do the alerts it had claimed.
        drained = _drain(portal, timeout=max(180.0, args.seconds / 4))
        state = portal_call(portal.environment, "bench.soak:portal_state")
        return _report(plan, timeline, faults, slow, state, drained, portal, placed)
    return 2  # pragma: no cover (ExitStack does not swallow)


def _check_tools() -> None:
    if importlib.util.find_spec("locust") is None:
        raise ServerFailed("locust is not installed: `make soak` installs requirements-soak.txt")
    if not os.path.exists(NGINX):
        raise ServerFailed("nginx is missing: `make nginx` installs Debian's package")


def _start(folder: Path, args: argparse.Namespace, stack: ExitStack) -> Portal:
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
    _manage(environment, "collectstatic", "--no-input", "-v", "0")
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


def _manage(environment: dict[str, str], *args: str, stdin: str | None = None) -> str:
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


_CREATE_USERS = """
import json, sys
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from fleet.models import FleetAccount
# They see the whole fleet (no vehicle groups): every fine's alert is theirs.
whole_fleet = Permission.objects.get(content_type__app_label="fleet", codename="view_whole_fleet")
for person in json.load(sys.stdin):
    user = get_user_model().objects.create_user(
        username=person["username"], password=person["password"]
    )
    user.user_permissions.add(whole_fleet)
    account = FleetAccount(user=user, email=person["fleet_email"])
    account.set_password(person["fleet_password"])
    account.save()
"""


def _plan(
    folder: Path, args: argparse.Namespace, portal: Portal, timeline: Timeline
) -> dict[str, Any]:
    """Users, plates and deliveries for the locust file, written to plan.json."""
    people = [
        {
            "username": f"soak-{role}-{number}",
            "password": secrets.token_urlsafe(16),
            "address": f"127.0.{1 + index // 200}.{10 + index % 200}",
            "role": role,
        }
        for index, (role, number) in enumerate(
            [("manager", n) for n in range(args.managers)]
            + [("cnh", n) for n in range(args.cnh_officers)]
        )
    ]
    fleet = {"fleet_email": DEMO_FLEET_EMAIL, "fleet_password": DEMO_FLEET_PASSWORD}
    _manage(
        portal.environment,
        "shell",
        "-v",
        "0",
        "-c",
        _CREATE_USERS,
        stdin=json.dumps([person | fleet for person in people]),
    )
    managers = [person["username"] for person in people if person["role"] == "manager"]
    subscriptions = portal.subscribers.subscriptions(managers)
    _manage(
        portal.environment, "shell", "-v", "0", "-c", SUBSCRIBE, stdin=json.dumps(subscriptions)
    )
    cars = upstream_session().get(f"{portal.emulator_url}/key/list-cars", timeout=60)
    plates = [car["car_plate"] for car in cars.json()["cars"]["data"]]
    # That look at the fleet, and any before it, are the soak's own fetches, not the portal's.
    setup_fetches = len(
        requests.get(
            f"{portal.emulator_url}/_emulator/answers",
            params={"route": "GET /key/list-cars"},
            timeout=10,
        ).json()
    )

    from emulator.webhooks import generate  # the emulator's own sender's events

    batch = generate(
        timeline.deliveries, seed=21, duplicates=0.2, malformed=0.02, shuffle=True, plates=plates
    )
    with (folder / "deliveries.jsonl").open("w") as out:
        for delivery in batch.deliveries:
            body = base64.b64encode(delivery.body).decode()
            out.write(json.dumps({"id": str(uuid.uuid4()), "body": body}) + "\n")
    plan: dict[str, Any] = {
        "start": 0.0,  # set when the traffic starts
        "managers": [p for p in people if p["role"] == "manager"],
        "cnh_users": [p for p in people if p["role"] == "cnh"],
        "plates": plates,
        "setup_fetches": setup_fetches,
        "senders": args.senders,
        "bursts": timeline.bursts,
        "webhook_path": f"/webhooks/fleet/{portal.token}/",
        "deliveries": str(folder / "deliveries.jsonl"),
        "request_log": str(folder / "requests.jsonl"),
        "acknowledged_log": str(folder / "acknowledged.txt"),
        "manifest": batch.manifest(),
        "sent": len(batch.deliveries),
    }
    return plan


def _drive(
    folder: Path,
    plan: dict[str, Any],
    portal: Portal,
    timeline: Timeline,
    slow: SlowConnections,
) -> list[Fault]:
    """Run locust for the timeline and inject the faults on it; the faults, timed."""
    lead = 3.0  # locust imports and signs the users in meanwhile
    start = time.time() + lead
    plan["start"] = start
    (folder / "plan.json").write_text(
        json.dumps({k: v for k, v in plan.items() if k != "manifest"})
    )
    users = len(plan["managers"]) + len(plan["cnh_users"]) + plan["senders"]
    environment = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("DJANGO_", "FLEET_", "DATABASE_", "CACHE_"))
    }
    log = folder / "locust.log"
    with log.open("wb") as output:
        locust = subprocess.Popen(
            [
                sys.executable, "-m", "locust", "-f", str(ROOT / "bench" / "soak_locust.py"),
                "--headless", "--host", portal.nginx_url, "--users", str(users),
                "--spawn-rate", str(users), "--run-time", f"{int(lead + timeline.seconds)}s",
                "--stop-timeout", "20", "--only-summary", "--loglevel", "WARNING",
                "--exit-code-on-error", "0",
            ],
            cwd=ROOT,
            env=environment | {"SOAK_PLAN": str(folder / "plan.json")},
            stdout=output,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
    faults: list[Fault] = []
    try:
        for moment, action in _fault_schedule(portal, timeline, slow, faults):
            while time.time() < start + moment:
                if locust.poll() is not None:
                    raise ServerFailed(f"locust stopped:\n{log.read_text()[-3000:]}")
                time.sleep(min(0.2, max(0.0, start + moment - time.time())))
            action(time.time() - start)
        locust.wait(timeout=timeline.seconds + 120)
    finally:
        stop(locust)
    return faults


Action = Callable[[float], None]


def _fault_schedule(
    portal: Portal, timeline: Timeline, slow: SlowConnections, faults: list[Fault]
) -> list[tuple[float, Action]]:
    control = f"{portal.emulator_url}/_emulator/faults"
    at = timeline.at
    first, second = timeline.bursts

    def emulator_fault(
        arm_at: float, name: str, fault: dict[str, Any], *, grace: float
    ) -> list[tuple[float, Action]]:
        record = Fault(f"emulator {name}", 0.0, grace=grace)

        def arm(now: float) -> None:
            record.start = now
            requests.post(control, json={"route": "*", **fault}, timeout=10).raise_for_status()
            faults.append(record)

        def clear(now: float) -> None:
            requests.delete(control, timeout=10).raise_for_status()
            record.end = now

        return [(arm_at, arm), (arm_at + at(0.04), clear)]

    def kill_gunicorn_worker(now: float) -> None:
        pid = min(gunicorn_worker_pids(portal.gunicorn))
        os.kill(pid, 9)
        # Requests under way on it get nginx's 502; so may the next on its kept-alive
        # connections.
        faults.append(Fault(f"gunicorn worker {pid} SIGKILLed", now, now, grace=3))

    def kill_db_worker(now: float) -> None:
        pid = portal.worker.kill()
        faults.append(Fault(f"db_worker {pid} SIGKILLed", now, now, grace=0))

    def restart(name: str, server: Postgres | Redis, grace: float) -> Action:
        def action(now: float) -> None:
            began = time.monotonic()
            server.stop()
            time.sleep(DOWN_SECONDS)  # as long as a restart on a busy host takes
            server.start()
            back = now + time.monotonic() - began
            faults.append(Fault(f"{name} restarted ({back - now:.1f} s down)", now, back, grace))

        return action

    schedule: list[tuple[float, Action]] = [(at(0.15), lambda now: slow.start())]
    length = first["end"] - first["start"]
    schedule += [
        (first["start"] + 0.4 * length, kill_gunicorn_worker),
        (first["start"] + 0.7 * length, kill_db_worker),
    ]
    upstream_grace = READ_TIMEOUT + 5
    for arm_at, name, fault in (
        (at(0.55), "503", {"status": 503, "count": 100_000}),
        (at(0.60), "429 Retry-After", {"status": 429, "retry_after": 2, "count": 100_000}),
        # Two calls stall past the read timeout: each holds a sync worker that long.
        (at(0.65), "timeouts", {"delay": READ_TIMEOUT + 2, "status": 504, "count": 2}),
        (at(0.70), "malformed JSON", {"malformed": True, "count": 100_000}),
    ):
        schedule += emulator_fault(arm_at, name, fault, grace=upstream_grace)
    schedule += [
        (at(0.76), restart("Redis", portal.redis, grace=5)),
        (
            second["start"] + 0.3 * (second["end"] - second["start"]),
            restart("PostgreSQL", portal.postgres, grace=10),
        ),
    ]
    return sorted(schedule, key=lambda step: step[0])


# --- Afterwards: the worker's catching up, and what the database holds -------------------

_PENDING = f"""
from alerts.models import Alert
from fleet.models import CnhLookup, WebhookDelivery
received = WebhookDelivery.objects.filter(status="received").count()
open_lookups = CnhLookup.objects.exclude(status__in=["done", "failed", "unknown"]).count()
to_healthy = Alert.objects.filter(
    subscription__description={DESCRIPTION + HEALTHY!r}, status__in=["pending", "sending"]
).count()
print(received, open_lookups, to_healthy)
"""


def _drain(portal: Portal, *, timeout: float) -> float | None:
    """Wait until no delivery waits to be processed, every CNH lookup has ended and the
    healthy subscriber has got every alert: the seconds it took, None if `timeout`
    passed first."""
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        waiting = _manage(portal.environment, "shell", "-v", "0", "-c", _PENDING).split()
        if not any(map(int, waiting)):
            return time.monotonic() - began
        time.sleep(3)
    return None


def portal_state() -> dict[str, Any]:
    """What the soak checks in the portal's database (in a configured Django process)."""
    from fleet.models import CnhLookup, WebhookDelivery

    deliveries = []
    for headers, status in WebhookDelivery.objects.values_list("headers", "status"):
        named = {name.lower(): value for name, value in (headers or {}).items()}
        deliveries.append([named.get("x-delivery-id"), status])
    return {
        "records": webhooks_reliability.portal_state()["records"],
        "deliveries": deliveries,
        "lookups": list(CnhLookup.objects.values_list("status", "reason")),
        "subscribers": soak_subscribers.portal_state(),
        "history": soak_history.portal_state(),
    }


# --- The report ----------------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    at: float  # seconds into the run, when it started
    route: str
    status: int  # 0: no answer
    milliseconds: float

    @property
    def ended(self) -> float:
        return self.at + self.milliseconds / 1000

    @property
    def failed(self) -> bool:
        return self.status == 0 or self.status >= 500


WEBHOOK_ROUTE = "/webhooks/fleet/[token]/ (POST)"


def _explanation(request: Request, faults: Sequence[Fault]) -> str | None:
    """The latest fault begun before `request` that can explain its failure."""
    candidates = [
        fault
        for fault in faults
        if fault.explains(request)
        and not fault.name.startswith("db_worker")  # the background worker answers no request
        # The receiver never calls the Fleet API.
        and not (fault.name.startswith("emulator") and request.route == WEBHOOK_ROUTE)
    ]
    return max(candidates, key=lambda fault: fault.start).name if candidates else None


def _read_requests(plan: dict[str, Any]) -> list[Request]:
    rows = []
    for line in Path(plan["request_log"]).read_text().splitlines():
        started, route, status, milliseconds, _user = json.loads(line)
        rows.append(Request(started - plan["start"], route, int(status), float(milliseconds)))
    return rows


def _latency_table(rows: Sequence[Request]) -> list[str]:
    by_route: dict[str, list[Request]] = defaultdict(list)
    for row in rows:
        by_route[row.route].append(row)
    width = max(map(len, by_route), default=10)
    heading = f"{'requests':>8}  {'p50 ms':>7}  {'p95 ms':>7}  {'p99 ms':>7}  statuses"
    lines = [f"  {'route':<{width}}  {heading}"]
    for route in sorted(by_route, key=lambda name: -len(by_route[name])):
        group = by_route[route]
        times = [row.milliseconds for row in group]
        statuses = Counter(row.status for row in group)
        described = ", ".join(f"{status or 'none'}: {n}" for status, n in sorted(statuses.items()))
        lines.append(
            f"  {route:<{width}}  {len(group):>8,}  {percentile(times, 0.50):>7.0f}"
            f"  {percentile(times, 0.95):>7.0f}  {percentile(times, 0.99):>7.0f}  {described}"
        )
    return lines


def _p95_of_normal_pages(rows: Sequence[Request], window: tuple[float, float]) -> float:
    times = [
        row.milliseconds
        for row in rows
        if row.route in NORMAL_PAGES and window[0] <= row.at < window[1] and not row.failed
    ]
    return percentile(times, 0.95) if times else float("nan")


@dataclass
class Deliveries:
    planned: int
    acknowledged: int
    stored: int
    processed: int
    lost: int
    unacknowledged: int
    stored_twice: int
    not_processed: Counter[str]
    duplicate_effects: int
    effects: list[str]


def _deliveries(plan: dict[str, Any], state: dict[str, Any]) -> Deliveries:
    acknowledged = set(Path(plan["acknowledged_log"]).read_text().split())
    stored = Counter(delivery_id for delivery_id, _ in state["deliveries"])
    statuses = Counter(status for _, status in state["deliveries"])
    not_processed = Counter(
        {status: n for status, n in statuses.items() if status not in PROCESSED_STATUSES}
    )
    expected = plan["manifest"]["records"]
    found = Counter((record["kind"], record["reference"]) for record in state["records"])
    twice = sum(n - 1 for n in found.values() if n > 1)
    wrong = 0
    unacknowledged = plan["sent"] - len(acknowledged)
    if unacknowledged:
        # Records whose last events were never delivered are not in their final state,
        # rightly: only records held twice are counted then.
        effects = [f"final states not checked: {unacknowledged} deliveries never got through"]
    else:
        effects = webhooks_reliability._records_problems(expected, state["records"])
        held = {(record["kind"], record["reference"]): record for record in state["records"]}
        for record in expected:
            have = held.get((record["kind"], record["reference"]))
            final = (record["treated"], record["linkFrame"])
            wrong += bool(have and (have["treated"], have["linkFrame"]) != final)
    return Deliveries(
        planned=plan["sent"],
        acknowledged=len(acknowledged),
        stored=len(state["deliveries"]),
        processed=sum(n for status, n in statuses.items() if status in PROCESSED_STATUSES),
        lost=len(acknowledged - set(stored)),
        unacknowledged=unacknowledged,
        stored_twice=sum(n - 1 for delivery_id, n in stored.items() if delivery_id and n > 1),
        not_processed=not_processed,
        duplicate_effects=twice + wrong,
        effects=effects,
    )


def _report(
    plan: dict[str, Any],
    timeline: Timeline,
    faults: list[Fault],
    slow: SlowConnections,
    state: dict[str, Any],
    drained: float | None,
    portal: Portal,
    placed: Placed,
) -> int:
    rows = _read_requests(plan)
    print("\n== Requests per route (through nginx; latency as locust measured it) ==")
    print("\n".join(_latency_table(rows)))
    print("\n== Injected faults (seconds into the run) ==")
    for fault in faults:
        print(f"  {fault.start:7.1f} to {max(fault.end, fault.start):7.1f}  {fault.name}")
    restarts = sum(host.worker.restarts for host in portal.hosts)
    print(f"  db_worker started again by the supervisor {restarts} time(s)")
    unexplained = _print_failures(rows, faults)
    deliveries = _deliveries(plan, state)
    _print_deliveries(rows, timeline, deliveries)
    stuck = _print_lookups(state, drained)
    alerts_lost = portal.subscribers.report(
        state["subscribers"], interruptions=_interruptions(plan, faults)
    )
    without = _p95_of_normal_pages(rows, timeline.without_slow)
    with_slow = _p95_of_normal_pages(rows, timeline.with_slow)
    print("\n== Slow connections ==")
    print(
        f"  {slow.count} slowloris connections from {timeline.at(0.15):.0f} s to the end;"
        f" nginx closed {slow.closed} of them, each opened again at once"
    )
    print(
        f"  p95 of normal pages: {without:.0f} ms without, {with_slow:.0f} ms with"
        f" ({with_slow / without:.2f}x; goal: within 1.20x)"
    )
    metrics_problems = print_metrics(
        portal=portal,
        plan=plan,
        rows=rows,
        state=state,
        faults=faults,
        webhook_route=WEBHOOK_ROUTE,
        vehicles_ttl=VEHICLES_TTL,
        lag_alert=LAG_ALERT,
        secrets=_secrets(portal, plan),
    )
    history_differences = history_report(
        state["history"], emulator_url=portal.emulator_url, placed=placed, slack=READ_TIMEOUT
    )
    failed = bool(
        history_differences
        or metrics_problems
        or unexplained
        or deliveries.lost
        or stuck
        or deliveries.duplicate_effects
        or deliveries.unacknowledged
        or deliveries.not_processed
        or alerts_lost
    )
    print(
        f"\nsoak: {len(rows)} requests, {unexplained} unexplained 5xx,"
        f" {deliveries.lost} lost deliveries, {stuck} stuck lookups"
    )
    return 1 if failed else 0


def _secrets(portal: Portal, plan: dict[str, Any]) -> list[str]:
    """What no scrape may hold: tokens, keys and passwords of this run."""
    environment = portal.environment
    found = [portal.token, portal.metrics_token, DEMO_FLEET_PASSWORD]
    found += [
        environment[name]
        for name in ("FLEET_SECRET_KEY", "FLEET_ACCESS_TOKEN", "DJANGO_SECRET_KEY")
        if environment.get(name)
    ]
    found += [person["password"] for person in plan["managers"] + plan["cnh_users"]]
    return found


def _interruptions(plan: dict[str, Any], faults: Sequence[Fault]) -> list[Interruption]:
    """The faults that may come between an outgoing POST's answer and its mark (the
    worker killed, the database restarted), as windows of `time.time()` seconds: from
    the fault to the end of its grace."""
    return [
        Interruption(
            fault.name,
            plan["start"] + fault.start,
            plan["start"] + max(fault.end, fault.start) + fault.grace,
        )
        for fault in faults
        if fault.name.startswith(("db_worker", "PostgreSQL"))
    ]


def _print_failures(rows: Sequence[Request], faults: Sequence[Fault]) -> int:
    """Every 5xx (or request without an answer) with the fault that explains it; the
    number no fault explains."""
    failures = [row for row in rows if row.failed]
    explained: dict[str, Counter[str]] = defaultdict(Counter)
    unexplained: list[Request] = []
    for row in failures:
        reason = _explanation(row, faults)
        if reason is None:
            unexplained.append(row)
        else:
            explained[reason][f"{row.status or 'no answer'} {row.route}"] += 1
    print(f"\n== 5xx and requests without an answer: {len(failures)} ==")
    for reason, answers in explained.items():
        print(f"  {answers.total():>6,}  explained by: {reason}")
        for answer, count in answers.most_common():
            print(f"            {count:>5,}  {answer}")
    print(f"  {len(unexplained):>6,}  unexplained")
    for row in unexplained[:15]:
        print(f"          at {row.at:7.1f} s  {row.status or 'no answer'}  {row.route}")
    return len(unexplained)


def _print_deliveries(rows: Sequence[Request], timeline: Timeline, deliveries: Deliveries) -> None:
    print("\n== Webhook deliveries ==")
    for burst in timeline.bursts:
        length = burst["end"] - burst["start"]
        acknowledged = sum(
            1
            for row in rows
            if row.route == WEBHOOK_ROUTE
            and burst["start"] <= row.at < burst["end"]
            and 200 <= row.status < 300
        )
        print(
            f"  burst at {burst['start']:.0f} s: {acknowledged / length:,.0f} acknowledged a"
            f" second for {length:.0f} s (asked: {burst['rate']:.0f})"
        )
    for name, value in (
        ("planned (20 % duplicates, 2 % malformed, shuffled)", deliveries.planned),
        ("sent and acknowledged (2xx)", deliveries.acknowledged),
        ("never acknowledged by the end", deliveries.unacknowledged),
        ("stored", deliveries.stored),
        ("  of which stored twice (a retry after an answer was lost)", deliveries.stored_twice),
        ("processed (processed, duplicate or kept invalid)", deliveries.processed),
        ("lost (acknowledged, not stored)", deliveries.lost),
        (
            "duplicate effects (records twice or not in their final state)",
            deliveries.duplicate_effects,
        ),
    ):
        print(f"  {name:<66} {value:>7,}")
    for status, count in deliveries.not_processed.items():
        print(f"  NOT processed: {count} {status}")
    for problem in deliveries.effects:
        print(f"  record problem: {problem}")


def _print_lookups(state: dict[str, Any], drained: float | None) -> int:
    """The CNH lookups by status; the number stuck (not ended, or ended without a reason)."""
    lookups = Counter(status for status, _ in state["lookups"])
    stuck = sum(
        1
        for status, reason in state["lookups"]
        if status not in FINAL_LOOKUP_STATUSES or (status != "done" and not reason)
    )
    reasons = Counter(reason for status, reason in state["lookups"] if status != "done")
    print("\n== CNH lookups ==")
    statuses = ", ".join(f"{status} {n}" for status, n in sorted(lookups.items()))
    print(f"  {len(state['lookups'])} lookups: {statuses}")
    if reasons:
        named = ", ".join(f"{reason or '(none)'} {n}" for reason, n in reasons.most_common())
        print(f"  reasons of those not done: {named}")
    print(f"  stuck (not ended, or ended without a reason): {stuck}")
    caught_up = "NOT within the wait" if drained is None else f"in {drained:.0f} s"
    print(f"  the worker caught up {caught_up} after the traffic stopped")
    return stuck


if __name__ == "__main__":
    sys.exit(main())
