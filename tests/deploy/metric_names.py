"""The metric names the portal exposes at /metrics (`portal.lib.metrics` counts events;
its `exposition` and `fleet.services.gauges` read the gauges when scraped), as
deploy/prometheus's rules and deploy/grafana's dashboard may name them: a metric renamed
on one side and not on the other fails their tests."""

from __future__ import annotations

import re

# prometheus-client exposes a Counter with `_total`, a Histogram as `_bucket`, `_sum`
# and `_count`.
COUNTERS = frozenset(
    {
        "fleet_portal_http_requests",
        "fleet_portal_fleet_api_calls",
        "fleet_portal_fleet_api_cooldowns",
        "fleet_portal_webhook_deliveries",
        "fleet_portal_tasks",
        "fleet_portal_cnh_lookups",
        "fleet_portal_alerts",
        "fleet_portal_sign_ins",
        "fleet_portal_vehicle_cache",
    }
)
HISTOGRAMS = frozenset(
    {
        "fleet_portal_http_request_duration_seconds",
        "fleet_portal_fleet_api_call_duration_seconds",
    }
)
GAUGES = frozenset(
    {
        "fleet_portal_webhook_unprocessed",
        "fleet_portal_webhook_oldest_unprocessed_age_seconds",
        "fleet_portal_task_queue_depth",
        "fleet_portal_task_queue_oldest_age_seconds",
        "fleet_portal_vehicle_cache_age_seconds",
    }
)
EXPOSED = frozenset(
    {f"{name}_total" for name in COUNTERS}
    | {f"{name}{suffix}" for name in HISTOGRAMS for suffix in ("_bucket", "_sum", "_count")}
    | GAUGES
)

# The portal's metric names and the recording rules' (fleet_portal:…), as PromQL names them.
_NAME = re.compile(r"(?<![\w:])fleet_portal[a-z0-9_:]*")


def names_in(promql: str) -> set[str]:
    """The portal's metric (and recorded) names a PromQL expression or YAML text uses."""
    return set(_NAME.findall(promql))


def family(name: str) -> str:
    """The metric a name exposes: a counter without `_total`, a histogram without its suffix."""
    for suffix in ("_total", "_bucket", "_sum", "_count"):
        stem = name.removesuffix(suffix)
        if stem != name and (stem in COUNTERS or stem in HISTOGRAMS):
            return stem
    return name
