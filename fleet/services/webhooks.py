"""Webhook deliveries: stored as received, then processed into fines and notifications.

Store first: `delivery_store` writes the delivery (one INSERT, committed)
before anything is parsed, so that whatever happens next, nothing received
is lost. `delivery_process` then reads it in one transaction: a delivery
that cannot become a record keeps its status and error and can be replayed
(`delivery_replay`, the admin action, `manage.py replay_webhooks`).

Idempotent, whatever the order of arrival:

- the same body twice (`body_sha256`) is a duplicate of the one already
  processed, and changes nothing;
- a record is found by its key (the payload's id, else a digest of its
  identifying fields) and updated in place;
- when the payload carries its own time (`updatedAt`), an event older than
  the record's state is kept in the history but does not overwrite the
  state; without one, arrival order decides;
- a `linkFrame` once available is never erased by a `null` (spec 2.6: null
  means "not available yet", so a null after a URL is an older event).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import logging
import threading
from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from fleet import webhooks
from fleet.models import (
    DeliveryStatus,
    EventKind,
    Fine,
    Notification,
    UnknownWebhookKey,
    WebhookDelivery,
    WebhookRecord,
)

logger = logging.getLogger(__name__)

# Header names that may carry a credential or a signature: never stored.
_SECRET_HEADER_PARTS = ("auth", "cookie", "token", "secret", "signature", "key", "password")
_MAX_HEADERS, _MAX_HEADER_LENGTH = 40, 500
_KEPT_STATUSES = frozenset(
    {DeliveryStatus.INVALID, DeliveryStatus.FAILED, DeliveryStatus.UNKNOWN_KIND}
)


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


def webhook_source_address(*, remote_addr: str, forwarded_for: str = "") -> str | None:
    """The sender's address as the deployment's proxies report it.

    With FLEET_WEBHOOK_PROXY_COUNT = N > 0, each of N proxies appended the
    address it received from to X-Forwarded-For: the Nth entry from the
    right is the one the outermost proxy saw (entries left of it are the
    sender's own claims). With 0, the connection's address. None when it is
    not an IP address.
    """
    candidate = remote_addr
    proxies = settings.FLEET_WEBHOOK_PROXY_COUNT
    if proxies and forwarded_for:
        hops = [hop.strip() for hop in forwarded_for.split(",") if hop.strip()]
        if hops:
            candidate = hops[-proxies] if len(hops) >= proxies else hops[0]
    try:
        return str(ipaddress.ip_address(candidate))
    except ValueError:
        return None


def delivery_store(
    *,
    body: bytes,
    content_type: str,
    headers: Mapping[str, str],
    source_address: str | None,
    declared_size: int | None = None,
) -> WebhookDelivery:
    """Write one delivery as received (committed on return), before any parsing.

    `declared_size` without a body: a delivery refused as too large, recorded
    (status `refused`) so that an operator sees it; its body was never read.
    """
    refused = declared_size is not None
    return WebhookDelivery.objects.create(
        content_type=content_type[:255],
        body=body,
        body_size=len(body) if declared_size is None else declared_size,
        body_sha256="" if refused else hashlib.sha256(body).hexdigest(),
        headers=_safe_headers(headers),
        source_address=source_address,
        status=DeliveryStatus.REFUSED if refused else DeliveryStatus.RECEIVED,
        error=(
            f"the body of {declared_size} bytes is over the limit of "
            f"{settings.FLEET_WEBHOOK_MAX_BYTES} bytes (FLEET_WEBHOOK_MAX_BYTES)"
            if refused
            else ""
        ),
    )


def delivery_process(*, delivery: WebhookDelivery) -> DeliveryStatus:
    """Turn a stored delivery into its record; its status says how it went.

    Never raises: a delivery that cannot be processed is marked `invalid`
    (the payload is at fault) or `failed` (the portal is), with the reason,
    and stays for replay.
    """
    found: dict[str, str] = {}
    kind = ""
    try:
        with transaction.atomic():
            payload = webhooks.parse_body(bytes(delivery.body), delivery.content_type)
            found = webhooks.unknown_keys(payload)
            kind = webhooks.kind_of(payload) or EventKind.UNKNOWN
            event = webhooks.event_from(payload)
            if event is None:
                _mark(delivery, DeliveryStatus.UNKNOWN_KIND, kind=kind)
            elif (original := _processed_twin(delivery)) is not None:
                _mark(delivery, DeliveryStatus.DUPLICATE, kind=kind, duplicate_of_id=original)
            else:
                record = _record_apply(event, delivery)
                field = "fine" if isinstance(record, Fine) else "notification"
                _mark(delivery, DeliveryStatus.PROCESSED, kind=kind, **{field: record})
    except webhooks.InvalidPayload as invalid:
        _mark(delivery, DeliveryStatus.INVALID, kind=kind, error=str(invalid))
    except Exception as error:  # kept for replay, whatever went wrong
        logger.exception("webhook delivery %s could not be processed; kept for replay", delivery.pk)
        _mark(delivery, DeliveryStatus.FAILED, kind=kind, error=f"{type(error).__name__}: {error}")
    if delivery.status in _KEPT_STATUSES:
        logger.warning(
            "webhook delivery %s kept as %s: %s", delivery.pk, delivery.status, delivery.error
        )
    if found:
        _unknown_keys_record(found, delivery)
    return DeliveryStatus(delivery.status)


def delivery_receive(
    *, body: bytes, content_type: str, headers: Mapping[str, str], source_address: str | None
) -> WebhookDelivery:
    """Store, then process: what the receiver does with each delivery."""
    delivery = delivery_store(
        body=body, content_type=content_type, headers=headers, source_address=source_address
    )
    delivery_process(delivery=delivery)
    return delivery


def delivery_replay(*, ids: Iterable[int]) -> Counter[str]:
    """Process these deliveries again (refused ones have no body: skipped).

    Returns how many ended in each status. Safe to repeat: processing is idempotent.
    """
    outcomes: Counter[str] = Counter()
    for delivery in WebhookDelivery.objects.filter(pk__in=list(ids)).order_by("received_at", "pk"):
        if delivery.status == DeliveryStatus.REFUSED:
            outcomes[DeliveryStatus.REFUSED] += 1
            continue
        outcomes[delivery_process(delivery=delivery)] += 1
    return outcomes


# --- Applying an event to its record ------------------------------------------


def _processed_twin(delivery: WebhookDelivery) -> int | None:
    """The earliest other delivery with the same body that was processed, if any."""
    return (
        WebhookDelivery.objects.filter(
            body_sha256=delivery.body_sha256, status=DeliveryStatus.PROCESSED
        )
        .exclude(pk=delivery.pk)
        .order_by("pk")
        .values_list("pk", flat=True)
        .first()
    )


def _record_apply(event: webhooks.Event, delivery: WebhookDelivery) -> WebhookRecord:
    model: type[Fine] | type[Notification] = Fine if event.kind == webhooks.FINE else Notification
    record: WebhookRecord | None = model.objects.select_for_update().filter(key=event.key).first()
    if record is None:
        record = _record_new(model, event, delivery)
        try:
            with transaction.atomic():
                record.save(force_insert=True)
            return record
        except IntegrityError:
            # Created meanwhile by a concurrent delivery of the same record: update that one.
            record = model.objects.select_for_update().get(key=event.key)
    _record_update(record, event, delivery)
    return record


def _record_new(
    model: type[Fine] | type[Notification], event: webhooks.Event, delivery: WebhookDelivery
) -> WebhookRecord:
    now = timezone.now()
    record = model(
        key=event.key,
        external_id=event.external_id,
        treated=event.treated,
        treated_history=[_observation(event, delivery)],
        payload=event.data,
        source_updated_at=event.as_of,
        received_at=now,
        updated_at=now,
    )
    if isinstance(record, Fine):
        record.link_frame = event.link_frame or ""
        record.link = event.link or ""
    return record


def _record_update(record: WebhookRecord, event: webhooks.Event, delivery: WebhookDelivery) -> None:
    changed: dict[str, Any] = {}
    history = _history_with(record.treated_history, _observation(event, delivery))
    if history is not None:
        changed["treated_history"] = history
    known = record.source_updated_at
    current = event.as_of is None or known is None or event.as_of >= known
    if current:
        changed |= {"treated": event.treated, "payload": event.data}
        if event.as_of is not None:
            changed["source_updated_at"] = event.as_of
        if isinstance(record, Fine) and event.link is not None:
            changed["link"] = event.link
    if isinstance(record, Fine) and event.link_frame and (current or not record.link_frame):
        changed["link_frame"] = event.link_frame
    changed = {name: value for name, value in changed.items() if getattr(record, name) != value}
    if not changed:
        return
    for name, value in changed.items():
        setattr(record, name, value)
    fields = list(changed)
    if changed.keys() - {"treated_history", "source_updated_at"}:
        record.updated_at = timezone.now()
        fields.append("updated_at")
    record.save(update_fields=fields)


def _observation(event: webhooks.Event, delivery: WebhookDelivery) -> dict[str, Any]:
    return {
        "treated": event.treated,
        "at": _iso(event.as_of) if event.as_of else None,
        "received": _iso(delivery.received_at),
        "delivery": delivery.pk,
    }


def _history_with(
    history: list[dict[str, Any]], entry: dict[str, Any]
) -> list[dict[str, Any]] | None:
    """`history` with `entry` in its place in time; None when it adds nothing.

    Timed observations are kept whole (a later one may arrive first), untimed
    ones only when they change the last value: an exact repeat adds nothing.
    """
    if entry["at"] is not None:
        repeat = (entry["at"], entry["treated"])
        if any((e.get("at"), e.get("treated")) == repeat for e in history):
            return None
    elif history and history[-1].get("treated") == entry["treated"]:
        return None
    return sorted([*history, entry], key=lambda e: str(e.get("at") or e.get("received")))


def _iso(moment: datetime) -> str:
    # One format for every entry, so that the strings sort as the times do.
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


# --- Bookkeeping ---------------------------------------------------------------


def _mark(delivery: WebhookDelivery, status: DeliveryStatus, **fields: Any) -> None:
    """Record how processing went, on the row and on `delivery`."""
    values = {
        "status": status,
        "error": "",
        "processed_at": timezone.now(),
        "duplicate_of_id": None,
        "fine": None,
        "notification": None,
    } | fields
    WebhookDelivery.objects.filter(pk=delivery.pk).update(attempts=F("attempts") + 1, **values)
    delivery.attempts += 1
    for name, value in values.items():
        setattr(delivery, name, value)


class _SeenKeys:
    """Unknown keys this process has already recorded: most deliveries add none."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.paths: set[str] = set()

    def clear(self) -> None:
        with self.lock:
            self.paths.clear()


_seen_keys = _SeenKeys()


def _unknown_keys_record(found: Mapping[str, str], delivery: WebhookDelivery) -> None:
    """Remember when each unknown key was first seen (the admin's report)."""
    fresh = {path: sample for path, sample in found.items() if path not in _seen_keys.paths}
    if not fresh:
        return
    try:
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


def _safe_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The request's headers without any that might hold a credential."""
    kept: dict[str, str] = {}
    for name, value in headers.items():
        if len(kept) >= _MAX_HEADERS:
            break
        if not any(part in name.lower() for part in _SECRET_HEADER_PARTS):
            kept[name] = value[:_MAX_HEADER_LENGTH]
    return kept
