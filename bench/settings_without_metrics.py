"""The benchmarks' settings without the portal's metrics: `bench.settings_without_metrics`.

For `python -m bench.vehicles --metrics`, the portal that the one as shipped is compared
with: no `MetricsMiddleware`, and the counters and histograms of `portal.lib.metrics`, which
services count through (the vehicle list's cache counts a hit on every page), replaced by
stand-ins that do nothing, so that no prometheus-client code runs on a request. It is run
without PROMETHEUS_MULTIPROC_DIR and METRICS_TOKEN (so `/metrics` is a 404).

The stand-ins work because the portal always reaches a metric through the module
(`metrics.VEHICLE_CACHE.labels(...)`), never by importing the metric itself.
"""

from __future__ import annotations

from prometheus_client.metrics import MetricWrapperBase

from bench.settings import *  # noqa: F403
from bench.settings import MIDDLEWARE
from portal.lib import metrics as _metrics


class _Unmeasured:
    """A counter or histogram that counts nothing."""

    def labels(self, *values: str) -> _Unmeasured:
        return self

    def inc(self, amount: float = 1) -> None:
        pass

    def observe(self, amount: float) -> None:
        pass


MIDDLEWARE = [
    name for name in MIDDLEWARE if name != "portal.lib.metrics.middleware.MetricsMiddleware"
]

for _name, _metric in list(vars(_metrics).items()):
    if isinstance(_metric, MetricWrapperBase):
        setattr(_metrics, _name, _Unmeasured())
