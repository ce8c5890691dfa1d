"""The soak's report and its verdict: requests and latency per route, the injected
faults, every 5xx with the fault that explains it, the webhook deliveries (lost,
stored twice, applied twice or left in a wrong state), the CNH lookups (stuck or
not), the outgoing webhooks' subscribers, the slow connections' cost, the metrics and
the vehicles' history; then the last line and the exit status: 1 when anything that
must be zero is not.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import webhooks_reliability
from bench.portal_setup import DEMO_FLEET_PASSWORD
from bench.soak_history import Placed, history_report
from bench.soak_metrics import print_metrics
from bench.soak_slow import SlowConnections
from bench.soak_startup import READ_TIMEOUT, VEHICLES_TTL, Portal
from bench.soak_subscribers import Interruption
from bench.soak_timeline import WEBHOOK_ROUTE, Fault, Request, Timeline, explanation
from bench.stats import percentile

LAG_ALERT = "FleetPortalWorkerLagging"  # deploy/prometheus/fleet-portal-rules.yml
# Pages whose p95 is compared without and with the slow connections.
NORMAL_PAGES = frozenset(
    ["/", "/vehicles/?page", "/vehicles/?q", "/fines/", "/fines/?plate", "/notifications/"]
)
FINAL_LOOKUP_STATUSES = frozenset(["done", "failed", "unknown"])
PROCESSED_STATUSES = frozenset(["processed", "duplicate", "invalid"])


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


def report(
    plan: dict[str, Any],
    timeline: Timeline,
    faults: list[Fault],
    slow: SlowConnections,
    state: dict[str, Any],
    drained: float | None,
    portal: Portal,
    placed: Placed,
) -> int:
    """Print every section of the report and the last line: the soak's exit status."""
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
        reason = explanation(row, faults)
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
