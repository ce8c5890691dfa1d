"""What each person wants to hear of, and the outbox of alerts that tells them.

`AlertPreferences` holds a user's choices (`AlertDefaults` those of users who
never saved theirs). `Alert` is one event for one person on one channel
(their e-mail, or one of their webhook subscriptions): written in the
transaction that writes the fine or the notification, unique per (user,
event, channel), and sent by the worker (`alerts.services.sending`).
`WebhookAttempt` logs each POST to a subscription.
"""

from __future__ import annotations

import uuid
import zoneinfo
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from fleet import plates
from fleet.models import Fine, Notification
from portal.lib import encryption

DEFAULT_TIME_ZONE = "America/Sao_Paulo"


class AlertEvent(models.TextChoices):
    NEW_FINE = "new_fine", _("A new fine")
    FINE_DOCUMENT = "fine_document", _("A fine's official document became available")
    FINE_TREATED = "fine_treated", _("A fine was marked treated")
    NEW_NOTIFICATION = "new_notification", _("A new notification")
    INDICATION_DUE = "indication_due", _("A fine's deadline to indicate its driver is near")
    INDICATION_MISSED = "indication_missed", _("A fine's deadline to indicate its driver passed")


class AlertDelivery(models.TextChoices):
    IMMEDIATE = "immediate", _("Immediately, one e-mail per event")
    DIGEST = "digest", _("A daily digest")
    OFF = "off", _("No e-mail")


def validate_time_zone(value: str) -> None:
    if value not in zoneinfo.available_timezones():
        raise ValidationError(_("Not a time zone: choose one from the list."))


def validate_plates(value: object) -> None:
    if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
        raise ValidationError(_("A list of plates is expected."))
    wrong = [plate for plate in value if not plates.is_valid(plate)]
    if wrong:
        raise ValidationError(
            _("Not a plate (ABC1234 or ABC1D23): %(plates)s"), params={"plates": ", ".join(wrong)}
        )


class Language(models.TextChoices):
    PORTUGUESE = "pt-br", _("Portuguese (Brazil)")
    ENGLISH = "en", _("English")


class AlertChoices(models.Model):
    """The choices of a user (or the defaults): which events, how, for which vehicles."""

    new_fine = models.BooleanField(_("new fines"), default=True)
    fine_document = models.BooleanField(_("official documents available"), default=True)
    fine_treated = models.BooleanField(_("fines marked treated"), default=False)
    new_notification = models.BooleanField(_("new notifications"), default=True)
    # Both indication events: the reminders before the deadline, and the missed one.
    indication_reminders = models.BooleanField(_("indication deadlines"), default=True)
    delivery = models.CharField(
        _("e-mail delivery"),
        max_length=10,
        choices=AlertDelivery.choices,
        default=AlertDelivery.DIGEST,
    )
    digest_hour = models.PositiveSmallIntegerField(
        _("hour of the daily digest"), default=8, validators=[MaxValueValidator(23)]
    )
    time_zone = models.CharField(
        _("time zone of the digest"),
        max_length=64,
        default=DEFAULT_TIME_ZONE,
        validators=[validate_time_zone],
    )
    all_vehicles = models.BooleanField(_("all vehicles"), default=True)
    # Normalised plates (`plates.normalize`), either format; matched by registration.
    plates = models.JSONField(_("plates"), default=list, blank=True, validators=[validate_plates])
    language = models.CharField(
        _("language of the e-mails"),
        max_length=10,
        choices=Language.choices,
        default=Language.PORTUGUESE,
    )
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        abstract = True

    def events(self) -> set[AlertEvent]:
        reminders = {AlertEvent.INDICATION_DUE, AlertEvent.INDICATION_MISSED}
        chosen = {e for e in AlertEvent if e not in reminders and getattr(self, e.value)}
        return chosen | (reminders if self.indication_reminders else set())

    def registrations(self) -> frozenset[str]:
        """The chosen vehicles as records name them (`WebhookRecord.registration`)."""
        return frozenset(plates.registration(plate) for plate in self.plates)

    def covers(self, registration: str) -> bool:
        """Whether an event about the vehicle `registration` is one of these vehicles'."""
        return self.all_vehicles or registration in self.registrations()


class AlertDefaults(AlertChoices):
    """The choices of every user who has not saved their own (one row, set in the admin)."""

    class Meta:
        verbose_name = _("alert defaults")
        verbose_name_plural = _("alert defaults")

    def __str__(self) -> str:
        return str(_("Alert defaults for new users"))

    def save(self, *args: Any, **kwargs: Any) -> None:
        # The one row `current` reads, however it is made: added in the admin, a database's
        # sequence (PostgreSQL's never goes back) would give it another id.
        self.pk = 1
        super().save(*args, **kwargs)

    @classmethod
    def current(cls) -> AlertDefaults:
        defaults, _created = cls.objects.get_or_create(pk=1)
        return defaults


class AlertPreferences(AlertChoices):
    """A user's own choices, saved on their alerts page."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="alert_preferences",
        verbose_name=_("user"),
    )

    class Meta:
        verbose_name = _("alert preferences")
        verbose_name_plural = _("alert preferences")
        ordering = ["user__username"]

    def __str__(self) -> str:
        return str(self.user)


class WebhookSubscription(models.Model):
    """A company system a user has the portal POST their alerts to (Standard Webhooks).

    The secret signs each POST; it is kept encrypted and shown once, at creation.
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="alert_webhooks",
        verbose_name=_("user"),
    )
    url = models.URLField(_("webhook address"), max_length=500)
    description = models.CharField(_("what it is for"), max_length=200, blank=True)
    secret_encrypted = models.TextField(_("secret (encrypted)"), editable=False)
    active = models.BooleanField(pgettext_lazy("webhook subscription", "active"), default=True)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)

    class Meta:
        verbose_name = _("webhook subscription")
        verbose_name_plural = _("webhook subscriptions")
        ordering = ["user__username", "pk"]

    def __str__(self) -> str:
        return self.description or self.url

    def set_secret(self, secret: str) -> None:
        self.secret_encrypted = encryption.encrypt(secret)

    def secret(self) -> str:
        return encryption.decrypt(self.secret_encrypted)


class AlertChannel(models.TextChoices):
    EMAIL = "email", _("e-mail")
    WEBHOOK = "webhook", _("webhook")


class AlertStatus(models.TextChoices):
    PENDING = "pending", pgettext_lazy("alert status", "Waiting")
    SENDING = "sending", pgettext_lazy("alert status", "Being sent")
    SENT = "sent", pgettext_lazy("alert status", "Sent")
    FAILED = "failed", pgettext_lazy("alert status", "Failed")
    CANCELLED = "cancelled", pgettext_lazy("alert status", "Cancelled")


class Alert(models.Model):
    """One event for one user on one channel: the outbox row the worker sends.

    `event_key` names the event (`new_fine:<fine id>`...): with the user and
    the channel it is unique, so an event processed twice is one alert.
    `data` is the event as it was then (plate, fields, the portal's path of
    the record), so that the message says what happened even if the record
    changed since.

    Sending: a worker claims due rows with one conditional UPDATE (`status`
    to `sending`, its own `claim`, a lease), sends, then marks them `sent`.
    A worker that dies leaves its rows `sending` until the lease ends; another
    then sends them again (see alerts.services.claims for the boundary).
    """

    public_id = models.UUIDField(_("public id"), default=uuid.uuid4, unique=True, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="alerts",
        verbose_name=_("user"),
    )
    channel = models.CharField(_("channel"), max_length=10, choices=AlertChannel.choices)
    subscription = models.ForeignKey(
        WebhookSubscription,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="alerts",
        verbose_name=_("webhook subscription"),
    )
    event = models.CharField(_("alert event"), max_length=20, choices=AlertEvent.choices)
    event_key = models.CharField(_("event key"), max_length=60)
    fine = models.ForeignKey(
        Fine,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("fine"),
    )
    notification = models.ForeignKey(
        Notification,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("notification"),
    )
    data = models.JSONField(_("event data"), default=dict)
    digest = models.BooleanField(
        _("in a digest"),
        default=False,
        help_text=_("Sent with others in one e-mail (daily digest, or over the cap)."),
    )
    status = models.CharField(
        _("status"), max_length=10, choices=AlertStatus.choices, default=AlertStatus.PENDING
    )
    due_at = models.DateTimeField(_("due at"), default=timezone.now)
    attempts = models.PositiveSmallIntegerField(_("attempts"), default=0)
    claim = models.UUIDField(_("claimed by"), null=True, blank=True, editable=False)
    lease_until = models.DateTimeField(_("claimed until"), null=True, blank=True)
    last_error = models.TextField(_("last error"), blank=True)
    message_id = models.CharField(_("message id"), max_length=200, blank=True)
    created_at = models.DateTimeField(_("created"), default=timezone.now)
    sent_at = models.DateTimeField(_("sent at"), null=True, blank=True)

    class Meta:
        verbose_name = _("alert")
        verbose_name_plural = _("alerts")
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "event_key"],
                condition=models.Q(channel="email"),
                name="alerts_once_per_user_event_email",
            ),
            models.UniqueConstraint(
                fields=["subscription", "event_key"],
                condition=models.Q(channel="webhook"),
                name="alerts_once_per_subscription_event",
            ),
            models.CheckConstraint(
                condition=models.Q(channel="email", subscription__isnull=True)
                | models.Q(channel="webhook", subscription__isnull=False),
                name="alerts_webhook_has_subscription",
            ),
        ]
        indexes = [
            # What the worker looks for: waiting rows by due time, claimed ones by lease.
            models.Index(
                fields=["channel", "due_at"],
                condition=models.Q(status="pending"),
                name="alerts_pending_due",
            ),
            models.Index(
                fields=["lease_until"],
                condition=models.Q(status="sending"),
                name="alerts_sending_lease",
            ),
            models.Index(
                fields=["user", "sent_at"],
                condition=models.Q(channel="email", status="sent"),
                name="alerts_user_sent",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_event_display()} → {self.user} ({self.get_channel_display()})"


class WebhookAttempt(models.Model):
    """One POST of an alert to a webhook subscription, as it went (the delivery log)."""

    alert = models.ForeignKey(
        Alert, on_delete=models.CASCADE, related_name="attempts_log", verbose_name=_("alert")
    )
    subscription = models.ForeignKey(
        WebhookSubscription,
        on_delete=models.CASCADE,
        related_name="attempts",
        verbose_name=_("webhook subscription"),
    )
    started_at = models.DateTimeField(_("when"), default=timezone.now, db_index=True)
    status_code = models.PositiveSmallIntegerField(_("answer status"), null=True, blank=True)
    ok = models.BooleanField(_("delivered"))
    error = models.CharField(_("error"), max_length=500, blank=True)
    duration_ms = models.PositiveIntegerField(_("duration (ms)"), null=True)

    class Meta:
        verbose_name = _("webhook attempt")
        verbose_name_plural = _("webhook attempts")
        ordering = ["-started_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.subscription} · {self.status_code or self.error[:40]}"


class PauseReason(models.TextChoices):
    REFUSED = "refused", _("refused at sign-in")
    INACTIVE = "inactive", _("not signed in for a long time")
    DEPROVISIONED = "deprovisioned", _("deactivated by the identity provider")
    BLOCKED = "blocked", _("blocked by an administrator")


class PauseNotice(models.TextChoices):
    """The last e-mail of a pause for inactivity: sent once, never twice."""

    NONE = "", _("none")
    PENDING = "pending", pgettext_lazy("pause notice", "to send")
    SENDING = "sending", pgettext_lazy("pause notice", "being sent")
    SENT = "sent", pgettext_lazy("pause notice", "sent")
    FAILED = "failed", pgettext_lazy("pause notice", "failed")


class PausedQuerySet(models.QuerySet["AlertPause"]):
    def current(self) -> PausedQuerySet:
        return self.filter(resumed_at__isnull=True)


class AlertPause(models.Model):
    """A person whose alerts stopped because their access ended: refused at sign-in (they
    left the group, their domain or e-mail is no longer admitted, the account was
    deactivated), or not signed in for ALERTS_INACTIVE_DAYS. No alert is written for them
    and none is sent, e-mail or webhook, until they sign in again or an administrator
    restores them (`resumed_at`). One row per person: the last pause."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="alert_pause",
        verbose_name=_("user"),
    )
    reason = models.CharField(_("reason"), max_length=20, choices=PauseReason.choices)
    detail = models.CharField(_("why, in words"), max_length=200, blank=True)
    since = models.DateTimeField(_("paused since"), default=timezone.now)
    resumed_at = models.DateTimeField(_("resumed at"), null=True, blank=True)
    resumed_by = models.CharField(_("resumed by"), max_length=200, blank=True)
    notice = models.CharField(
        _("last e-mail"), max_length=10, choices=PauseNotice.choices, blank=True
    )
    notice_attempts = models.PositiveSmallIntegerField(_("last e-mail's attempts"), default=0)
    notice_error = models.CharField(_("last e-mail's error"), max_length=500, blank=True)

    objects = PausedQuerySet.as_manager()

    class Meta:
        verbose_name = _("paused alerts")
        verbose_name_plural = _("paused alerts")
        ordering = ["-since"]

    def __str__(self) -> str:
        return f"{self.user} · {self.get_reason_display()}"

    @property
    def paused(self) -> bool:
        return self.resumed_at is None
