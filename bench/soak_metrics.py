"""The soak's metrics section: what Prometheus scraped from every host beside what the soak
counted itself, the vehicle list fetched once per refresh across hosts (counted at the
emulator), the worker-lag alert fired and resolved, and `/metrics` kept from strangers and
free of personal data.

Differences between locust's statuses and the portal's are nginx's own answers (a 502
while a gunicorn worker was killed, a 504) and requests locust gave up on: the portal
never saw the first, and counted the second.
"""

from __future__ import annotations

import itertools
import re
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import requests
from prometheus_client.parser import text_string_to_metric_families

from fleet import plates as plate_forms

_PREFIX = "fleet_portal"
_FINAL_LOOKUPS = ("done", "failed", "unknown")
_DELIVERY_STAGES = ("processed", "duplicate", "invalid", "unknown_kind", "failed")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+")
_CPF = re.compile(r"\d{3}\.?\d{3}\.?\d{3}-?\d{2}")


class Row(Protocol):
    @property
    def route(self) -> str: ...
    @property
    def status(self) -> int: ...


class FaultLike(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def start(self) -> float: ...
    @property
    def end(self) -> float: ...
    @property
    def grace(self) -> float: ...


def print_metrics(
    *,
    portal: Any,
    plan: dict[str, Any],
    rows: Sequence[Row],
    state: dict[str, Any],
    faults: Sequence[FaultLike],
    webhook_route: str,
    vehicles_ttl: float,
    lag_alert: str,
    secrets: Sequence[str],
) -> int:
    """Print the section; how many of its checks failed."""
    prometheus = portal.prometheus
    prometheus.wait_for_scrape()
    print(f"\n== Metrics: Prometheus scraping {len(portal.hosts)} host(s) every second ==")
    _requests(prometheus, rows)
    problems = _deliveries(prometheus, rows, state, webhook_route)
    problems += _lookups(prometheus, state)
    problems += _vehicle_fetches(portal, plan, faults, vehicles_ttl)
    problems += _strangers_and_secrets(portal, plan, secrets)
    problems += _lag_alert(portal, lag_alert)
    return problems


def _table(title: str, rows: Mapping[str, tuple[float, float]], names: tuple[str, str]) -> None:
    print(f"  {title}")
    print(f"    {'':<16} {names[0]:>10} {names[1]:>10}")
    for key in sorted(rows):
        ours, theirs = rows[key]
        mark = "" if ours == theirs else f"  ({theirs - ours:+,.0f})"
        print(f"    {key:<16} {ours:>10,.0f} {theirs:>10,.0f}{mark}")


def _requests(prometheus: Any, rows: Sequence[Row]) -> None:
    seen = Counter(str(row.status) for row in rows if row.status)
    counted = prometheus.total(f'{_PREFIX}_http_requests_total{{view!="fleet:metrics"}}', "status")
    statuses = set(seen) | set(counted)
    _table(
        "requests by status (locust through nginx; the portal's count on every host)",
        {status: (seen[status], counted.get(status, 0.0)) for status in statuses},
        ("locust", "metrics"),
    )
    print(
        f"    without an answer: {sum(1 for row in rows if not row.status):,} "
        "(locust); nginx's own 502/504 never reach the portal"
    )


def _deliveries(
    prometheus: Any, rows: Sequence[Row], state: dict[str, Any], webhook_route: str
) -> int:
    """The table; whether a delivery was processed more times than there are deliveries
    (two workers on one delivery: computed twice)."""
    stages = prometheus.total(f"{_PREFIX}_webhook_deliveries_total", "stage")
    statuses = Counter(status for _, status in state["deliveries"])
    reached = sum(
        1 for row in rows if row.route == webhook_route and row.status not in (0, 502, 504)
    )
    table = {
        "received": (reached, stages.get("received", 0.0)),
        "stored": (
            sum(n for status, n in statuses.items() if status != "refused"),
            stages.get("stored", 0.0),
        ),
    }
    for stage in _DELIVERY_STAGES:
        table[stage] = (statuses.get(stage, 0), stages.get(stage, 0.0))
    _table(
        "webhook deliveries by stage (POSTs locust got a portal answer to, then the "
        "database's rows; the portal's count)",
        table,
        ("soak", "metrics"),
    )
    twice = sum(max(0.0, table[stage][1] - table[stage][0]) for stage in _DELIVERY_STAGES)
    print(f"    processing outcomes beyond the deliveries (processed twice): {twice:,.0f}")
    return 1 if twice else 0


def _lookups(prometheus: Any, state: dict[str, Any]) -> int:
    """The table; whether a lookup was done more than once (claimed twice)."""
    outcomes = prometheus.total(f"{_PREFIX}_cnh_lookups_total", "outcome")
    statuses = Counter(status for status, _ in state["lookups"])
    _table(
        "CNH lookups ended, by outcome (the database; the portal's count)",
        {status: (statuses.get(status, 0), outcomes.get(status, 0.0)) for status in _FINAL_LOOKUPS},
        ("database", "metrics"),
    )
    retried = outcomes.get("waiting_retry", 0.0)
    print(f"    attempts that waited for a retry: {retried:,.0f}")
    # A lookup ends once done; one that ended failed or unknown may be tried again.
    twice = max(0.0, outcomes.get("done", 0.0) - statuses.get("done", 0))
    print(f"    lookups done more than once (claimed twice): {twice:,.0f}")
    return 1 if twice else 0


# Faults within whose window (plus grace) a fetch of the vehicle list is not counted: the
# emulator's (a malformed 200 is fetched again, a failure is retried after its backoff), and
# Redis restarting: the lock of a fetch under way is lost with it, and while Redis is down
# no lock can be kept, so a worker with no list at all fetches its own (README, "Several hosts").
_REFETCH_FAULTS = ("emulator ", "Redis restarted")


def _vehicle_fetches(
    portal: Any, plan: dict[str, Any], faults: Sequence[FaultLike], ttl: float
) -> int:
    """The vehicle list's fetches the emulator answered 200, grouped into refreshes (one
    within `ttl / 2` of the previous is the same refresh fetched twice); not those before
    the traffic (the soak's own look at the fleet), nor those within the faults above."""
    answers = requests.get(
        f"{portal.emulator_url}/_emulator/answers",
        params={"route": "GET /key/list-cars"},
        timeout=10,
    ).json()[plan["setup_fetches"] :]
    start = plan["start"]
    windows = [
        (fault.name, start + fault.start, start + max(fault.end, fault.start) + fault.grace)
        for fault in faults
        if fault.name.startswith(_REFETCH_FAULTS)
    ]
    fetched: list[float] = []
    excused: Counter[str] = Counter()
    for answer in answers:
        if answer["status"] != 200:
            continue
        during = [name for name, begins, ends in windows if begins <= answer["at"] <= ends]
        if during:
            excused[during[0]] += 1
        else:
            fetched.append(answer["at"])
    fetched.sort()
    pairs = [(a, b) for a, b in itertools.pairwise(fetched) if b - a < ttl / 2]
    refreshes = len(fetched) - len(pairs)
    counted = portal.prometheus.total(f"{_PREFIX}_vehicle_cache_total", "event")
    ratio = len(fetched) / refreshes if refreshes else float("nan")
    print(
        f"  vehicle list: {len(answers):,} list-cars calls at the emulator, {len(fetched):,} "
        f"answered 200 outside its faults for {refreshes:,} refreshes: {ratio:.2f} calls per "
        f"refresh across {len(portal.hosts)} host(s); fetched twice: {len(pairs)}"
    )
    for name, count in sorted(excused.items()):
        print(f"    answered 200 during {name}, not counted: {count}")
    for a, b in pairs:
        print(
            f"    PROBLEM: fetched at {a - start:.2f} s and again at {b - start:.2f} s into the run"
        )
    print(
        "    the portal's count: "
        + ", ".join(f"{event} {n:,.0f}" for event, n in sorted(counted.items()))
    )
    return 1 if pairs or not refreshes else 0


def _strangers_and_secrets(portal: Any, plan: dict[str, Any], secrets: Sequence[str]) -> int:
    problems = 0
    anonymous = requests.get(f"{portal.nginx_url}/metrics", timeout=10)
    wrong = requests.get(
        f"{portal.nginx_url}/metrics", headers={"Authorization": "Bearer wrong"}, timeout=10
    )
    print(
        f"  /metrics through nginx: {anonymous.status_code} without the token, "
        f"{wrong.status_code} with a wrong one"
    )
    if anonymous.status_code not in (401, 404) or wrong.status_code not in (401, 404):
        problems += 1
    if _PREFIX.encode() in anonymous.content + wrong.content:
        print("    PROBLEM: metrics shown without the token")
        problems += 1
    found: list[str] = []
    for host in portal.hosts:
        text = requests.get(
            f"http://127.0.0.1:{host.port}/metrics",
            headers={"Authorization": f"Bearer {portal.metrics_token}"},
            timeout=30,
        ).text
        found += _personal_data(text, plan, secrets)
    print(f"  personal data or secrets in the scrapes: {len(found)}")
    for what in found[:10]:
        print(f"    PROBLEM: {what}")
    return problems + bool(found)


def _personal_data(text: str, plan: dict[str, Any], secrets: Sequence[str]) -> list[str]:
    """What in a scrape is a plate of the fleet, a CPF, an e-mail or one of `secrets`."""
    fleet: set[str] = set()
    for plate in plan["plates"]:
        fleet |= {plate_forms.normalize(plate), plate_forms.display(plate)}
        if (old := plate_forms.old_plate(plate_forms.normalize(plate))) is not None:
            fleet |= {old, plate_forms.display(old)}
    found = []
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            for value in sample.labels.values():
                if value in fleet or plate_forms.normalize(value) in fleet:
                    found.append(f"a plate in {sample.name}")
                if _EMAIL.search(value) or _CPF.fullmatch(value):
                    found.append(f"an e-mail or CPF in {sample.name}")
    found += [f"a secret in the text ({secret[:4]}…)" for secret in secrets if secret in text]
    found += [f"an e-mail in the text: {match}" for match in _EMAIL.findall(text)]
    return found


def _lag_alert(portal: Any, name: str) -> int:
    """Kill every db_worker and keep them down with a delivery waiting: the alert must
    fire; start them again: it must resolve."""
    print(f"  worker-lag alert ({name}): every db_worker killed, one delivery posted")
    for host in portal.hosts:
        host.worker.hold()
    began = time.monotonic()
    posted = requests.post(
        f"{portal.nginx_url}/webhooks/fleet/{portal.token}/",
        data=b'{"notification": {"id": 1, "type": "recall", "carPlate": "ABC1D23"}}',
        headers={"Content-Type": "application/json"},
        timeout=10,
    )
    fired = _until(lambda: portal.prometheus.alert_state(name) == "firing", timeout=300)
    for host in portal.hosts:
        host.worker.release()
    back = time.monotonic()
    resolved = _until(lambda: portal.prometheus.alert_state(name) == "inactive", timeout=120)
    if fired is None or resolved is None:
        print(
            f"    PROBLEM: the delivery got {posted.status_code}; the alert "
            + ("never fired" if fired is None else f"fired after {fired - began:.0f} s")
            + ("" if fired is None or resolved is not None else " and never resolved")
        )
        return 1
    print(
        f"    fired {fired - began:.0f} s after the workers were killed; resolved "
        f"{resolved - back:.0f} s after they were started again"
    )
    return 0


def _until(condition: Callable[[], bool], *, timeout: float) -> float | None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return time.monotonic()
        time.sleep(1.0)
    return None
