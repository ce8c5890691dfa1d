"""The alerts' background task, run by `manage.py db_worker` on a queue of its own.

Its queue ("alerts") has a worker of its own in `db_worker`, so that a run
waiting on subscribers' endpoints never delays webhook processing or CNH
lookups (the "default" queue).

It is asked for when alerts are written (`alerts.services.outbox`), by a
run that claims alerts (a run at its lease's end, should it die), and by
each run for the next alert due (a digest's hour, a retry).
"""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from alerts.services.outbox import SEND_TASK
from alerts.services.pauses import PAUSE_TASK, alert_inactivity_next_run
from alerts.services.pauses import alerts_pause_inactive as pause_inactive_people
from alerts.services.reminder_runs import INDICATIONS_TASK, indication_reminders_next_run
from alerts.services.reminders import indication_reminders_create
from alerts.services.sending import alerts_next_due, alerts_send_due
from portal.lib import worker
from portal.lib.throttle import Throttle

_pruned = Throttle()


@worker.task(queue_name="alerts")
def alerts_send() -> dict[str, int]:
    """Send the alerts that are due; ask for the run that sends the next ones."""
    outcomes = dict(alerts_send_due())
    if (next_due := alerts_next_due()) is not None:
        worker.enqueue_unless_waiting(SEND_TASK, run_after=max(next_due, timezone.now()))
    if _pruned.due(600.0):
        worker.runs_prune(SEND_TASK, kept=timedelta(hours=1))
    return outcomes


@worker.task(queue_name="alerts")  # it sends e-mails: never in the way of deliveries
def alerts_pause_inactive() -> dict[str, int]:
    """Pause the alerts of the people of a provider who stopped signing in, with one last
    e-mail; the next run is tomorrow's.

    The next run is asked for first, so that a run that fails is tried again
    the next day. The first is asked for at a sign-in (alerts.services.pauses).
    """
    worker.enqueue_unless_waiting(PAUSE_TASK, run_after=alert_inactivity_next_run())
    return dict(pause_inactive_people())


@worker.task(queue_name="alerts")
def alerts_indications_daily() -> dict[str, int]:
    """Each morning: write the reminders of the deadlines to indicate a fine's driver that
    are near, and the alerts of those that passed without one (missed: by the clock,
    nothing to mark). The next day's run is asked for first, so that a run that fails is
    tried again the next day; the first at a sign-in or when fines arrive."""
    worker.enqueue_unless_waiting(INDICATIONS_TASK, run_after=indication_reminders_next_run())
    return indication_reminders_create()
