"""The body `/metrics` answers: what the processes of this host counted, and the state of
the whole portal read now from the database and the cache.

Under gunicorn and beside `manage.py db_worker`, PROMETHEUS_MULTIPROC_DIR is set and the
counts are summed from the files every process writes there (prometheus-client's
multiprocess mode); without it (`make run`, the tests), this process's own counts. The
state is the same whichever host answers: the due tasks waiting per queue and the oldest
of them, here, and what each app adds with `state_collector_add` (the fleet's: the
webhook deliveries not processed yet, the vehicle list's age).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import datetime
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

from portal.lib import metrics

QUEUES = ("webhooks", "cnh", "alerts", "other")

_state_collectors: dict[str, Collector] = {}


def state_collector_add(name: str, collector: Collector) -> None:
    """Have `/metrics` read `collector`'s gauges at each scrape (an app's `ready()`; the
    same name again replaces it)."""
    _state_collectors[name] = collector


class TaskQueues(Collector):
    """Gauges read at each scrape: the background tasks due and waiting, by queue."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        now = timezone.now()
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
            oldest.add_metric([queue], age_seconds(now, since[queue]))
        yield waiting
        yield oldest


def age_seconds(now: datetime, since: datetime | None) -> float:
    """How long ago `since` was (0: never, or in the future)."""
    return 0.0 if since is None else max(0.0, (now - since).total_seconds())


def metrics_exposition() -> tuple[bytes, str]:
    """The metrics in Prometheus' text format, and its content type."""
    state = CollectorRegistry(auto_describe=False)
    state.register(TaskQueues())
    for collector in _state_collectors.values():
        state.register(collector)
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
