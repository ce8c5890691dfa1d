"""How long a webhook delivery's raw body is kept: `FLEET_WEBHOOK_BODIES_KEEP_DAYS` days
after it arrived, once it is processed (or a duplicate of one processed: what it made
cannot come out differently). Then the worker empties it, every night, a chunk of
deliveries to a short transaction; the delivery's row keeps its fields (status, kind,
size and SHA-256 of the body, when it was purged) and what it made stays.

At ten million fines the bodies are most of the database; the records are what the
portal shows. A delivery kept for another reason (invalid, failed, an unknown event)
keeps its body for as long as it is kept, so that it can be replayed.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Final

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from fleet.models import BODY_PURGED_STATUSES, WebhookDelivery
from portal.lib import worker
from portal.lib.throttle import Throttle

logger = logging.getLogger(__name__)

# Deliveries whose body one transaction empties.
PURGE_CHUNK: Final = 1000
# The purge runs at night, after the CNH lookups' (3:00).
_PURGE_HOUR: Final = 4
# A processing run asks for the nightly purge at most this often (it is asked once).
_ASK_EVERY_S: Final = 3600.0

_asked = Throttle()


def delivery_bodies_purge(*, chunk: int = PURGE_CHUNK) -> int:
    """Empty the bodies of the deliveries processed that arrived more than
    FLEET_WEBHOOK_BODIES_KEEP_DAYS days ago, oldest first, `chunk` to a transaction;
    how many. Stops early, the rest for the next night, if the worker is stopping."""
    days = settings.FLEET_WEBHOOK_BODIES_KEEP_DAYS
    cutoff = timezone.now() - timedelta(days=days)
    # As the index's condition reads (`fleet_delivery_body_kept`), so that SQLite uses it.
    kept = WebhookDelivery.objects.filter(
        body_purged_at__isnull=True, status__in=BODY_PURGED_STATUSES, received_at__lt=cutoff
    )
    purged = 0
    while not worker.stopping():
        with transaction.atomic():
            pks = list(kept.order_by("received_at").values_list("pk", flat=True)[:chunk])
            WebhookDelivery.objects.filter(pk__in=pks).update(
                body=b"", body_purged_at=timezone.now()
            )
        purged += len(pks)
        if len(pks) < chunk:
            break
    logger.info(
        "emptied the bodies of %d webhook deliveries older than %d days "
        "(FLEET_WEBHOOK_BODIES_KEEP_DAYS)",
        purged,
        days,
    )
    return purged


def delivery_bodies_purge_next_run() -> datetime:
    """When the purge runs next: the portal's next 4:00 at least an hour away."""
    return worker.daily_at(_PURGE_HOUR)


def delivery_bodies_purge_schedule_forget() -> None:
    """Forget when this process last asked for the purge: the next processing run asks."""
    _asked.reset()


def delivery_bodies_purge_schedule() -> None:
    """Start the worker's nightly purge, unless a run of it is waiting (asked at most once
    an hour by this process). Each run asks for the next night's."""
    if not _asked.due(_ASK_EVERY_S):
        return
    try:
        worker.enqueue_unless_waiting(
            "webhook_bodies_purge", run_after=delivery_bodies_purge_next_run()
        )
    except Exception:
        logger.exception("could not ask the worker to purge old webhook bodies")
        _asked.reset()
