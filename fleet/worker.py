"""How services hand work to the background worker (`manage.py db_worker`).

`fleet.tasks` holds the tasks and calls the services; a service that needs a
task run names it here and never imports `fleet.tasks`, so the two never
import each other (tests/test_imports.py checks it). Another app's tasks are
named by their dotted path (`alerts.tasks.alerts_send`).
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Q
from django.tasks import TaskResultStatus
from django.utils import timezone
from django.utils.module_loading import import_string
from django_tasks_db.models import DBTaskResult, get_date_max

logger = logging.getLogger(__name__)

_stopping = threading.Event()


def enqueue(task: str, *args: Any, run_after: datetime | None = None, **kwargs: Any) -> None:
    """Have the worker run `fleet.tasks.<task>(*args, **kwargs)` (or the task at the dotted
    path `task`), at `run_after` or soon.

    Raises what the task backend raises when the task cannot be stored.
    """
    found = import_string(_path(task))
    if run_after is not None:
        found = found.using(run_after=run_after)
    found.enqueue(*args, **kwargs)


def enqueue_unless_waiting(task: str, *, run_after: datetime | None = None) -> bool:
    """`enqueue` the argument-less `task`, unless a run of it is already waiting; whether it did.

    For a task that asks for its own next run (a daily purge): however many
    callers start it, one run waits at a time (with `run_after`: one due by then).
    Two callers at once may both enqueue one; the task's next run then finds the
    other waiting.
    """
    waiting = DBTaskResult.objects.filter(task_path=_path(task), status=TaskResultStatus.READY)
    if run_after is not None:
        # One due later would not do: a run must happen by `run_after` (the backend stores
        # "as soon as possible" as its largest date).
        waiting = waiting.filter(Q(run_after__lte=run_after) | Q(run_after=get_date_max()))
    if waiting.exists():
        return False
    enqueue(task, run_after=run_after)
    return True


def daily_at(hour: int) -> datetime:
    """When a daily task runs next: the portal's next `hour` o'clock (TIME_ZONE) at least
    an hour away (a run that asks for the next one never asks for itself again)."""
    now = timezone.localtime()
    at = now.replace(hour=hour, minute=0, second=0, microsecond=0)
    while at < now + timedelta(hours=1):
        at += timedelta(days=1)
    return at


def waiting_delete(task: str) -> int:
    """Delete the runs of the argument-less `task` that wait (not those under way); how many."""
    waiting = DBTaskResult.objects.filter(task_path=_path(task), status=TaskResultStatus.READY)
    deleted, _ = waiting.delete()
    return deleted


def runs_prune(task: str, *, kept: timedelta) -> int:
    """Delete the successful runs of `task` finished more than `kept` ago; how many.

    For a task run often whose results are of no use once it has succeeded.
    """
    deleted, _ = DBTaskResult.objects.filter(
        task_path=_path(task),
        status=TaskResultStatus.SUCCESSFUL,
        finished_at__lt=timezone.now() - kept,
    ).delete()
    if deleted:
        logger.info("deleted %d finished runs of %s", deleted, task)
    return deleted


def stopping() -> bool:
    """Whether this worker process was asked to stop (SIGTERM, Ctrl-C).

    A task that works through a backlog (sending alerts) checks it and ends its run
    early: what it leaves is due, and the next worker's run takes it.
    """
    return _stopping.is_set()


def stopping_begin() -> None:
    """Tell this process's tasks that the worker is stopping (`manage.py db_worker` does)."""
    _stopping.set()


def _path(task: str) -> str:
    return task if "." in task else f"fleet.tasks.{task}"
