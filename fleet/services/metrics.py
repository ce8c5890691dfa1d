"""The metrics `/metrics` answers (fleet.metrics): what the processes of this host counted,
and the state of the whole portal read now from the database and the cache.

Under gunicorn and beside `manage.py db_worker`, PROMETHEUS_MULTIPROC_DIR is set and the
counts are summed from the files every process writes there (prometheus-client's
multiprocess mode); without it (`make run`, the tests), this process's own counts. The
state is the same whichever host answers: the due tasks waiting per queue and the oldest
of them, the webhook deliveries not processed yet and the oldest, the vehicle list's age.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

from django.db.models import Count, Min, Q
from django.tasks import TaskResultStatus
from django.utils import timezone
from django_tasks_db.models import DBTaskResult, get_date_max
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from fleet import metrics
from fleet.models import DeliveryStatus, WebhookDelivery
from fleet.services.vehicle_cache import vehicle_list_fetched_at

QUEUES = ("webhooks", "cnh", "alerts", "other")


class PortalState(Collector):
    """Gauges read at each scrape: the portal's backlog and the vehicle list's age."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        now = timezone.now()
        yield from self._tasks(now)
        yield from self._deliveries(now)
        fetched_at = vehicle_list_fetched_at()
        age = GaugeMetricFamily(
            f"{metrics.PREFIX}_vehicle_cache_age_seconds",
            "Age of the vehicle list every worker serves (absent when there is none)",
        )
        if fetched_at is not None:
            age.add_metric([], max(0.0, time.time() - fetched_at))
        yield age

    def _tasks(self, now: Any) -> Iterator[GaugeMetricFamily]:
        asap = Q(run_after=get_date_max())
        due = DBTaskResult.objects.filter(status=TaskResultStatus.READY).filter(
            asap | Q(run_after__lte=now)
        )
        depth = dict.fromkeys(QUEUES, 0)
        since: dict[str, Any] = dict.fromkeys(QUEUES)
        for row in due.values("task_path").annotate(
            waiting=Count("id"),
            enqueued=Min("enqueued_at", filter=asap),
            due_at=Min("run_after", filter=~asap),
        ):
            queue = metrics.task_queue(row["task_path"])
            depth[queue] += row["waiting"]
            for moment in (row["enqueued"], row["due_at"]):
                if moment is not None and (since[queue] is None or moment < since[queue]):
                    since[queue] = moment
        waiting = GaugeMetricFamily(
            f"{metrics.PREFIX}_task_queue_depth",
            "Background tasks due and waiting for the worker, by queue",
            labels=["queue"],
        )
        oldest = GaugeMetricFamily(
            f"{metrics.PREFIX}_task_queue_oldest_age_seconds",
            "How long the oldest task due has waited for the worker, by queue (0: none)",
            labels=["queue"],
        )
        for queue in QUEUES:
            waiting.add_metric([queue], depth[queue])
            oldest.add_metric([queue], _age(now, since[queue]))
        yield waiting
        yield oldest

    def _deliveries(self, now: Any) -> Iterator[GaugeMetricFamily]:
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
        oldest.add_metric([], _age(now, found["oldest"]))
        yield waiting
        yield oldest


def _age(now: Any, since: Any) -> float:
    return 0.0 if since is None else max(0.0, (now - since).total_seconds())


def metrics_exposition() -> tuple[bytes, str]:
    """The metrics in Prometheus' text format, and its content type."""
    state = CollectorRegistry(auto_describe=False)
    state.register(PortalState())
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        counted = CollectorRegistry(auto_describe=False)
        multiprocess.MultiProcessCollector(counted)  # type: ignore[no-untyped-call]
    else:
        counted = REGISTRY
    return generate_latest(counted) + generate_latest(state), CONTENT_TYPE_LATEST


def task_finished_count(sender: Any, task_result: Any, **kwargs: Any) -> None:
    """`django.tasks.signals.task_finished` receiver: a task the worker ran, by outcome."""
    outcome = "succeeded" if task_result.status == TaskResultStatus.SUCCESSFUL else "failed"
    metrics.TASKS.labels(metrics.task_queue(task_result.task.module_path), outcome).inc()
