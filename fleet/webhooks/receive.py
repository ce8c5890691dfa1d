"""Receiving a delivery: who may send, what is kept, and storing it before anything else.

Store first: `delivery_receive` writes the delivery with one ORM INSERT
(committed when it returns) before its payload is read, so that whatever
happens next, nothing received is lost, and the sender is answered as soon
as it is stored. Reading it into a fine or a notification is the background
worker's job (`fleet.webhooks.processing`): the receiver only asks for a
processing run, at most once per `FLEET_WEBHOOK_BATCH_SECONDS` per process.

Only an allowlist of headers is kept: a credential, a signature or a cookie
never reaches the database, whatever the sender names it.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import Mapping
from datetime import timedelta
from typing import Any, Final

from django.conf import settings
from django.utils import timezone

from fleet.models import DeliveryStatus, WebhookDelivery
from fleet.webhooks.payloads import InvalidPayload, check_content_type
from portal.lib import metrics, worker
from portal.lib.throttle import Throttle

logger = logging.getLogger(__name__)

# The headers stored with a delivery (lower case): what tells an operator who sent
# it and which event it was. Anything else is left out, credentials first.
STORED_HEADERS: Final = frozenset(
    {
        "content-type",
        "content-length",
        "user-agent",
        "x-request-id",
        "x-correlation-id",
        "x-delivery-id",
        "x-event-id",
        "x-event-type",
        "x-webhook-id",
        "webhook-id",
    }
)
_MAX_HEADER_LENGTH: Final = 500


def webhook_token_valid(*, token: str) -> bool:
    """Whether `token` is one of FLEET_WEBHOOK_TOKENS (compared in constant time).

    Every configured token is compared, so the time taken says nothing about
    which one, or how much of one, matched.
    """
    given = token.encode()
    matched = False
    for accepted in settings.FLEET_WEBHOOK_TOKENS:
        matched |= hmac.compare_digest(given, accepted.encode())
    return matched


def stored_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The request's headers that are kept (`STORED_HEADERS`, and `X-Forwarded-For`
    behind configured proxies), each cut to 500 characters."""
    kept = {
        name: value[:_MAX_HEADER_LENGTH]
        for name, value in headers.items()
        if name.lower() in STORED_HEADERS
    }
    if settings.FLEET_WEBHOOK_PROXY_COUNT and (forwarded := headers.get("X-Forwarded-For")):
        kept["X-Forwarded-For"] = forwarded[:_MAX_HEADER_LENGTH]
    return kept


def delivery_receive(
    *, body: bytes, content_type: str, headers: Mapping[str, str], source_address: str | None
) -> WebhookDelivery:
    """Store a delivery as received (committed on return) and see that it gets processed.

    A body that is not JSON by its content type can never become a record: it
    is stored as `invalid` at once, with the reason, which the sender is told.
    """
    values = _values(
        body=body, content_type=content_type, headers=headers, source_address=source_address
    )
    try:
        check_content_type(content_type)
    except InvalidPayload as invalid:
        values |= {"status": DeliveryStatus.INVALID, "error": str(invalid)}
        delivery = WebhookDelivery.objects.create(**values)
        metrics.WEBHOOK_DELIVERIES.labels("stored").inc()
        metrics.WEBHOOK_DELIVERIES.labels("invalid").inc()
        logger.warning("webhook delivery %s kept as invalid: %s", delivery.pk, invalid)
        return delivery
    delivery = WebhookDelivery.objects.create(**values)
    metrics.WEBHOOK_DELIVERIES.labels("stored").inc()
    deliveries_schedule()
    return delivery


def delivery_refuse(
    *, declared_size: int, content_type: str, headers: Mapping[str, str], source_address: str | None
) -> WebhookDelivery:
    """Record a delivery refused as too large, without its body (never read)."""
    values = _values(
        body=b"", content_type=content_type, headers=headers, source_address=source_address
    )
    values |= {
        "body_size": declared_size,
        "body_sha256": "",
        "status": DeliveryStatus.REFUSED,
        "error": (
            f"the body of {declared_size} bytes is over the limit of "
            f"{settings.FLEET_WEBHOOK_MAX_BYTES} bytes (FLEET_WEBHOOK_MAX_BYTES)"
        ),
    }
    return WebhookDelivery.objects.create(**values)


def _values(
    *, body: bytes, content_type: str, headers: Mapping[str, str], source_address: str | None
) -> dict[str, Any]:
    return {
        "received_at": timezone.now(),
        "content_type": content_type[:255],
        "body": body,
        "body_size": len(body),
        "body_sha256": hashlib.sha256(body).hexdigest(),
        "headers": stored_headers(headers),
        "source_address": source_address,
    }


# When this process last asked the worker for a processing run.
_schedule = Throttle()


def deliveries_schedule_forget() -> None:
    """Forget when this process last asked for a processing run: the next delivery asks."""
    _schedule.reset()


def deliveries_schedule() -> None:
    """Have the worker process the `received` deliveries soon (at most one request per interval).

    Asking once per `FLEET_WEBHOOK_BATCH_SECONDS` is enough for every delivery
    this process stores: a run asked for at `t` starts no earlier than
    `t + interval` and takes every delivery still `received` then, so it
    includes all those stored (committed before they were counted here) until
    the next request at `t + interval`. A run that could not be asked for is
    asked by the next delivery; a delivery it missed is taken by a later run.
    """
    interval = float(settings.FLEET_WEBHOOK_BATCH_SECONDS)
    if not _schedule.due(interval):
        return
    try:
        worker.enqueue(
            "webhook_deliveries_process",
            run_after=timezone.now() + timedelta(seconds=interval),
        )
    except Exception:
        logger.exception("could not ask the worker to process webhook deliveries")
        _schedule.reset()  # stored all the same: the next delivery asks again
