"""A user's webhook subscriptions: made with a new secret (shown once), paused, removed.

A user holds at most ALERTS_WEBHOOKS_PER_USER subscriptions (each alert goes to
every one of them), and may try to add one `ATTEMPTS` times per `WINDOW_S`
(each attempt looks the host name up; refused attempts count too). The
attempts are counted in the cache, shared by every portal process. The limit
holds under concurrent requests: the count and the insert happen in one
transaction that first locks the user's row (SELECT ... FOR UPDATE on
PostgreSQL; SQLite's IMMEDIATE transactions serialise writers anyway).
"""

from __future__ import annotations

import math
import time
from typing import Final

from django.conf import settings
from django.contrib.auth.models import User
from django.core.cache import cache
from django.db import transaction
from django.db.models import QuerySet
from django.utils.translation import ngettext

from alerts.models import WebhookSubscription
from alerts.outbound import webhook_address_check
from alerts.signing import secret_new

ATTEMPTS: Final = 10
WINDOW_S: Final = 600


class WebhookSubscriptionRefused(ValueError):
    """Not made, whatever the address; the message says why, for a person.
    `retry_after` (seconds): when trying again may work, for too many attempts."""

    def __init__(self, message: str, *, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def webhook_subscriptions_of(*, user: User) -> QuerySet[WebhookSubscription]:
    return WebhookSubscription.objects.filter(user=user).order_by("pk")


def webhook_subscription_create(
    *, user: User, url: str, description: str = ""
) -> tuple[WebhookSubscription, str]:
    """A new subscription and its secret, which is never shown again.

    Raises `WebhookSubscriptionRefused` for too many attempts or subscriptions, and
    `alerts.outbound.WebhookAddressRefused` for an address the portal does not post to.
    """
    _attempt_count(user)
    _limit_check(user)
    webhook_address_check(url)  # a lookup: never inside the transaction
    secret = secret_new()
    with transaction.atomic():
        # Concurrent attempts of one user wait here for each other, then count again.
        User.objects.select_for_update().get(pk=user.pk)
        _limit_check(user)
        subscription = WebhookSubscription(user=user, url=url, description=description)
        subscription.set_secret(secret)
        subscription.save()
    return subscription, secret


def webhook_subscription_delete(*, user: User, subscription_id: int) -> bool:
    """Remove one of the user's subscriptions (and its waiting alerts); whether it existed."""
    deleted, _ = WebhookSubscription.objects.filter(user=user, pk=subscription_id).delete()
    return bool(deleted)


def _attempt_count(user: User) -> None:
    """Count this attempt in the current window; refused beyond `ATTEMPTS`."""
    now = time.time()
    window = int(now // WINDOW_S)
    key = f"alerts:webhook-attempts:{user.pk}:{window}"
    cache.add(key, 0, timeout=WINDOW_S + 60)  # outlives its window: incr always finds it
    if cache.incr(key) <= ATTEMPTS:
        return
    wait = math.ceil((window + 1) * WINDOW_S - now)
    minutes = math.ceil(wait / 60)
    raise WebhookSubscriptionRefused(
        ngettext(
            "Too many attempts to add a webhook. Try again in %(minutes)d minute.",
            "Too many attempts to add a webhook. Try again in %(minutes)d minutes.",
            minutes,
        )
        % {"minutes": minutes},
        retry_after=wait,
    )


def _limit_check(user: User) -> None:
    limit = settings.ALERTS_WEBHOOKS_PER_USER
    if WebhookSubscription.objects.filter(user=user).count() >= limit:
        raise WebhookSubscriptionRefused(
            ngettext(
                "You already have %(limit)d webhook, the most one person may have. "
                "Remove it to add another.",
                "You already have %(limit)d webhooks, the most one person may have. "
                "Remove one to add another.",
                limit,
            )
            % {"limit": limit}
        )
