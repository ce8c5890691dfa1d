"""`manage.py db_worker`: django-tasks-db's worker, one per task queue, in one process.

Each queue of the task backend (settings.TASKS) gets a worker of its own: the
"default" queue (webhook deliveries, CNH lookups) in the main thread, as the
package runs it, and every other ("alerts", whose POSTs wait on subscribers'
endpoints) in a thread of its own. A slow task of one queue never delays
another's, and the operator still starts one command with no option.
`--queue-name` runs a single worker on the queues named, as the package's does;
`--batch` runs every queue's due tasks one after the other, then exits. Every
worker is `portal.lib.tasks_backend.Worker`: each task runs with the id of the
request that enqueued it and ends with one log line (`fleet.tasks`), which
stands for Django's own start and end lines of a task (`django.tasks`, shown
with `--verbosity 2`).

On SIGTERM or SIGINT the main worker ends its task under way, as the package's
does; the others are asked to stop (`portal.lib.worker.stopping`: the alerts' run
ends after the POSTs under way) and waited for up to `_STOP_WAIT_S` (not at
all after a second signal), then the process exits, even if one is still at
work. A task cut short there is safe, as after a kill: what it had claimed
waits for its lease and is taken up again.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from argparse import ArgumentParser
from types import FrameType
from typing import Any, Final

from django.conf import settings
from django.core.management.base import CommandError
from django.db import connections
from django.utils.autoreload import DJANGO_AUTORELOAD_ENV, run_with_reloader
from django_tasks_db.compat import TASKS_LOGGER
from django_tasks_db.management.commands import db_worker

from portal.lib import worker
from portal.lib.tasks_backend import Worker

logger = logging.getLogger("django_tasks_db")

# Under deploy/systemd's TimeoutStopSec, and longer than an outgoing webhook's deadline.
_STOP_WAIT_S: Final = 20.0


class Command(db_worker.Command):
    help = (
        "Run the background worker: a worker per task queue (webhook deliveries and CNH "
        "lookups; alerts), each in a thread of its own, so that none delays another."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        super().add_arguments(parser)
        parser.set_defaults(queue_name=None)  # none named: every queue, each its own worker

    def configure_logging(self, verbosity: int) -> None:
        super().configure_logging(verbosity)
        if verbosity < 2:
            # Each task's line of `fleet.tasks` says what Django's start and end lines say,
            # with the request id and the time taken; a failure's traceback is written once.
            logging.getLogger(TASKS_LOGGER).setLevel(logging.CRITICAL)

    def handle(self, *, queue_name: str | None, **options: Any) -> None:
        self.configure_logging(options["verbosity"])
        queues = list(settings.TASKS[options["backend_name"]].get("QUEUES") or ["default"])
        if queue_name is not None or options["exclude_queues"]:
            self._run_one(queue_name or "default", **options)
        elif options["batch"] or len(queues) == 1:
            self._run_one(",".join(queues), **options)
        else:
            self._run_per_queue(queues, **options)

    def _run_one(self, queue_name: str, **options: Any) -> None:
        """One worker on the queues named, as the package's command runs it."""
        reload = options["reload"]
        if reload and options["batch"]:
            logger.warning("--reload and --batch cannot be given together: not reloading.")
            reload = False
        excluded = options["exclude_queues"].split(",") if options["exclude_queues"] else []
        queue_names = queue_name.split(",")
        if excluded and "*" not in queue_names:
            raise CommandError("--exclude-queues can only be used with --queue-name=*")
        main = Worker(
            queue_names=queue_names,
            worker_id=options["worker_id"],
            excluded_queue_names=excluded,
            **_common(options, batch=options["batch"]),
        )
        _run(main, reload=reload)

    def _run_per_queue(self, queues: list[str], **options: Any) -> None:
        common = _common(options, batch=False) | {"excluded_queue_names": []}
        first = "default" if "default" in queues else queues[0]
        worker_id: str = options["worker_id"]
        others = [
            Worker(
                queue_names=[queue], worker_id=f"{worker_id[: 63 - len(queue)]}-{queue}", **common
            )
            for queue in queues
            if queue != first
        ]
        main = QueueWorkers(queue_names=[first], worker_id=worker_id, others=others, **common)
        _run(main, reload=options["reload"])


def _common(options: dict[str, Any], *, batch: bool) -> dict[str, Any]:
    return {
        "interval": options["interval"],
        "batch": batch,
        "backend_name": options["backend_name"],
        "startup_delay": options["startup_delay"],
        "max_tasks": options["max_tasks"],
    }


def _run(main: Worker, *, reload: bool) -> None:
    if reload:
        if os.environ.get(DJANGO_AUTORELOAD_ENV) == "true":
            main.configure_signals()  # only the child the reloader runs
        run_with_reloader(main.run)
    else:
        main.configure_signals()
        main.run()


class QueueWorkers(Worker):
    """The package's worker for one queue in this thread, and `others` (one per other
    queue) in threads of their own, stopped with it.

    Signals reach the main thread only: its handler stops them all. Should a
    worker beside it stop on an error (a lost database connection), the main
    one stops too and the command fails, so that the supervisor starts the
    whole worker again, as it would after the package's own worker failed.
    """

    def __init__(self, *, others: list[Worker], **options: Any) -> None:
        super().__init__(**options)
        self.others = others
        self.failed = False
        self._forced = False

    def run(self) -> None:
        threads = [
            threading.Thread(
                target=self._run_beside,
                args=(other,),
                name=f"db_worker {','.join(other.queue_names)}",
                daemon=True,  # one still busy after the wait does not keep the process
            )
            for other in self.others
        ]
        for thread in threads:
            thread.start()
        try:
            super().run()
        finally:
            self._others_stop(threads)
        if self.failed:
            raise CommandError("a queue's worker stopped on an error (logged above)")

    def shutdown(self, signum: int, frame: FrameType | None) -> None:
        self._forced = not self.running  # a second signal: stop without waiting
        worker.stopping_begin()
        for other in self.others:
            other.running = False
        super().shutdown(signum, frame)

    def _run_beside(self, other: Worker) -> None:
        try:
            other.run()
        except BaseException:
            logger.exception("the worker of queue %s stopped on an error", other.queue_names)
            self.failed = True
            self.running = False  # the main worker stops after its task under way
        finally:
            connections.close_all()  # this thread's own

    def _others_stop(self, threads: list[threading.Thread]) -> None:
        worker.stopping_begin()
        for other in self.others:
            other.running = False
        deadline = time.monotonic() + (0.0 if self._forced else _STOP_WAIT_S)
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        busy = [thread.name for thread in threads if thread.is_alive()]
        if busy:
            logger.warning(
                "stopping without waiting more for %s (what its task claimed is taken up "
                "again when its lease ends)",
                ", ".join(busy),
            )
            # The interpreter's exit would wait for the task's threads (a POST under way).
            logging.shutdown()
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(1 if self.failed else 0)
