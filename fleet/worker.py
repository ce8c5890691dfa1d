"""How services hand work to the background worker (`manage.py db_worker`).

`fleet.tasks` holds the tasks and calls the services; a service that needs a
task run names it here and never imports `fleet.tasks`, so the two never
import each other (tests/test_imports.py checks it).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.tasks import TaskResultStatus
from django.utils.module_loading import import_string
from django_tasks_db.models import DBTaskResult


def enqueue(task: str, *args: Any, run_after: datetime | None = None, **kwargs: Any) -> None:
    """Have the worker run `fleet.tasks.<task>(*args, **kwargs)`, at `run_after` or soon.

    Raises what the task backend raises when the task cannot be stored.
    """
    found = import_string(f"fleet.tasks.{task}")
    if run_after is not None:
        found = found.using(run_after=run_after)
    found.enqueue(*args, **kwargs)


def enqueue_unless_waiting(task: str, *, run_after: datetime | None = None) -> bool:
    """`enqueue` the argument-less `task`, unless a run of it is already waiting; whether it did.

    For a task that asks for its own next run (a daily purge): however many
    callers start it, one run waits at a time. Two callers at once may both
    enqueue one; the task's next run then finds the other waiting.
    """
    path = f"fleet.tasks.{task}"
    if DBTaskResult.objects.filter(task_path=path, status=TaskResultStatus.READY).exists():
        return False
    enqueue(task, run_after=run_after)
    return True


def waiting_delete(task: str) -> int:
    """Delete the runs of the argument-less `task` that wait (not those under way); how many."""
    path = f"fleet.tasks.{task}"
    waiting = DBTaskResult.objects.filter(task_path=path, status=TaskResultStatus.READY)
    deleted, _ = waiting.delete()
    return deleted
