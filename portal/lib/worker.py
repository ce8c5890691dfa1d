"""How services hand work to the background worker (`manage.py db_worker`).

`fleet.tasks` holds the tasks and calls the services; a service that needs a
task run names it here and never imports `fleet.tasks`, so the two never
import each other (tests/test_imports.py checks it). Another app's tasks are
named by their dotted path (`alerts.tasks.alerts_send`).

A task enqueued during a request keeps that request's id (`request_ids`): `enqueue`
passes it as the `request_id` keyword, stored with the task's arguments as any other
(django.tasks' own door), and a task made with `task` here takes it and runs with it
bound, so its log lines, its Fleet API calls and the tasks it enqueues in turn carry it.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable
from contextvars import ContextVar
from datetime import datetime, timedelta
from typing import Any, Final

from django.db import OperationalError
from django.db.models import Q
from django.tasks import Task, TaskResultStatus
from django.tasks import task as django_task
from django.utils import timezone
from django.utils.module_loading import import_string
from django_tasks_db.models import DBTaskResult, get_date_max
from django_tasks_db.utils import is_locked_database_exception

from portal.lib import request_ids

logger = logging.getLogger(__name__)

_stopping = threading.Event()

# The waits while the database is busy: doubling from the first to the last, which
# repeats; back to the first once the database has answered for that long.
BUSY_WAIT_FIRST_S: Final = 0.5
BUSY_WAIT_MAX_S: Final = 30.0
# PostgreSQL's "held by someone else for now": lock_not_available, deadlock_detected,
# serialization_failure. SQLite says "database is locked" (after its own 5 s wait).
_BUSY_SQLSTATES: Final = frozenset({"55P03", "40P01", "40001"})


REQUEST_ID: Final = "request_id"

_in_task: ContextVar[bool] = ContextVar("portal_in_task", default=False)


def in_task() -> bool:
    """Whether this code runs inside a background task (made with `task`), where no web
    server's timeout stops a long piece of work."""
    return _in_task.get()


def task(**options: Any) -> Callable[[Callable[..., Any]], Task[Any, Any]]:
    """`django.tasks.task`, for a function that runs with the id of the request that
    enqueued it (the `request_id` keyword `enqueue` adds; the function never sees it)."""

    def decorate(function: Callable[..., Any]) -> Task[Any, Any]:
        @functools.wraps(function)
        def with_request_id(*args: Any, request_id: Any = None, **kwargs: Any) -> Any:
            token = _in_task.set(True)
            try:
                with request_ids.bound(request_id if request_ids.is_sane(request_id) else None):
                    return function(*args, **kwargs)
            finally:
                _in_task.reset(token)

        made: Task[Any, Any] = django_task(**options)(with_request_id)
        return made

    return decorate


def enqueue(task: str, *args: Any, run_after: datetime | None = None, **kwargs: Any) -> None:
    """Have the worker run `fleet.tasks.<task>(*args, **kwargs)` (or the task at the dotted
    path `task`), at `run_after` or soon; with the id of the request under way, if any.

    Raises what the task backend raises when the task cannot be stored.
    """
    found = import_string(_path(task))
    if run_after is not None:
        found = found.using(run_after=run_after)
    if (request_id := request_ids.current()) is not None:
        kwargs[REQUEST_ID] = request_id
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


def database_busy(error: BaseException) -> bool:
    """Whether `error` says that the database is held by someone else for now (another
    process writing to SQLite, a lock PostgreSQL gave up waiting for): worth waiting for,
    not a failure of what was being done."""
    if not isinstance(error, OperationalError):
        return False
    sqlstate = getattr(error.__cause__, "sqlstate", None)
    return sqlstate in _BUSY_SQLSTATES or (bool(error.args) and is_locked_database_exception(error))


class BusyWaits:
    """The waits of one worker (or task) while the database is busy: each twice the one
    before, up to `BUSY_WAIT_MAX_S`; the first again once the database answered since."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._next = BUSY_WAIT_FIRST_S
        self._last_busy = float("-inf")

    def wait(self, error: BaseException, *, what: str) -> bool:
        """Log that the database is busy and wait the next wait; False (at once) if the
        worker is stopping."""
        now = self._clock()
        if now - self._last_busy > BUSY_WAIT_MAX_S + self._next:  # it answered meanwhile
            self._next = BUSY_WAIT_FIRST_S
        wait, self._next = self._next, min(self._next * 2, BUSY_WAIT_MAX_S)
        logger.warning("the database is busy (%s): %s tries again in %.1f s", error, what, wait)
        stopped = _stopping.wait(wait)
        self._last_busy = self._clock()
        return not stopped


def while_busy[T](run: Callable[[], T], *, what: str) -> T:
    """`run()`, run again after a wait (`BusyWaits`) each time it ends because the database
    is busy, until it ends otherwise or the worker stops (then the error is raised).

    For a task whose work is safe to begin again (each of its transactions either
    committed or was undone): the worker does not fail it, it does it once the
    database is free."""
    waits = BusyWaits()
    while True:
        try:
            return run()
        except OperationalError as error:
            if not database_busy(error) or not waits.wait(error, what=what):
                raise


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
