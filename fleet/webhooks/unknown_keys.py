"""The report of payload keys the portal does not know (spec 6, rule 2: additions are additive).

Each key is recorded once, with the delivery it first came in and a sample of
its value; the admin lists those the portal still does not know, so that a
developer sees what the fleet platform added, and when.

One delivery adds at most FLEET_WEBHOOK_UNKNOWN_KEYS_MAX keys to the report:
a payload of thousands of made-up keys would otherwise become thousands of
rows. Those beyond are counted on the delivery (`unknown_keys_unrecorded`,
shown in the admin) and logged with their number; a later delivery or a
replay that carries them records the next ones.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Final

from django.conf import settings
from django.db import transaction

from fleet.models import UnknownWebhookKey, WebhookDelivery

logger = logging.getLogger(__name__)

_PATH_LENGTH: Final = 200  # UnknownWebhookKey.path
# Paths looked up in one query: well under every database's limit of parameters.
_LOOKUP_CHUNK: Final = 500


class _SeenKeys:
    """Unknown keys this process knows are recorded: most deliveries add none."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.paths: set[str] = set()

    def clear(self) -> None:
        with self.lock:
            self.paths.clear()


_seen_keys = _SeenKeys()


def unknown_keys_forget() -> None:
    """Forget which unknown keys this process knows are recorded: the database is asked again."""
    _seen_keys.clear()


def unknown_keys_record(found: Mapping[str, str], delivery: WebhookDelivery) -> None:
    """Remember when each of `found` (`path -> sample`, in payload order) was first seen,
    at most FLEET_WEBHOOK_UNKNOWN_KEYS_MAX new ones, and count the rest on `delivery`;
    never raises."""
    fresh: dict[str, str] = {}
    for path, sample in found.items():
        if (key := path[:_PATH_LENGTH]) not in _seen_keys.paths:
            fresh.setdefault(key, sample)
    if not fresh and not delivery.unknown_keys_unrecorded:
        return
    limit = settings.FLEET_WEBHOOK_UNKNOWN_KEYS_MAX
    try:
        recorded = _recorded(list(fresh))
        new = [path for path in fresh if path not in recorded]
        with transaction.atomic():
            UnknownWebhookKey.objects.bulk_create(
                [
                    UnknownWebhookKey(path=path, first_delivery=delivery, sample=fresh[path])
                    for path in new[:limit]
                ],
                ignore_conflicts=True,  # recorded meanwhile by another run: the first stays
            )
            unrecorded = max(len(new) - limit, 0)
            if unrecorded != delivery.unknown_keys_unrecorded:  # a replay may bring it to 0
                WebhookDelivery.objects.filter(pk=delivery.pk).update(
                    unknown_keys_unrecorded=unrecorded
                )
                delivery.unknown_keys_unrecorded = unrecorded
    except Exception:  # a report, not the delivery: log it and go on
        logger.exception("could not record the unknown webhook keys of delivery %s", delivery.pk)
        return
    if unrecorded:
        logger.warning(
            "webhook delivery %s has %d more new unknown keys than FLEET_WEBHOOK_UNKNOWN_KEYS_MAX "
            "(%d): counted on the delivery, not recorded",
            delivery.pk,
            unrecorded,
            limit,
        )
    with _seen_keys.lock:
        _seen_keys.paths.update(recorded, new[:limit])


def _recorded(paths: list[str]) -> set[str]:
    """Those of `paths` the report already has (recorded by another process, or before
    this one started)."""
    recorded: set[str] = set()
    for start in range(0, len(paths), _LOOKUP_CHUNK):
        chunk = paths[start : start + _LOOKUP_CHUNK]
        recorded.update(
            UnknownWebhookKey.objects.filter(path__in=chunk).values_list("path", flat=True)
        )
    return recorded
