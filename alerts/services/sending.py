"""Sending the outbox: the worker claims due alerts, sends them, and marks them sent.

How alerts are claimed, what a crash in the middle does and how failures are
retried: `claims`.

Webhooks: one subscription's due alerts are claimed together and posted in
order, by a small pool of threads, a subscription per thread: a subscriber
that is slow or never answers holds one thread for one POST (its other alerts
wait for its next retry), never the other subscribers' alerts. The threads do
HTTP only; claiming, composing and marking happen in the run's thread.

E-mail: one user's due alerts are claimed together. Those of a daily digest
(or folded by the cap) go as one e-mail; immediate ones one by one, up to
ALERTS_HOURLY_CAP e-mails in the past hour; the others are folded into one
digest sent when the hour's window allows another e-mail.

Scope: an alert whose record is no longer of its user's vehicles (`fleet.services.scopes`:
they left the record's vehicle group, or the vehicle left it, while the alert waited) is
cancelled, not sent, on either channel. Each user's scope is read once per run.
"""

from __future__ import annotations

import logging
import time
from collections import Counter, deque
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

import orjson
from django.conf import settings
from django.contrib.auth.models import User
from django.db.models import F, Min, QuerySet
from django.utils import timezone

from alerts.models import (
    Alert,
    AlertChannel,
    AlertDelivery,
    AlertEvent,
    AlertStatus,
    WebhookAttempt,
)
from alerts.outbound import PostOutcome, webhook_post
from alerts.services.claims import (
    claim,
    due,
    mark_cancelled,
    mark_failed,
    mark_sent,
    retry_wait,
    still_claimed,
)
from alerts.services.emails import absolute_url, alert_email
from alerts.services.pauses import alerts_paused
from alerts.services.preferences import alert_preferences_get
from alerts.signing import signed_headers
from fleet.models import Indication
from fleet.services.scopes import VehicleScope, scope_of
from portal.lib import metrics, worker
from portal.lib.encryption import UndecryptableSecret
from portal.lib.throttle import Throttle

logger = logging.getLogger(__name__)

_EMAIL_CLAIM: Final = 100  # one user's alerts in one claim (and so in one digest at most)
_WEBHOOK_CLAIM: Final = 10  # one subscription's alerts in one claim, posted in order
_WEBHOOK_SENDERS: Final = 8  # subscriptions posted to at once (threads of one run)
_LOOK_AGAIN_S: Final = 0.5  # while POSTs are under way, how often to look for more due
_USERS_AT_ONCE: Final = 20
_HOUR: Final = timedelta(hours=1)
OUT_OF_SCOPE: Final = "the record's vehicle is no longer in the user's vehicle groups"
WEBHOOK_TYPES: Final = {
    AlertEvent.NEW_FINE: "fine.created",
    AlertEvent.FINE_DOCUMENT: "fine.document_available",
    AlertEvent.FINE_TREATED: "fine.treated",
    AlertEvent.NEW_NOTIFICATION: "notification.created",
    AlertEvent.INDICATION_DUE: "fine.indication_due",
    AlertEvent.INDICATION_MISSED: "fine.indication_missed",
}
NO_LONGER_TO_INDICATE: Final = "the fine's driver was indicated (or needs no indication) meanwhile"

_unconfigured = Throttle()


def alerts_send_due(*, budget_s: float = 30.0) -> Counter[str]:
    """Send what is due: e-mails user by user, then webhooks; how many ended how.

    Stops after `budget_s` seconds, or once the worker is stopping (after the POSTs
    under way); what is left is due, and the task asks for its next run
    (`alerts_next_due`).
    """
    outcomes: Counter[str] = Counter()
    if not settings.PORTAL_BASE_URL:
        if _unconfigured.due(3600):
            logger.error("alerts are waiting: PORTAL_BASE_URL is not set (their links need it)")
        return outcomes
    deadline = time.monotonic() + budget_s
    done: set[int] = set()
    scopes: dict[int, VehicleScope] = {}  # by user id: each read once in this run
    while _time_left(deadline):
        users = list(
            Alert.objects.filter(due(timezone.now()), channel=AlertChannel.EMAIL)
            .exclude(user_id__in=done)
            .order_by()
            .values_list("user_id", flat=True)
            .distinct()[:_USERS_AT_ONCE]
        )
        if not users:
            break
        for user_id in users:
            done.add(user_id)
            claimed = claim(
                Alert.objects.filter(user_id=user_id, channel=AlertChannel.EMAIL), _EMAIL_CLAIM
            )
            if claimed:
                outcomes.update(_emails_send(claimed, scopes))
    outcomes.update(_webhooks_send(deadline, scopes))
    return outcomes


def alerts_next_due() -> datetime | None:
    """When something is next to send: the first waiting alert, or the first lease to end."""
    waiting = Alert.objects.filter(status=AlertStatus.PENDING).aggregate(at=Min("due_at"))["at"]
    leased = Alert.objects.filter(status=AlertStatus.SENDING).aggregate(at=Min("lease_until"))["at"]
    times = [moment for moment in (waiting, leased) if moment is not None]
    return min(times) if times else None


def alert_retry(*, alerts: QuerySet[Alert]) -> int:
    """Make failed or waiting alerts due now (the admin's action); how many."""
    count = alerts.filter(status__in=[AlertStatus.FAILED, AlertStatus.PENDING]).update(
        status=AlertStatus.PENDING, due_at=timezone.now(), attempts=0, claim=None
    )
    return count


def webhook_payload(alert: Alert) -> dict[str, Any]:
    """The JSON event a subscription receives (Standard Webhooks' `type`/`timestamp`/`data`)."""
    data = {key: value for key, value in alert.data.items() if key not in ("path", "event")}
    data["url"] = absolute_url(alert.data.get("path", "/"))
    return {
        "type": WEBHOOK_TYPES.get(AlertEvent(alert.event), alert.event),
        "timestamp": alert.created_at.isoformat().replace("+00:00", "Z"),
        "data": data,
    }


def webhook_message_id(alert: Alert) -> str:
    """`webhook-id`: the same on every attempt of one alert."""
    return f"msg_{alert.public_id.hex}"


def _time_left(deadline: float) -> bool:
    """Whether this run may start more work: its budget lasts and the worker is not stopping."""
    return time.monotonic() < deadline and not worker.stopping()


def _in_scope(claimed: list[Alert], scopes: dict[int, VehicleScope]) -> list[Alert]:
    """The claimed alerts (one user's) whose record is still in the user's scope; the
    others are cancelled. A whole-fleet user's are all kept, their records unread.

    An inactive user's are kept: the channel cancels them, saying so. A reminder of a
    deadline whose fine is no longer to indicate is cancelled too.
    """
    claimed = _reminders_still_due(claimed)
    if not claimed or not claimed[0].user.is_active:
        return claimed
    user = claimed[0].user
    scope = scopes.get(user.pk)
    if scope is None:
        scope = scopes[user.pk] = scope_of(user)
    if scope.whole_fleet:
        return claimed
    kept: list[Alert] = []
    if not scope.empty:
        registrations = _registrations(claimed)
        kept = [alert for alert in claimed if scope.covers(registrations.get(alert.pk, ""))]
    if len(kept) < len(claimed):
        held = {alert.pk for alert in kept}
        mark_cancelled([alert for alert in claimed if alert.pk not in held], reason=OUT_OF_SCOPE)
    return kept


def _reminders_still_due(claimed: list[Alert]) -> list[Alert]:
    """The claimed alerts but the reminders of a deadline whose fine's driver was indicated
    (or that needs none) since the reminder was written: those are cancelled."""
    reminders = [alert.pk for alert in claimed if alert.event == AlertEvent.INDICATION_DUE]
    if not reminders:
        return claimed
    done = set(
        Alert.objects.filter(pk__in=reminders)
        .exclude(fine__indication=Indication.NEEDED)
        .values_list("pk", flat=True)
    )
    if done:
        mark_cancelled(
            [alert for alert in claimed if alert.pk in done], reason=NO_LONGER_TO_INDICATE
        )
    return [alert for alert in claimed if alert.pk not in done]


def _registrations(alerts: list[Alert]) -> dict[int, str]:
    """The registration of each alert's record (fine or notification), by alert id."""
    rows = Alert.objects.filter(pk__in=[alert.pk for alert in alerts]).values_list(
        "pk", "fine__registration", "notification__registration"
    )
    return {pk: fine or notification or "" for pk, fine, notification in rows}


# --- E-mail ----------------------------------------------------------------------------


def _emails_send(claimed: list[Alert], scopes: dict[int, VehicleScope]) -> Counter[str]:
    """Send one user's claimed e-mail alerts: digest, one by one, or folded by the cap."""
    outcomes: Counter[str] = Counter()
    user = claimed[0].user
    choices = alert_preferences_get(user=user)
    if (
        not user.is_active
        or not user.email
        or choices.delivery == AlertDelivery.OFF
        or alerts_paused(user=user)
    ):
        mark_cancelled(claimed, reason="the user no longer receives alert e-mails")
        outcomes["cancelled"] += len(claimed)
        return outcomes
    kept = _in_scope(claimed, scopes)
    outcomes["out of scope"] += len(claimed) - len(kept)
    if not kept:
        return outcomes
    now = timezone.now()
    immediate = [alert for alert in kept if not alert.digest]
    digest = [alert for alert in kept if alert.digest]
    recent = _emails_sent_since(user, now - _HOUR)
    room = max(settings.ALERTS_HOURLY_CAP - len(recent), 0)
    alone, over = immediate[:room], immediate[room:]
    if over:
        # One digest, as soon as the hour's window has room for one more e-mail.
        window_end = min([*recent, now]) + _HOUR
        still_claimed(over).update(
            status=AlertStatus.PENDING,
            digest=True,
            due_at=window_end,
            claim=None,
            lease_until=None,
            attempts=F("attempts") - 1,  # not an attempt: not sent yet
        )
        outcomes["folded"] += len(over)
    for alert in alone:
        outcomes[_email_send(user, [alert], choices.language, choices.time_zone)] += 1
    if digest:
        outcomes[_email_send(user, digest, choices.language, choices.time_zone)] += len(digest)
    return outcomes


def _email_send(user: User, alerts: Sequence[Alert], language: str, time_zone: str) -> str:
    message = alert_email(user=user, alerts=alerts, language=language, time_zone=time_zone)
    try:
        message.send(using="default")
    except Exception as error:
        logger.warning(
            "alert e-mail to user %s failed (%d alerts): %s", user.pk, len(alerts), error
        )
        return _counted("email", mark_failed(alerts, error=f"{type(error).__name__}: {error}"))
    mark_sent(alerts, message=message.extra_headers["Message-ID"])
    return _counted("email", "sent")


def _emails_sent_since(user: User, since: datetime) -> list[datetime]:
    """When each alert e-mail the user got since `since` was sent (a digest counts once)."""
    return list(
        Alert.objects.filter(
            user=user, channel=AlertChannel.EMAIL, status=AlertStatus.SENT, sent_at__gte=since
        )
        .values("message_id")
        .annotate(at=Min("sent_at"))
        .values_list("at", flat=True)
    )


# --- Webhooks ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Post:
    """One webhook POST, composed in the run's thread: all a sender thread needs."""

    alert: Alert
    subscription_id: int
    url: str
    body: bytes
    headers: dict[str, str]


@dataclass(frozen=True, slots=True)
class _Posted:
    started_at: datetime
    outcome: PostOutcome


def _webhooks_send(deadline: float, scopes: dict[int, VehicleScope]) -> Counter[str]:
    """Post the due webhook alerts until `deadline`, each subscription's in order, up to
    _WEBHOOK_SENDERS subscriptions at once.

    Each POST is marked as soon as it ends, so that a worker killed meanwhile repeats
    at most the POSTs under way. After a failure, the rest of that subscription's claim
    waits for its retry; at the run's end, it is due for the next run.
    """
    outcomes: Counter[str] = Counter()
    claimed_posts: dict[int, deque[_Post]] = {}  # per subscription under way: the next ones
    under_way: dict[Future[_Posted], _Post] = {}
    with ThreadPoolExecutor(_WEBHOOK_SENDERS, thread_name_prefix="alerts-webhooks") as pool:

        def post_next(posts: deque[_Post]) -> None:
            post = posts.popleft()
            claimed_posts[post.subscription_id] = posts
            under_way[pool.submit(_webhook_post, post)] = post

        while True:
            found: list[int] = []
            if _time_left(deadline):
                found = _subscriptions_due(
                    busy=set(claimed_posts), limit=_WEBHOOK_SENDERS - len(claimed_posts)
                )
            for subscription_id in found:
                claimed = claim(
                    Alert.objects.filter(
                        channel=AlertChannel.WEBHOOK, subscription_id=subscription_id
                    ),
                    _WEBHOOK_CLAIM,
                )
                kept = _in_scope(claimed, scopes)
                outcomes["out of scope"] += len(claimed) - len(kept)
                posts = deque(post for alert in kept if (post := _webhook_compose(alert)))
                outcomes["not posted"] += len(kept) - len(posts)
                if posts:
                    post_next(posts)
            if not under_way:
                if found:  # all cancelled or given up: more may be due
                    continue
                break
            # Not for ever: alerts due meanwhile for other subscriptions go out meanwhile.
            finished, _ = wait(under_way, timeout=_LOOK_AGAIN_S, return_when=FIRST_COMPLETED)
            for future in finished:
                post = under_way.pop(future)
                rest = claimed_posts.pop(post.subscription_id)
                try:
                    posted = future.result()
                except Exception:  # a bug, not the receiver's doing: its lease ends it
                    logger.exception("posting webhook alert %s failed", post.alert.pk)
                    continue
                outcomes[_webhook_record(post, posted)] += 1
                if rest and posted.outcome.ok and _time_left(deadline):
                    post_next(rest)
                elif rest:
                    failed = None if posted.outcome.ok else post.alert
                    _webhooks_put_back([later.alert for later in rest], after=failed)
                    outcomes["put back"] += len(rest)
    return outcomes


def _subscriptions_due(*, busy: set[int], limit: int) -> list[int]:
    """Up to `limit` subscriptions with webhook alerts due (not `busy`), longest waiting first."""
    if limit <= 0:
        return []
    return list(
        Alert.objects.filter(due(timezone.now()), channel=AlertChannel.WEBHOOK)
        .exclude(subscription_id__in=busy)
        .values("subscription_id")
        .annotate(first_due=Min("due_at"))
        .order_by("first_due")
        .values_list("subscription_id", flat=True)[:limit]
    )


def _webhook_compose(alert: Alert) -> _Post | None:
    """The signed POST of `alert`; None (the alert cancelled, or failed) if it is not to be sent."""
    subscription = alert.subscription
    assert subscription is not None  # a constraint of the table
    if not subscription.active or not alert.user.is_active or alerts_paused(user=alert.user):
        mark_cancelled([alert], reason="the subscription or its user is no longer active")
        return None
    try:
        secret = subscription.secret()
    except UndecryptableSecret as error:
        # The operator's keys, not the subscriber's doing: kept for the admin's retry once
        # the key is restored, rather than failing the whole run for every subscriber.
        logger.error("webhook subscription %s: %s", subscription.pk, error)
        mark_failed([alert], error=f"the subscription's secret: {error}")
        return None
    body = orjson.dumps(webhook_payload(alert))
    headers = signed_headers(
        secret=secret,
        message_id=webhook_message_id(alert),
        timestamp=int(timezone.now().timestamp()),
        body=body,
    )
    return _Post(alert, subscription.pk, subscription.url, body, headers)


def _webhook_post(post: _Post) -> _Posted:
    """In a sender thread: HTTP only, no database."""
    started_at = timezone.now()
    return _Posted(started_at, webhook_post(url=post.url, body=post.body, headers=post.headers))


def _webhook_record(post: _Post, posted: _Posted) -> str:
    """Log the attempt for the admin and mark the alert; how it ended."""
    alert, outcome = post.alert, posted.outcome
    WebhookAttempt.objects.create(
        alert=alert,
        started_at=posted.started_at,
        subscription_id=post.subscription_id,
        status_code=outcome.status_code,
        ok=outcome.ok,
        error=outcome.error,
        duration_ms=outcome.duration_ms,
    )
    message = webhook_message_id(alert)
    if not outcome.ok:
        logger.warning(
            "alert webhook %s to subscription %s: %s", message, post.subscription_id, outcome.error
        )
        return _counted("webhook", mark_failed([alert], error=outcome.error))
    mark_sent([alert], message=message)
    return _counted("webhook", "sent")


def _counted(channel: str, outcome: str) -> str:
    """Count a sending's outcome (portal.lib.metrics: sent, retried, failed); `outcome`."""
    metrics.ALERTS.labels(channel, "retried" if outcome == "retry" else outcome).inc()
    return outcome


def _webhooks_put_back(alerts: list[Alert], *, after: Alert | None) -> None:
    """Make claimed alerts that were not tried wait again: due with the retry of `after`
    (the alert that failed before them), or, with None, as they were."""
    values: dict[str, Any] = {}
    if after is not None:
        values["due_at"] = timezone.now() + retry_wait(after.attempts)
    still_claimed(alerts).update(
        status=AlertStatus.PENDING,
        claim=None,
        lease_until=None,
        attempts=F("attempts") - 1,  # not tried: not an attempt
        **values,
    )
