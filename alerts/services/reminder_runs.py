"""When the worker's daily run of the indication deadlines happens
(`alerts.tasks.alerts_indications_daily`: the reminders, and the alerts of the deadlines
missed), and how it is started: at a sign-in, or when fines arrive; each run asks for
the next day's."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Final

from portal.lib import worker

logger = logging.getLogger(__name__)

INDICATIONS_TASK: Final = "alerts.tasks.alerts_indications_daily"
# The run is in the morning, the portal's time: the day's reminders reach people at work.
_RUN_HOUR: Final = 7


def indication_reminders_next_run() -> datetime:
    """When the daily run is next: the portal's next 7:00 at least an hour away."""
    return worker.daily_at(_RUN_HOUR)


def indication_reminders_schedule() -> None:
    """Start the daily run, unless one waits: each run asks for the next day's."""
    try:
        worker.enqueue_unless_waiting(INDICATIONS_TASK, run_after=indication_reminders_next_run())
    except Exception:
        logger.exception("could not ask the worker for the daily run of indication deadlines")
