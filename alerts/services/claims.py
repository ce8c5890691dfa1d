"""Claiming due alerts for one sending run, and marking how each ended.

Claiming is one conditional UPDATE through the ORM: rows still due (waiting
and due, or claimed by a worker whose lease ran out) become `sending`, with
this run's `claim` and a lease of ALERTS_SEND_LEASE_SECONDS. Two workers
cannot both claim a row: the UPDATE's condition is evaluated again on the
row it locks, so the second finds it `sending` and leaves it.

What a crash does, honestly:

- killed before the message left (composing it, connecting, in the middle
  of the SMTP conversation or of the POST): the rows stay `sending` until
  the lease ends, then a later run sends them. Nothing is lost, nothing is
  sent twice.
- killed in the instant between the server's acceptance (SMTP's 250 after
  the data, an HTTP 2xx) and the UPDATE that marks the rows `sent`: the
  message is sent again after the lease. This window, a few milliseconds, is
  at-least-once; the repeat carries the same `Message-ID` or `webhook-id`,
  so a mail system or a receiver can recognise it. No design with an
  external server avoids it: marking before sending would turn it into a
  loss instead.

A failure (refused, timed out, unreachable) is retried with a doubling wait
(ALERTS_RETRY_SECONDS, 2x, 4x... at most six hours), ALERTS_MAX_ATTEMPTS
times, then kept as `failed` with its error, for the admin. Each claim counts
as an attempt, so an alert whose sending kills the worker (or outlives its
lease) every time is not claimed for ever: once its attempts are spent, the
next claim marks it `failed` and says why.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, Final

from django.conf import settings
from django.db.models import CharField, F, Q, QuerySet, Value
from django.db.models.functions import Cast, Concat
from django.utils import timezone

from alerts.models import Alert, AlertStatus
from alerts.services.outbox import SEND_TASK
from portal.lib import worker

logger = logging.getLogger(__name__)

_LONGEST_WAIT: Final = timedelta(hours=6)


def due(now: datetime) -> Q:
    """Alerts due at `now`: waiting and due, or claimed by a run whose lease ran out."""
    return Q(status=AlertStatus.PENDING, due_at__lte=now) | Q(
        status=AlertStatus.SENDING, lease_until__lte=now
    )


def claim(candidates: QuerySet[Alert], limit: int) -> list[Alert]:
    """Claim up to `limit` due alerts of `candidates` for this run; those it got.

    Those due whose attempts are spent are marked failed instead (`_spent_give_up`).
    """
    now = timezone.now()
    _spent_give_up(candidates, now)
    pks = list(
        candidates.filter(due(now)).order_by("due_at", "pk").values_list("pk", flat=True)[:limit]
    )
    if not pks:
        return []
    token = uuid.uuid4()
    lease_until = now + timedelta(seconds=settings.ALERTS_SEND_LEASE_SECONDS)
    claimed = (
        Alert.objects.filter(pk__in=pks)
        .filter(due(now))
        .update(
            status=AlertStatus.SENDING,
            claim=token,
            lease_until=lease_until,
            attempts=F("attempts") + 1,
        )
    )
    if not claimed:
        return []
    # Should this run die with them, a run at the lease's end sends them.
    try:
        worker.enqueue_unless_waiting(SEND_TASK, run_after=lease_until)
    except Exception:
        logger.exception("could not ask for a run after the lease of claimed alerts")
    return list(
        Alert.objects.filter(pk__in=pks, claim=token)
        .select_related("user", "subscription")
        .order_by("pk")
    )


def _spent_give_up(candidates: QuerySet[Alert], now: datetime) -> None:
    """Mark failed the due alerts of `candidates` whose attempts are all spent.

    A `sending` one among them is due because its lease ran out: its last attempt never
    ended (the worker died sending it, or outlived its lease). A `waiting` one can only
    have been left by a lower ALERTS_MAX_ATTEMPTS: its last error stands.
    """
    spent = candidates.filter(due(now), attempts__gte=settings.ALERTS_MAX_ATTEMPTS)
    abandoned = spent.filter(status=AlertStatus.SENDING).update(
        status=AlertStatus.FAILED,
        claim=None,
        lease_until=None,
        last_error=Concat(
            Value("given up after attempt "),
            Cast("attempts", output_field=CharField()),
            Value(
                ", which never ended: the worker stopped (or outlived its lease) while sending it"
            ),
            output_field=CharField(),
        ),
    )
    if abandoned:
        logger.warning(
            "%d alerts given up: their last attempt never ended (the worker stopped while"
            " sending them)",
            abandoned,
        )
    spent.filter(status=AlertStatus.PENDING).update(status=AlertStatus.FAILED)


def mark_sent(alerts: Sequence[Alert], *, message: str) -> None:
    """Mark these claimed alerts sent, as the message `message`."""
    marked = still_claimed(alerts).update(
        status=AlertStatus.SENT,
        sent_at=timezone.now(),
        message_id=message,
        claim=None,
        lease_until=None,
        last_error="",
    )
    if marked < len(alerts):  # our lease ran out and another run took some over
        logger.warning("%d alerts were sent after their lease ended", len(alerts) - marked)


def mark_failed(alerts: Sequence[Alert], *, error: str) -> str:
    """Wait and try again, or keep as failed after the last attempt; which."""
    now = timezone.now()
    outcome = "retry"
    for alert in alerts:
        if alert.attempts >= settings.ALERTS_MAX_ATTEMPTS:
            values: dict[str, Any] = {"status": AlertStatus.FAILED}
            outcome = "failed"
        else:
            values = {"status": AlertStatus.PENDING, "due_at": now + retry_wait(alert.attempts)}
        still_claimed([alert]).update(
            claim=None, lease_until=None, last_error=error[:2000], **values
        )
    return outcome


def mark_cancelled(alerts: Sequence[Alert], *, reason: str) -> None:
    """Mark these claimed alerts cancelled (not to be sent any more), saying why."""
    still_claimed(alerts).update(
        status=AlertStatus.CANCELLED, claim=None, lease_until=None, last_error=reason
    )


def still_claimed(alerts: Sequence[Alert]) -> QuerySet[Alert]:
    """These alerts, as long as they are still this run's (the lease may have run out)."""
    return Alert.objects.filter(
        pk__in=[alert.pk for alert in alerts], claim=alerts[0].claim, status=AlertStatus.SENDING
    )


def retry_wait(attempts: int) -> timedelta:
    """The wait before the next attempt after `attempts`: doubling, at most six hours."""
    wait = timedelta(seconds=settings.ALERTS_RETRY_SECONDS * 2 ** max(attempts - 1, 0))
    return min(wait, _LONGEST_WAIT)
