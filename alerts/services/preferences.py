"""Whose alerts are chosen how: a user's saved choices, or the administrators' defaults."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from alerts.models import (
    AlertChannel,
    AlertChoices,
    AlertDefaults,
    AlertDelivery,
    AlertPause,
    AlertPreferences,
    AlertStatus,
)

CHOICE_FIELDS = (
    "new_fine",
    "fine_document",
    "fine_treated",
    "new_notification",
    "indication_reminders",
    "delivery",
    "digest_hour",
    "time_zone",
    "all_vehicles",
    "plates",
    "language",
)


def alert_preferences_get(*, user: User) -> AlertPreferences:
    """The user's saved preferences, or (unsaved) a copy of the current defaults."""
    try:
        return AlertPreferences.objects.get(user=user)
    except AlertPreferences.DoesNotExist:
        return _from_defaults(user, AlertDefaults.current())


def alert_preferences_save(*, user: User, **choices: Any) -> AlertPreferences:
    """Save the user's choices, and move their waiting e-mail alerts to the new ones:
    sent at once, in the next digest, or not at all."""
    with transaction.atomic():
        preferences = alert_preferences_get(user=user)
        for name, value in choices.items():
            if name not in CHOICE_FIELDS:
                raise TypeError(f"not a choice: {name}")
            setattr(preferences, name, value)
        preferences.full_clean()
        preferences.save()
        _waiting_email_alerts_reschedule(user=user, choices=preferences)
    return preferences


def alert_recipients() -> list[tuple[User, AlertChoices]]:
    """Every active user who can be told something (an e-mail address or an active webhook
    subscription) and whose alerts are not paused (alerts.services.pauses), with their
    choices; their active subscriptions prefetched."""
    defaults: AlertDefaults | None = None
    users = (
        User.objects.filter(is_active=True)
        .exclude(pk__in=AlertPause.objects.current().values("user_id"))
        .filter(~Q(email="") | Q(alert_webhooks__active=True))
        .distinct()
        .select_related("alert_preferences")
        .prefetch_related("alert_webhooks")
        .order_by("pk")
    )
    found: list[tuple[User, AlertChoices]] = []
    for user in users:
        try:
            choices: AlertChoices = user.alert_preferences
        except AlertPreferences.DoesNotExist:
            defaults = defaults or AlertDefaults.current()
            choices = defaults
        found.append((user, choices))
    return found


def digest_due(*, choices: AlertChoices, after: datetime | None = None) -> datetime:
    """The next time of the user's daily digest: `digest_hour` o'clock in their time zone."""
    zone = ZoneInfo(choices.time_zone)
    local = (after or timezone.now()).astimezone(zone)
    due = local.replace(hour=choices.digest_hour, minute=0, second=0, microsecond=0)
    if due <= local:
        # The same wall-clock hour tomorrow (a day is not always 24 hours).
        due = (due.replace(tzinfo=None) + timedelta(days=1)).replace(tzinfo=zone)
    return due


def email_unsubscribe(*, user: User) -> None:
    """No more alert e-mails for `user` (their webhooks go on): what the one-click link does."""
    alert_preferences_save(user=user, delivery=AlertDelivery.OFF)


def _from_defaults(user: User, defaults: AlertDefaults) -> AlertPreferences:
    return AlertPreferences(user=user, **{name: getattr(defaults, name) for name in CHOICE_FIELDS})


def _waiting_email_alerts_reschedule(*, user: User, choices: AlertChoices) -> None:
    waiting = user.alerts.filter(channel=AlertChannel.EMAIL, status=AlertStatus.PENDING)
    if choices.delivery == AlertDelivery.OFF:
        waiting.update(status=AlertStatus.CANCELLED, last_error="e-mail alerts turned off")
    elif choices.delivery == AlertDelivery.IMMEDIATE:
        # The hourly cap folds them again if they are many.
        waiting.filter(attempts=0, digest=True).update(digest=False, due_at=timezone.now())
    else:
        waiting.filter(attempts=0).update(digest=True, due_at=digest_due(choices=choices))
