"""The report of payload keys the portal does not know (spec 6, rule 2: additions are additive).

Each key is recorded once, with the delivery it first came in and a sample of
its value; the admin lists those the portal still does not know, so that a
developer sees what the fleet platform added, and when.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping

from django.db import transaction

from fleet.models import UnknownWebhookKey, WebhookDelivery

logger = logging.getLogger(__name__)


class _SeenKeys:
    """Unknown keys this process has already recorded: most deliveries add none."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.paths: set[str] = set()

    def clear(self) -> None:
        with self.lock:
            self.paths.clear()


_seen_keys = _SeenKeys()


def unknown_keys_record(found: Mapping[str, str], delivery: WebhookDelivery) -> None:
    """Remember when each of `found` (`path -> sample`) was first seen; never raises."""
    fresh = {path: sample for path, sample in found.items() if path not in _seen_keys.paths}
    if not fresh:
        return
    try:
        with transaction.atomic():
            UnknownWebhookKey.objects.bulk_create(
                [
                    UnknownWebhookKey(path=path[:200], first_delivery=delivery, sample=sample)
                    for path, sample in fresh.items()
                ],
                ignore_conflicts=True,  # the first one seen stays first
            )
    except Exception:  # a report, not the delivery: log it and go on
        logger.exception("could not record the unknown webhook keys of delivery %s", delivery.pk)
        return
    with _seen_keys.lock:
        _seen_keys.paths.update(fresh)
