"""The admin of the alerts: the defaults of new users, each user's choices, the outbox
with its failures (retried from here), webhook subscriptions and their delivery log,
and the people whose alerts are paused (restored from here).

Secrets are never shown: a subscription's is shown once, to its owner, when made.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from alerts.forms import AlertDefaultsForm, AlertPreferencesForm
from alerts.models import (
    Alert,
    AlertDefaults,
    AlertPause,
    AlertPreferences,
    AlertStatus,
    WebhookAttempt,
    WebhookSubscription,
)
from alerts.services.outbox import alerts_send_soon
from alerts.services.pauses import alerts_resume
from alerts.services.sending import alert_retry
from fleet.admin.scoping import (
    AboutPeopleAdministered,
    Scoped,
    WholeFleetOnly,
    about_records_seen,
)
from fleet.services.scopes import VehicleScope

_CHOICES_FIELDSETS: Any = (
    (
        _("Events to alert"),
        {
            "fields": (
                "new_fine",
                "fine_document",
                "fine_treated",
                "new_notification",
                "indication_reminders",
            )
        },
    ),
    (_("E-mail alerts"), {"fields": ("delivery", "digest_hour", "time_zone", "language")}),
    (_("Vehicles"), {"fields": ("all_vehicles", "plates")}),
)


@admin.register(AlertDefaults)
class AlertDefaultsAdmin(WholeFleetOnly, admin.ModelAdmin[AlertDefaults]):
    """One row: what users who never saved their alert preferences get (its plates may
    be any vehicle's: not for scoped staff)."""

    form = AlertDefaultsForm  # type: ignore[assignment]  # one form class for both models
    fieldsets = _CHOICES_FIELDSETS

    def has_add_permission(self, request: HttpRequest) -> bool:
        return not AlertDefaults.objects.exists()

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(AlertPreferences)
class AlertPreferencesAdmin(WholeFleetOnly, admin.ModelAdmin[AlertPreferences]):
    """Each user's choices; their plates are the user's vehicles: not for scoped staff."""

    form = AlertPreferencesForm  # type: ignore[assignment]
    list_display = ("user", "delivery", "digest_hour", "time_zone", "all_vehicles", "language")
    list_filter = ("delivery", "language", "all_vehicles")
    search_fields = ("user__username", "user__email")
    fieldsets = ((None, {"fields": ("user",)}), *_CHOICES_FIELDSETS)
    raw_id_fields = ("user",)


class WebhookAttemptInline(admin.TabularInline[WebhookAttempt, Alert]):
    model = WebhookAttempt
    extra = 0
    can_delete = False
    fields = ("started_at", "status_code", "ok", "error", "duration_ms")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(Alert)
class AlertAdmin(Scoped, admin.ModelAdmin[Alert]):
    """The outbox, read-only: what was sent, what waits, what failed and why. Scoped
    staff see the alerts about the fines and notifications they see."""

    list_display = ("created_at", "user", "event", "channel", "status", "attempts", "due_at")
    list_filter = ("status", "channel", "event", "digest")
    search_fields = ("user__username", "user__email", "event_key", "message_id")
    date_hierarchy = "created_at"
    actions = ["retry_now"]
    inlines = [WebhookAttemptInline]
    readonly_fields = (
        "public_id",
        "user",
        "channel",
        "subscription",
        "event",
        "event_key",
        "fine",
        "notification",
        "data",
        "digest",
        "status",
        "due_at",
        "attempts",
        "lease_until",
        "last_error",
        "message_id",
        "created_at",
        "sent_at",
    )
    fields = readonly_fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def scoped(self, rows: QuerySet[Any], scope: VehicleScope) -> QuerySet[Any]:
        return rows.filter(about_records_seen(scope))

    @admin.action(description=_("Send again now (failed or waiting alerts)"))
    def retry_now(self, request: HttpRequest, queryset: QuerySet[Alert]) -> None:
        count = alert_retry(alerts=queryset)
        alerts_send_soon()
        self.message_user(
            request,
            ngettext(
                "%(count)d alert will be sent again.", "%(count)d alerts will be sent again.", count
            )
            % {"count": count}
            if count
            else gettext("No alert will be sent again: none of them had failed or was waiting."),
            messages.SUCCESS if count else messages.WARNING,
        )


@admin.register(WebhookSubscription)
class WebhookSubscriptionAdmin(AboutPeopleAdministered, admin.ModelAdmin[WebhookSubscription]):
    """Each user's subscriptions; scoped staff see those of the people they administer."""

    list_display = ("url", "description", "user", "active", "created_at", "failures")
    list_filter = ("active",)
    search_fields = ("url", "description", "user__username")
    fields = ("user", "url", "description", "active", "created_at")
    readonly_fields = ("user", "url", "created_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # made by its owner, who sees the secret once

    @admin.display(description=_("alerts failed"))
    def failures(self, subscription: WebhookSubscription) -> int:
        return subscription.alerts.filter(status=AlertStatus.FAILED).count()


@admin.register(WebhookAttempt)
class WebhookAttemptAdmin(Scoped, admin.ModelAdmin[WebhookAttempt]):
    """The delivery log of the outgoing webhooks; scoped staff see the attempts of the
    alerts they see."""

    def scoped(self, rows: QuerySet[Any], scope: VehicleScope) -> QuerySet[Any]:
        return rows.filter(about_records_seen(scope, through="alert__"))

    list_display = ("started_at", "subscription", "alert", "status_code", "ok", "duration_ms")
    list_filter = ("ok", "status_code")
    search_fields = ("subscription__url", "error")
    readonly_fields = (
        "alert",
        "subscription",
        "started_at",
        "status_code",
        "ok",
        "error",
        "duration_ms",
    )
    fields = readonly_fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


class PausedNowFilter(admin.SimpleListFilter):
    title = _("paused now")
    parameter_name = "paused"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return [("yes", _("Yes")), ("no", _("No"))]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() in ("yes", "no"):
            return queryset.filter(resumed_at__isnull=self.value() == "yes")
        return queryset


@admin.register(AlertPause)
class AlertPauseAdmin(AboutPeopleAdministered, admin.ModelAdmin[AlertPause]):
    """People whose alerts stopped when their access ended (refused at sign-in, or not
    signed in for ALERTS_INACTIVE_DAYS): why and since when, and the action that
    restores them (a sign-in of theirs does too). Scoped staff see the people they
    administer."""

    list_display = ("user", "paused", "reason", "detail", "since", "resumed_at", "notice")
    list_filter = (PausedNowFilter, "reason", "notice")
    search_fields = ("user__username", "user__email")
    date_hierarchy = "since"
    actions = ["restore"]
    readonly_fields = (
        "user",
        "reason",
        "detail",
        "since",
        "resumed_at",
        "resumed_by",
        "notice",
        "notice_attempts",
        "notice_error",
    )
    fields = readonly_fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # a pause comes from sign-in or the daily check, never by hand

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    @admin.display(description=_("paused now"), boolean=True)
    def paused(self, pause: AlertPause) -> bool:
        return pause.paused

    @admin.action(description=_("Restore the alerts of the selected people"))
    def restore(self, request: HttpRequest, queryset: QuerySet[AlertPause]) -> None:
        by = gettext("administrator %(username)s") % {"username": request.user.get_username()}
        count = sum(
            alerts_resume(user=pause.user, by=by)
            for pause in queryset.filter(resumed_at__isnull=True)
        )
        self.message_user(
            request,
            ngettext(
                "The alerts of %(count)d person are on again.",
                "The alerts of %(count)d people are on again.",
                count,
            )
            % {"count": count}
            if count
            else gettext("No one's alerts were paused: nothing changed."),
            messages.SUCCESS if count else messages.WARNING,
        )
