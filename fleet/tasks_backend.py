"""django-tasks-db's backend and worker, carrying the request id from a request to its tasks.

`DatabaseBackend` (settings.TASKS) stores the id of the request under way
(`fleet.request_ids`) in the task's row, as a `request_id` key beside the
package's `args` and `kwargs` (which are all the package reads of that JSON).
`Worker` binds it again while it runs the task, so the task's log lines, its
Fleet API calls and the tasks it enqueues in turn carry the request's id; and
it logs one line per task when it ends (`fleet.tasks`): the task, its queue and
id, whether it succeeded, how long it took and, for a failure, the exception.
`manage.py db_worker` runs this worker for every queue. While the database is
busy (another process holds SQLite's lock longer than its 5 s wait, PostgreSQL
gave up a lock), the worker logs it, waits (`fleet.worker.BusyWaits`) and goes
on: it never exits for that.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from django.db import OperationalError, close_old_connections
from django.tasks import Task, TaskResultStatus
from django.utils.json import normalize_json
from django_tasks_db import backend
from django_tasks_db.management.commands import db_worker
from django_tasks_db.models import DBTaskResult

from fleet import request_ids, worker

logger = logging.getLogger("fleet.tasks")

_REQUEST_ID = "request_id"


class DatabaseBackend(backend.DatabaseBackend):
    """The package's backend; a task enqueued during a request keeps that request's id."""

    # The package's own `create`s, with the request id in `args_kwargs`.
    def _task_to_db_task(
        self, task: Task[Any, Any], args: Any, kwargs: Any
    ) -> DBTaskResult[Any, Any]:
        return DBTaskResult.objects.create(**self._row(task, args, kwargs))

    async def _atask_to_db_task(
        self, task: Task[Any, Any], args: Any, kwargs: Any
    ) -> DBTaskResult[Any, Any]:
        return await DBTaskResult.objects.acreate(**self._row(task, args, kwargs))

    def _row(self, task: Task[Any, Any], args: Any, kwargs: Any) -> dict[str, Any]:
        """The task's row, as the package writes it, with the request id."""
        return {
            "id": self._get_id(),
            "args_kwargs": _args_kwargs(args, kwargs),
            "priority": task.priority,
            "task_path": task.module_path,
            "queue_name": task.queue_name,
            "run_after": task.run_after,
            "backend_name": self.alias,
        }


def _args_kwargs(args: Any, kwargs: Any) -> Any:
    stored = {"args": args, "kwargs": kwargs}
    if (request_id := request_ids.current()) is not None:
        stored[_REQUEST_ID] = request_id
    return normalize_json(stored)


def stored_request_id(db_task: DBTaskResult[Any, Any]) -> str | None:
    """The id of the request that enqueued the task (None: none, or not one to trust)."""
    stored = db_task.args_kwargs
    value = stored.get(_REQUEST_ID) if isinstance(stored, dict) else None
    return value if request_ids.is_sane(value) else None


class Worker(db_worker.Worker):
    """The package's worker, running each task with its request's id and logging its end;
    it waits out a busy database where the package's would stop."""

    def run(self) -> None:
        waits = worker.BusyWaits()
        while True:
            try:
                super().run()
                return
            except OperationalError as error:
                # Claiming a task, or writing how one ended (its row then stays "running";
                # what the task did stands): the package's loop again, later.
                if not self.running or not worker.database_busy(error):
                    raise
                if not waits.wait(error, what=f"worker {self.worker_id}"):
                    raise
                close_old_connections()

    def run_task(self, db_task_result: DBTaskResult[Any, Any]) -> None:
        with request_ids.bound(stored_request_id(db_task_result)):
            started = time.monotonic()
            super().run_task(db_task_result)
            _run_log(db_task_result, duration_ms=(time.monotonic() - started) * 1000)


def _run_log(db_task: DBTaskResult[Any, Any], *, duration_ms: float) -> None:
    failed = db_task.status == TaskResultStatus.FAILED
    level = logging.ERROR if failed else logging.INFO
    if not logger.isEnabledFor(level):
        return
    outcome = "failed" if failed else "succeeded"
    fields = {
        "task": db_task.task_path,
        "queue": db_task.queue_name,
        "task_id": str(db_task.id),
        "status": outcome,
        "duration_ms": round(duration_ms),
    }
    message = "task %s (queue %s, id %s) %s in %.0f ms"
    args: tuple[object, ...] = (
        db_task.task_path,
        db_task.queue_name,
        db_task.id,
        outcome,
        duration_ms,
    )
    record = logger.makeRecord(
        logger.name, level, __file__, 0, message, args, None, func="run_task", extra=fields
    )
    # The package caught the exception and kept only its traceback, on the row: the
    # record carries that text as its exception (the handlers' redaction scrubs it).
    if failed and db_task.traceback:
        record.exc_text = db_task.traceback.rstrip("\n")
    logger.handle(record)
