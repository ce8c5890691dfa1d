"""The fleet's state as `/metrics` reads it at each scrape (`portal.lib.metrics.exposition`):
the webhook deliveries not processed yet and the oldest of them, the vehicle list's age.
The same whichever host answers: read from the database and the cache."""

from __future__ import annotations

import time
from collections.abc import Iterator

from django.db.models import Count, Min
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from fleet.models import DeliveryStatus, WebhookDelivery
from fleet.services.vehicle_cache import vehicle_list_fetched_at
from portal.lib import metrics
from portal.lib.metrics.exposition import age_seconds


class FleetState(Collector):
    """Gauges read at each scrape: the deliveries' backlog and the vehicle list's age."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        found = WebhookDelivery.objects.filter(status=DeliveryStatus.RECEIVED).aggregate(
            waiting=Count("id"), oldest=Min("received_at")
        )
        waiting = GaugeMetricFamily(
            f"{metrics.PREFIX}_webhook_unprocessed",
            "Webhook deliveries stored and not processed yet",
        )
        waiting.add_metric([], found["waiting"])
        oldest = GaugeMetricFamily(
            f"{metrics.PREFIX}_webhook_oldest_unprocessed_age_seconds",
            "How long the oldest delivery not processed yet has waited (0: none)",
        )
        oldest.add_metric([], age_seconds(timezone.now(), found["oldest"]))
        yield waiting
        yield oldest
        fetched_at = vehicle_list_fetched_at()
        age = GaugeMetricFamily(
            f"{metrics.PREFIX}_vehicle_cache_age_seconds",
            "Age of the vehicle list every worker serves (absent when there is none)",
        )
        if fetched_at is not None:
            age.add_metric([], max(0.0, time.time() - fetched_at))
        yield age
