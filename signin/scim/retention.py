"""How long the SCIM audit is kept: the calls of the providers' clients (`ScimCall`) and
the requests counted by minute (`ScimMinute`, the record of those refused)
SCIM_CALLS_KEEP_DAYS days; the worker deletes older ones every night, a chunk to a
short transaction. The first run is asked for by an authenticated call (once an hour
per process at most); each run asks for the next night's."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Final

from django.conf import settings
from django.db import transaction
from django.db.models import Model
from django.utils import timezone

from portal.lib import worker
from portal.lib.throttle import Throttle
from signin.models import ScimCall, ScimMinute

logger = logging.getLogger(__name__)

PURGE_TASK: Final = "signin.tasks.scim_calls_purge_run"
# Rows one transaction deletes.
PURGE_CHUNK: Final = 1000
# At night, after the webhook bodies' (4:00).
_PURGE_HOUR: Final = 5
_ASK_EVERY_S: Final = 3600.0

_asked = Throttle()


def scim_calls_purge(*, chunk: int = PURGE_CHUNK) -> int:
    """Delete the SCIM calls and minutes older than SCIM_CALLS_KEEP_DAYS days, oldest
    first, `chunk` to a transaction; how many. Stops early if the worker is stopping."""
    days = settings.SCIM_CALLS_KEEP_DAYS
    cutoff = timezone.now() - timedelta(days=days)
    deleted = 0
    old: list[tuple[type[Model], str]] = [(ScimCall, "created_at"), (ScimMinute, "minute")]
    for model, when in old:
        expired = model._default_manager.filter(**{f"{when}__lt": cutoff}).order_by(when)
        while not worker.stopping():
            with transaction.atomic():
                pks = list(expired.values_list("pk", flat=True)[:chunk])
                model._default_manager.filter(pk__in=pks).delete()
            deleted += len(pks)
            if len(pks) < chunk:
                break
    logger.info(
        "deleted %d SCIM calls and minutes older than %d days (SCIM_CALLS_KEEP_DAYS)",
        deleted,
        days,
    )
    return deleted


def scim_calls_purge_next_run() -> datetime:
    """When the purge runs next: the portal's next 5:00 at least an hour away."""
    return worker.daily_at(_PURGE_HOUR)


def scim_calls_purge_schedule_forget() -> None:
    """Forget when this process last asked for the purge: the next call asks."""
    _asked.reset()


def scim_calls_purge_schedule() -> None:
    """Start the nightly purge unless a run waits (asked at most once an hour here)."""
    if not _asked.due(_ASK_EVERY_S):
        return
    try:
        worker.enqueue_unless_waiting(PURGE_TASK, run_after=scim_calls_purge_next_run())
    except Exception:
        logger.exception("could not ask the worker to purge old SCIM calls")
        _asked.reset()
