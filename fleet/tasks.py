"""The portal's background tasks (`django.tasks`), run by `manage.py db_worker`.

Tasks call services; services ask for a task by its name through
`portal.lib.worker.enqueue` and never import this module. A task carries ids
only, never personal data: its arguments are stored in the task table and
shown by the admin.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from fleet.services.attribution import fine_drivers_attribute, fine_drivers_follow
from fleet.services.cnh import cnh_lookup_process
from fleet.services.cnh_privacy import cnh_lookups_purge as purge_old_lookups
from fleet.services.cnh_privacy import cnh_purge_next_run
from fleet.services.cnh_recovery import cnh_lookups_recover_all
from fleet.services.dashboard import fine_figures_count as dashboard_figures_count
from fleet.services.driver_licences import driver_licences_batch_step
from fleet.services.tallies import group_tallies_catch_up as group_tallies_count_changed
from fleet.services.vehicle_cache import vehicle_list_take_in
from fleet.webhooks.processing import deliveries_process_received
from fleet.webhooks.retention import delivery_bodies_purge, delivery_bodies_purge_next_run
from portal.lib import worker
from portal.lib.throttle import Throttle


@worker.task()
def cnh_lookup_run(lookup_id: int) -> str:
    """One attempt of a CNH lookup; it enqueues its own retry when the API asks for one."""
    return cnh_lookup_process(lookup_id=lookup_id)


# Below the other tasks (priority 0): the fines and notifications received go first.
@worker.task(priority=-10)
def driver_history_take_in_run() -> None:
    """Take the vehicle list into the history of who had each vehicle: one a page's
    refresh found too large to write after its response (the first of a large fleet),
    FLEET_DRIVER_HISTORY_TASK_CHANGES changes a run."""
    vehicle_list_take_in()


@worker.task()
def driver_licences_run(user_id: int, before: str, after: int, waiting_for: int | None) -> str:
    """One step of the batch of drivers' licences looked up before `before` (ISO 8601):
    the next drivers after id `after`, once the lookup `waiting_for` is final; it asks
    for its own next step."""
    return driver_licences_batch_step(
        user_id=user_id,
        before=datetime.fromisoformat(before),
        after=after,
        waiting_for=waiting_for,
    )


@worker.task()
def cnh_lookups_recover() -> int:
    """End the lookups whose worker died while they ran (after their lease); it asks for
    its own next run while lookups run."""
    return cnh_lookups_recover_all()


logger = logging.getLogger(__name__)


@worker.task()
def fine_figures_count(
    group_ids: list[int], today: str, language: str, zone: str, counting: str
) -> str:
    """Sum a part of the fleet's dashboard figures from its fines, for its pages: at a
    region of a large fleet longer than a web server lets a request run. One that
    fails lets the next page ask again."""
    return dashboard_figures_count(group_ids, today, language, zone, counting)


@worker.task()
def group_tallies_catch_up() -> int:
    """Count again the tallies of the vehicle groups whose plates changed (each in a
    snapshot: writers of fines go on); while the database is busy, it waits and goes on."""
    return worker.while_busy(group_tallies_count_changed, what="counting vehicle groups' tallies")


@worker.task()
def cnh_lookups_purge() -> int:
    """Purge the lookups past their retention; the next run is the next night.

    The next run is asked for first, so that a purge that fails is tried
    again the next night.
    """
    worker.enqueue_unless_waiting("cnh_lookups_purge", run_after=cnh_purge_next_run())
    return purge_old_lookups()


# Under steady deliveries each portal process asks for a processing run every
# second: their results are of no use once a run has succeeded, so the runs
# themselves keep the table short (CNH lookups' results stay, for the admin).
_RUNS_KEPT = timedelta(hours=1)
_PRUNE_EVERY_S = 600.0


_pruned = Throttle()


@worker.task()
def webhook_deliveries_process() -> dict[str, int]:
    """Process the webhook deliveries still `received`, in batches (it asks for its own
    sequel); while the database is busy, it waits and goes on (`worker.while_busy`)."""
    outcomes = worker.while_busy(deliveries_process_received, what="processing webhook deliveries")
    _processing_runs_prune()
    return dict(outcomes)


def _processing_runs_prune() -> None:
    """Delete the successful processing runs older than an hour (every 10 minutes at most)."""
    if _pruned.due(_PRUNE_EVERY_S):
        worker.runs_prune("webhook_deliveries_process", kept=_RUNS_KEPT)


@worker.task()
def webhook_bodies_purge() -> int:
    """Empty the bodies of old processed deliveries; the next run is the next night (asked
    for first, so that a purge that fails is tried again)."""
    worker.enqueue_unless_waiting(
        "webhook_bodies_purge", run_after=delivery_bodies_purge_next_run()
    )
    return worker.while_busy(delivery_bodies_purge, what="purging old webhook bodies")


@worker.task()
def fine_drivers_attribute_run() -> int:
    """Give the fines written without a vehicle list at hand their vehicle's driver."""
    return worker.while_busy(fine_drivers_attribute, what="attributing fines to drivers")


@worker.task()
def fine_drivers_follow_run(since: str) -> int:
    """Attribute again the fines committed since `since` (ISO 8601: the observation before
    the one that asked), whose driver a new observation of the vehicle list may change."""
    moment = datetime.fromisoformat(since)
    return worker.while_busy(
        lambda: fine_drivers_follow(moment), what="attributing recent fines again"
    )
