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
import sys
import time
import uuid
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import requests

from bench import soak_history, soak_subscribers, webhooks_reliability
from bench.nginx import NGINX
from bench.portal_setup import DEMO_FLEET_EMAIL, DEMO_FLEET_PASSWORD
from bench.servers import ServerFailed, bench_main, portal_call, upstream_session
from bench.soak_faults import drive
from bench.soak_history import place_handovers
from bench.soak_report import report
from bench.soak_slow import SlowConnections
from bench.soak_startup import Portal, manage, start_portal
from bench.soak_subscribers import DESCRIPTION, HEALTHY, SUBSCRIBE

# tests/deploy/test_soak.py imports the timeline and how a fault explains a 5xx from here.
from bench.soak_timeline import WEBHOOK_ROUTE as WEBHOOK_ROUTE
from bench.soak_timeline import Fault as Fault
from bench.soak_timeline import Request as Request
from bench.soak_timeline import Timeline as Timeline
from bench.soak_timeline import explanation

_explanation = explanation


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
        portal = start_portal(folder, args, stack)
        plan = _plan(folder, args, portal, timeline)
        # A whole hour of the emulator's clock, when vehicles change hands, mid-traffic.
        placed = place_handovers(portal.emulator_url, at=timeline.at(0.45))
        print(f"Traffic for {args.seconds} s through {portal.nginx_url} …", flush=True)
        slow = SlowConnections(portal.nginx_port, args.slow)
        stack.callback(slow.stop)
        faults = drive(folder, plan, portal, timeline, slow)
        slow.stop()
        print("Traffic over; waiting for the worker to finish …", flush=True)
        # A CNH lookup whose worker died ends after its lease (fleet.services.cnh), and so
        # do the alerts it had claimed.
        drained = _drain(portal, timeout=max(180.0, args.seconds / 4))
        state = portal_call(portal.environment, "bench.soak:portal_state")
        return report(plan, timeline, faults, slow, state, drained, portal, placed)
    return 2  # pragma: no cover (ExitStack does not swallow)


def _check_tools() -> None:
    if importlib.util.find_spec("locust") is None:
        raise ServerFailed("locust is not installed: `make soak` installs requirements-soak.txt")
    if not os.path.exists(NGINX):
        raise ServerFailed("nginx is missing: `make nginx` installs Debian's package")


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
    manage(
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
    manage(portal.environment, "shell", "-v", "0", "-c", SUBSCRIBE, stdin=json.dumps(subscriptions))
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
        waiting = manage(portal.environment, "shell", "-v", "0", "-c", _PENDING).split()
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


if __name__ == "__main__":
    sys.exit(main())
