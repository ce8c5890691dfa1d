"""What the portal counts for its operators, in Prometheus' format (prometheus-client).

Every process counts what it does: the web workers their requests, Fleet API calls,
webhook deliveries and sign-ins; `manage.py db_worker` its tasks, CNH lookups and
alerts. Under gunicorn and beside the worker, the processes of one host share
PROMETHEUS_MULTIPROC_DIR (a directory of their own, emptied at start: deploy/), and
`/metrics` sums them (`views`, `exposition`). What is a state rather than an event (a
queue's depth, the oldest delivery waiting, the vehicle list's age) is read when
scraped, from the database and the cache (`exposition`, and each app's collector).
The requests are counted by `middleware`.

Labels take few values, all the portal's own: a view's name, an endpoint's path with
no plate or id in it, an outcome. Never a plate, a CPF, an e-mail, a user or a token.
This module imports nothing of Django: the API client counts through it too.
"""

from __future__ import annotations

from typing import Final

from prometheus_client import Counter, Histogram, disable_created_metrics

PREFIX: Final = "fleet_portal"

# No `_created` series: the multiprocess mode of production has none, and a process
# counting alone (`make run`, the tests) answers the same families.
disable_created_metrics()  # type: ignore[no-untyped-call]

# Seconds: a page served from the cache to an upstream call near its timeout.
_LATENCY_BUCKETS: Final = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

HTTP_REQUESTS = Counter(
    f"{PREFIX}_http_requests",
    "Requests answered, by view (its URL name), method and status",
    ["view", "method", "status"],
)
HTTP_LATENCY = Histogram(
    f"{PREFIX}_http_request_duration_seconds",
    "Time to answer a request, by view and method",
    ["view", "method"],
    buckets=_LATENCY_BUCKETS,
)

FLEET_API_CALLS = Counter(
    f"{PREFIX}_fleet_api_calls",
    "Fleet API calls (each attempt), by endpoint and outcome",
    ["endpoint", "outcome"],
)
FLEET_API_LATENCY = Histogram(
    f"{PREFIX}_fleet_api_call_duration_seconds",
    "Time of a Fleet API call (each attempt), by endpoint",
    ["endpoint"],
    buckets=_LATENCY_BUCKETS,
)
FLEET_API_COOLDOWNS = Counter(
    f"{PREFIX}_fleet_api_cooldowns",
    "Cooldowns the Fleet API asked for (429 Retry-After) or a gateway timeout (504) began",
    ["status"],
)

WEBHOOK_DELIVERIES = Counter(
    f"{PREFIX}_webhook_deliveries",
    "Webhook deliveries from the platform: received (each POST), refused (a bad token, "
    "size or body), stored, processed, invalid (stored, not readable as a record)",
    ["stage"],
)

TASKS = Counter(
    f"{PREFIX}_tasks",
    "Background tasks run by the worker, by queue (webhooks, cnh, alerts, other) and outcome",
    ["queue", "outcome"],
)

CNH_LOOKUPS = Counter(
    f"{PREFIX}_cnh_lookups",
    "CNH lookup attempts ended, by outcome",
    ["outcome"],
)

ALERTS = Counter(
    f"{PREFIX}_alerts",
    "Alerts by channel (email, webhook) and outcome (sent, retried, failed)",
    ["channel", "outcome"],
)

SIGN_INS = Counter(
    f"{PREFIX}_sign_ins",
    "Sign-in attempts, by method (sso, local) and outcome",
    ["method", "outcome"],
)

VEHICLE_CACHE = Counter(
    f"{PREFIX}_vehicle_cache",
    "The vehicle list's cache: hits, misses, refreshes, failed refreshes, locks it could not keep",
    ["event"],
)


def task_queue(task_path: str) -> str:
    """The queue an operator knows a task by: webhooks, cnh, alerts or other."""
    name = task_path.rpartition(".")[2]
    if name.startswith(("webhook_", "fine_drivers")):
        return "webhooks"
    if name.startswith("cnh_"):
        return "cnh"
    if task_path.startswith("alerts."):
        return "alerts"
    return "other"
