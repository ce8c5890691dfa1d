"""The Django admin of the fleet app: fleet logins, the audit trail of mints, CNH lookups,
webhooks, vehicle groups, who had each vehicle.

A fleet password is write-only here: it is typed, encrypted and never shown
again, not even encrypted. Testing a login mints a key that is discarded.

Webhook deliveries, fines and notifications are read-only: they are what the
fleet platform sent. A delivery kept as invalid or failed can be replayed
once its cause is fixed; the unknown keys report lists what the platform
sends that the portal does not know yet.

CNH lookups (`fleet.admin.cnh`) show CPFs masked, in full only to users
allowed to see them, and each such display is recorded.

Vehicle groups (`fleet.admin.groups`) hold their plates by the thousand: their plates
are changed through lists typed or pasted, or a CSV import, never a row per plate.
"""

from __future__ import annotations

from typing import Any, ClassVar

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.utils import quote, unquote
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_POST

from fleet.admin.scoping import AboutPeopleAdministered, Scoped, WholeFleetOnly
from fleet.models import (
    AccessKeyMint,
    DeliveryStatus,
    Fine,
    FleetAccount,
    MintOutcome,
    Notification,
    UnknownWebhookKey,
    WebhookDelivery,
)
from fleet.services.fines import records_searched
from fleet.services.paging import CappedPaginator
from fleet.services.sso import fleet_account_check
from fleet.webhooks.payloads import KNOWN_PATHS
from fleet.webhooks.processing import BODY_EMPTIED, delivery_replay
from portal.lib import formatting

# What an administrator can do about each failed test.
_CHECK_HINTS = {
    MintOutcome.LOGIN_REJECTED: _("Set the account's current fleet e-mail and password."),
    MintOutcome.CREDENTIALS_REJECTED: _(
        "The portal's Fleet API credentials are refused: run `manage.py fleet_doctor`."
    ),
    MintOutcome.PERMISSION_DENIED: _(
        "The portal's Fleet API account has no permission for this company: "
        "ask the company's fleet administrator to grant it."
    ),
    MintOutcome.RATE_LIMITED: _("The Fleet API is busy: try again in a minute."),
    MintOutcome.UNAVAILABLE: _("The fleet service did not answer: try again later."),
    MintOutcome.ERROR: _(
        "See the audit trail of accessKey mints; if the stored password can no longer "
        "be decrypted (FLEET_FIELD_KEYS), set it again."
    ),
}


class FleetAccountForm(forms.ModelForm[FleetAccount]):
    password = forms.CharField(
        label=_("fleet password"),
        strip=False,
        required=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
    )

    class Meta:
        model = FleetAccount
        fields = ["user", "email"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk is None:
            self.fields["password"].required = True
        else:
            self.fields["password"].help_text = _("Leave empty to keep the current password.")

    def save(self, commit: bool = True) -> FleetAccount:
        account = super().save(commit=False)
        if password := self.cleaned_data["password"]:
            account.set_password(password)
        if password or "email" in self.changed_data:
            account.forget_results()
        if commit:
            account.save()
        return account


@admin.register(FleetAccount)
class FleetAccountAdmin(AboutPeopleAdministered, admin.ModelAdmin[FleetAccount]):
    form = FleetAccountForm
    change_form_template = "admin/fleet/fleetaccount/change_form.html"
    fields = [
        "user",
        "email",
        "password",
        "last_success_at",
        "last_failure_at",
        "last_failure_outcome",
    ]
    readonly_fields = ["last_success_at", "last_failure_at", "last_failure_outcome"]
    list_display = ["user", "email", "last_success_at", "last_failure_at", "last_failure_outcome"]
    list_select_related = ["user"]
    search_fields = ["user__username", "email"]
    autocomplete_fields = ["user"]
    actions = ["check_fleet_login"]

    def get_urls(self) -> list[URLPattern]:
        name = f"{self.opts.app_label}_{self.opts.model_name}_check"
        view = self.admin_site.admin_view(require_POST(self.check_view))
        return [path("<path:object_id>/check/", view, name=name), *super().get_urls()]

    @admin.action(description=_("Test fleet login"), permissions=["change"])
    def check_fleet_login(self, request: HttpRequest, queryset: QuerySet[FleetAccount]) -> None:
        for account in queryset.select_related("user"):
            self._check(request, account)

    def check_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The change page's "Test fleet login" button (POST only, CSRF-protected)."""
        account = self.get_object(request, unquote(object_id))
        if account is None:
            raise Http404(gettext("This fleet account does not exist."))
        if not self.has_change_permission(request, account):
            raise PermissionDenied
        self._check(request, account)
        opts = self.opts
        return HttpResponseRedirect(
            reverse(
                f"admin:{opts.app_label}_{opts.model_name}_change",
                args=[quote(account.pk)],
                current_app=self.admin_site.name,
            )
        )

    def _check(self, request: HttpRequest, account: FleetAccount) -> None:
        # The admin site only lets authenticated staff in.
        assert isinstance(request.user, User)
        outcome = fleet_account_check(account=account, by=request.user)
        values = {"account": account, "outcome": outcome.label}
        if outcome == MintOutcome.MINTED:
            message = gettext("%(account)s: the fleet login works (%(outcome)s).") % values
            self.message_user(request, message, messages.SUCCESS)
            return
        message = gettext("%(account)s: the fleet login test failed (%(outcome)s).") % values
        if hint := _CHECK_HINTS.get(outcome):
            message = f"{message} {hint}"
        self.message_user(request, message, messages.ERROR)


@admin.register(AccessKeyMint)
class AccessKeyMintAdmin(WholeFleetOnly, admin.ModelAdmin[AccessKeyMint]):
    """The audit trail: read-only, so that it can be trusted."""

    list_display = [
        "created_at",
        "user",
        "fleet_email",
        "purpose",
        "outcome",
        "trace_id",
        "duration_ms",
    ]
    list_filter = ["purpose", "outcome", "created_at"]
    list_select_related = ["user"]
    search_fields = ["user__username", "fleet_email", "trace_id"]
    date_hierarchy = "created_at"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: AccessKeyMint | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: AccessKeyMint | None = None) -> bool:
        return False


class _ReadOnly:
    """What the fleet platform sent is a record: it is looked at, not edited."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


class _LargeList:
    """The change list of a table of millions of rows: counted up to `COUNTED` (its pages
    too), never the whole table (no "N in all" beside a search's count: a "Show all"
    link), and no date hierarchy (which reads the distinct dates of every row);
    received_at is a filter."""

    paginator: ClassVar[type] = CappedPaginator
    date_hierarchy: ClassVar[str | None] = None
    show_full_result_count: ClassVar[bool] = False
    # Rows a page renders: the admin's 100 cost a page most of its time.
    list_per_page: ClassVar[int] = 50
    # Columns the list never shows and that can be large: read on a record's own page only.
    list_deferred: ClassVar[tuple[str, ...]] = ()

    def action_checkbox(self, obj: Any) -> SafeString:
        """The row's box for the actions, as Django's `CheckboxInput` writes it but
        without a template rendered for each row (a third of a page of fifty's time)."""
        label = format_html(gettext("Select this object for an action - {}"), str(obj))
        return format_html(
            '<input type="checkbox" name="{}" value="{}" class="action-select" aria-label="{}">',
            helpers.ACTION_CHECKBOX_NAME,
            obj.pk,
            label,
        )

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        records: QuerySet[Any] = super().get_queryset(request)  # type: ignore[misc]
        match = request.resolver_match
        if (
            self.list_deferred
            and match is not None
            and (match.url_name or "").endswith("_changelist")
        ):
            return records.defer(*self.list_deferred)
        return records


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(
    _LargeList, WholeFleetOnly, _ReadOnly, admin.ModelAdmin[WebhookDelivery]
):
    list_display = [
        "id",
        "received_at",
        "status",
        "kind",
        "source_address",
        "body_size",
        "attempts",
        "short_error",
    ]
    list_filter = ["status", "kind", "received_at"]
    list_deferred = ("body", "headers")  # a body is up to FLEET_WEBHOOK_MAX_BYTES
    # Each through an index; an error is found by its status (failed, invalid).
    search_fields = ["=id", "=body_sha256"]
    actions = ["replay"]
    fields = (
        "received_at",
        "status",
        "kind",
        "error",
        "attempts",
        "processed_at",
        "unknown_keys_unrecorded",
        "duplicate_of",
        "fine",
        "notification",
        "source_address",
        "content_type",
        "body_size",
        "body_sha256",
        "body_purged_at",
        "headers",
        "body_shown",
    )
    readonly_fields = fields

    @admin.display(description=_("error"))
    def short_error(self, delivery: WebhookDelivery) -> str:
        return delivery.error if len(delivery.error) <= 80 else f"{delivery.error[:79]}…"

    @admin.display(description=_("body"))
    def body_shown(self, delivery: WebhookDelivery) -> str:
        if delivery.body_purged_at is not None:
            return gettext(
                "Emptied %(when)s, as every processed delivery's after "
                "FLEET_WEBHOOK_BODIES_KEEP_DAYS days; its size and SHA-256 are above."
            ) % {"when": formatting.moment(delivery.body_purged_at)}
        return format_html('<pre class="readonly">{}</pre>', delivery.body_text())

    def has_replay_permission(self, request: HttpRequest) -> bool:
        # Replaying changes fines and notifications: for those who may change deliveries.
        return request.user.has_perm("fleet.change_webhookdelivery")

    @admin.action(description=_("Replay the selected deliveries"), permissions=["replay"])
    def replay(self, request: HttpRequest, queryset: QuerySet[WebhookDelivery]) -> None:
        outcomes = delivery_replay(ids=queryset.values_list("pk", flat=True))
        if emptied := outcomes.pop(BODY_EMPTIED, 0):
            refusal = ngettext(
                "%(count)d delivery was not replayed: its body was emptied after "
                "FLEET_WEBHOOK_BODIES_KEEP_DAYS days, and what it made is kept.",
                "%(count)d deliveries were not replayed: their body was emptied after "
                "FLEET_WEBHOOK_BODIES_KEEP_DAYS days, and what they made is kept.",
                emptied,
            ) % {"count": emptied}
            self.message_user(request, refusal, messages.WARNING)
            if not outcomes:
                return
        summary = ", ".join(
            f"{DeliveryStatus(status).label}: {count}" for status, count in sorted(outcomes.items())
        )
        message = gettext("Replayed %(count)d deliveries (%(summary)s).") % {
            "count": outcomes.total(),
            "summary": summary or "-",
        }
        kept = outcomes[DeliveryStatus.INVALID] + outcomes[DeliveryStatus.FAILED]
        self.message_user(request, message, messages.WARNING if kept else messages.SUCCESS)


# What fines and notifications show alike.
_RECORD_FIELDS = (
    "key",
    "external_id",
    "registration",
    "treated",
    "treated_history",
    "payload",
    "source_updated_at",
    "received_at",
    "updated_at",
)

# The JSON a record keeps as received, and its handling's history: read and decoded on its
# own page only (a list of fifty read fifty of each, which it never shows).
_RECORD_JSON = ("payload", "treated_history")


def _records_found(queryset: QuerySet[Any], search_term: str) -> tuple[QuerySet[Any], bool]:
    """The admin's search, through indexes as the lists' is (`records_searched`, which finds
    a vehicle's records by its plate in either format), and a key as stored."""
    term = search_term.strip()
    if not term:
        return queryset, False
    return queryset.filter(records_searched(queryset.model, term) | Q(key=term)), False


@admin.register(Fine)
class FineAdmin(_LargeList, Scoped, _ReadOnly, admin.ModelAdmin[Fine]):
    list_display = [
        "external_id",
        "registration",
        "treated",
        "link_frame",
        "received_at",
        "updated_at",
    ]
    list_filter = ["treated", "received_at"]
    search_fields = ["key"]  # the search box; what it finds: `_records_found`
    list_deferred = _RECORD_JSON
    readonly_fields = (
        *_RECORD_FIELDS,
        "link_frame",
        "link",
        "amount",
        "occurred_at",
        "driver_id",
        "driver_basis",
        "driver_span",
        "driver_corrections_shown",
        "reference",
        "infraction",
        "indication",
        "indication_basis",
        "indication_due",
        "indication_due_basis",
        "payment_due",
        "payment_due_basis",
        "indication_changes_shown",
    )

    @admin.display(description=_("deadlines and indication changed by hand"))
    def indication_changes_shown(self, obj: Fine) -> str:
        """Who changed the fine's deadlines or indication, when, from what to what, why."""
        changes = list(obj.indication_changes.all()[:50])
        if not changes:
            return "—"
        return format_html(
            "<ul>{}</ul>",
            format_html_join(
                "",
                "<li>{} · {} · {}: {} → {} · “{}”</li>",
                (
                    (
                        formatting.moment(c.at),
                        c.user_name,
                        c.get_field_display(),
                        c.before_shown or "—",
                        c.after_shown or "—",
                        c.reason,
                    )
                    for c in changes
                ),
            ),
        )

    @admin.display(description=_("drivers set by hand"))
    def driver_corrections_shown(self, obj: Fine) -> str:
        """Who set the fine's driver by hand, when, from what, to what and why: a list, not
        an inline (whose empty columns are headers without a name)."""
        corrections = list(obj.driver_corrections.all()[:50])
        if not corrections:
            return "—"
        return format_html(
            "<ul>{}</ul>",
            format_html_join(
                "",
                "<li>{} · {}: {} → {} · “{}”</li>",
                (
                    (
                        formatting.moment(c.at),
                        c.user_name,
                        c.from_driver_id if c.from_driver_id is not None else "—",
                        c.to_driver_id,
                        c.reason,
                    )
                    for c in corrections
                ),
            ),
        )

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Fine], search_term: str
    ) -> tuple[QuerySet[Fine], bool]:
        return _records_found(queryset, search_term)


@admin.register(Notification)
class NotificationAdmin(_LargeList, Scoped, _ReadOnly, admin.ModelAdmin[Notification]):
    list_display = ["external_id", "registration", "treated", "received_at", "updated_at"]
    list_filter = ["treated", "received_at"]
    search_fields = ["key"]  # the search box; what it finds: `_records_found`
    list_deferred = _RECORD_JSON
    readonly_fields = (*_RECORD_FIELDS, "heading")

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Notification], search_term: str
    ) -> tuple[QuerySet[Notification], bool]:
        return _records_found(queryset, search_term)


@admin.register(UnknownWebhookKey)
class UnknownWebhookKeyAdmin(WholeFleetOnly, _ReadOnly, admin.ModelAdmin[UnknownWebhookKey]):
    """The report: keys the fleet platform sends that this version of the portal does not know."""

    list_display = ["path", "first_seen", "first_delivery", "sample"]
    search_fields = ["path"]
    readonly_fields = ["path", "first_seen", "first_delivery", "sample"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[UnknownWebhookKey]:
        # Keys the portal has learnt since they were first seen are no longer news.
        return super().get_queryset(request).exclude(path__in=KNOWN_PATHS)


# CNH lookups and the record of full CPFs shown: fleet/admin/cnh.py
from fleet.admin import cnh as cnh  # noqa: E402

# Drivers' names, CPFs and licences: fleet/admin/drivers.py
from fleet.admin import drivers as drivers  # noqa: E402

# Who had each vehicle (the history) and who set fines' drivers: fleet/admin/driving.py
from fleet.admin import driving as driving  # noqa: E402

# Vehicle groups, their members and the provider groups that give them: fleet/admin/groups.py
from fleet.admin import groups as groups  # noqa: E402
