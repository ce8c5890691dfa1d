"""The sign-in's background task, run by `manage.py db_worker`: the SCIM audit's
retention (`signin.scim.retention`)."""

from __future__ import annotations

from portal.lib import worker
from signin.scim.retention import PURGE_TASK, scim_calls_purge, scim_calls_purge_next_run


@worker.task()
def scim_calls_purge_run() -> int:
    """Delete the SCIM audit past its retention; the next run is the next night (asked
    for first, so that a purge that fails is tried again)."""
    worker.enqueue_unless_waiting(PURGE_TASK, run_after=scim_calls_purge_next_run())
    return worker.while_busy(scim_calls_purge, what="purging old SCIM calls")
