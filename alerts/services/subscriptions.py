"""A user's webhook subscriptions: made with a new secret (shown once), paused, removed."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db.models import QuerySet

from alerts.models import WebhookSubscription
from alerts.outbound import webhook_address_check
from alerts.signing import secret_new


def webhook_subscriptions_of(*, user: User) -> QuerySet[WebhookSubscription]:
    return WebhookSubscription.objects.filter(user=user).order_by("pk")


def webhook_subscription_create(
    *, user: User, url: str, description: str = ""
) -> tuple[WebhookSubscription, str]:
    """A new subscription and its secret, which is never shown again.

    Raises `alerts.outbound.WebhookAddressRefused` for an address the portal
    does not post to.
    """
    webhook_address_check(url)
    secret = secret_new()
    subscription = WebhookSubscription(user=user, url=url, description=description)
    subscription.set_secret(secret)
    subscription.save()
    return subscription, secret


def webhook_subscription_delete(*, user: User, subscription_id: int) -> bool:
    """Remove one of the user's subscriptions (and its waiting alerts); whether it existed."""
    deleted, _ = WebhookSubscription.objects.filter(user=user, pk=subscription_id).delete()
    return bool(deleted)
