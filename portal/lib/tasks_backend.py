"""django-tasks-db's worker, running each task with the id of the request that enqueued it.

A task made with `worker.task` and enqueued by `worker.enqueue` during a request
carries that request's id as its `request_id` keyword (`portal.lib.request_ids`).
`Worker` binds it while the task runs, so the package's own lines about the task
carry it too; and it logs one line per task when it ends (`fleet.tasks`): the task,
its queue and id, whether it succeeded, how long it took and, for a failure, the
exception. `manage.py db_worker` runs this worker for every queue. While the database
is busy (another process holds SQLite's lock longer than its 5 s wait, PostgreSQL gave
up a lock), the worker logs it, waits (`portal.lib.worker.BusyWaits`) and goes on: it
never exits for that. Only the package's public names are used: the worker's `run`
and `run_task`, and the task row's fields.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from django.db import OperationalError, close_old_connections
from django.tasks import TaskResultStatus
from django_tasks_db.management.commands import db_worker
from django_tasks_db.models import DBTaskResult

from portal.lib import request_ids, worker

logger = logging.getLogger("fleet.tasks")


def stored_request_id(db_task: DBTaskResult[Any, Any]) -> str | None:
    """The id of the request that enqueued the task (None: none, or not one to trust)."""
    stored = db_task.args_kwargs
    kwargs = stored.get("kwargs") if isinstance(stored, dict) else None
    value = kwargs.get(worker.REQUEST_ID) if isinstance(kwargs, dict) else None
    return value if request_ids.is_sane(value) else None


class Worker(db_worker.Worker):
    """The package's worker, running each task with its request's id and logging its end;
    it waits out a busy database where the package's would stop. `ran`: how many tasks
    it ran."""

    ran = 0

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
            self.ran += 1
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
