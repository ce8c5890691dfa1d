"""The admin of provisioning: SCIM tokens (made here and shown once, revoked here, never
shown again), the audit of SCIM calls and of the requests counted by minute (those
refused without a valid token are only there), and the users and groups each provider
pushed (read-only: the provider decides them). All of it concerns the whole organisation:
not for staff limited to a part of it (`portal.lib.admin_limits`)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from portal.lib.admin_limits import UnlimitedOnly
from signin.models import ScimCall, ScimGroup, ScimMinute, ScimToken, ScimUser
from signin.providers import provider_list
from signin.scim.tokens import (
    LIVE_TOKENS,
    TOKEN_DAYS,
    scim_token_mint,
    scim_token_revoke,
    scim_tokens_live,
)

_MINTED = "_scim_token_minted"


class ScimTokenForm(forms.ModelForm[ScimToken]):
    days = forms.IntegerField(
        label=_("days it works"), initial=TOKEN_DAYS, min_value=1, max_value=3650
    )

    class Meta:
        model = ScimToken
        fields = ["provider"]

    def clean_provider(self) -> str:
        provider = str(self.cleaned_data["provider"])
        if scim_tokens_live().filter(provider=provider).count() >= LIVE_TOKENS:
            raise forms.ValidationError(
                _(
                    "This provider has %(count)d live tokens already: revoke the one no "
                    "longer in use, then make the new one."
                ),
                params={"count": LIVE_TOKENS},
            )
        return provider


class _ReadOnly:
    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(ScimToken)
class ScimTokenAdmin(UnlimitedOnly, admin.ModelAdmin[ScimToken]):
    form = ScimTokenForm
    list_display = [
        "provider",
        "prefix",
        "created_at",
        "created_by",
        "expires_at",
        "last_used_at",
        "last_used_from",
        "revoked_at",
    ]
    list_filter = ["provider"]
    actions = ["revoke"]
    created_template = "admin/signin/scimtoken/created.html"

    def get_fields(self, request: HttpRequest, obj: ScimToken | None = None) -> Any:
        if obj is None:
            return ["provider", "days"]
        return [*self.list_display]

    def get_readonly_fields(self, request: HttpRequest, obj: ScimToken | None = None) -> Any:
        return [] if obj is None else [*self.list_display]

    def formfield_for_dbfield(
        self, db_field: Any, request: HttpRequest, **kwargs: Any
    ) -> forms.Field | None:
        if db_field.name == "provider":
            return forms.ChoiceField(
                label=_("identity provider"),
                choices=[
                    (provider.sub_id, f"{provider.name} ({provider.sub_id})")
                    for provider in provider_list(request)
                ],
            )
        return super().formfield_for_dbfield(db_field, request, **kwargs)

    def save_model(self, request: HttpRequest, obj: ScimToken, form: Any, change: bool) -> None:
        if change:
            return  # a token is never changed, only revoked
        token = scim_token_mint(
            provider=obj.provider,
            created_by=request.user.get_username(),
            days=int(form.cleaned_data["days"]),
        )
        setattr(request, _MINTED, token)
        obj.pk = ScimToken.objects.get(prefix=token.split("_")[1]).pk

    def response_add(
        self, request: HttpRequest, obj: ScimToken, post_url_continue: str | None = None
    ) -> HttpResponse:
        """The token, once (the admin's pages are never cached); only its digest is kept."""
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": gettext("New SCIM token"),
            "token": getattr(request, _MINTED, ""),
            "provider": obj.provider,
        }
        return TemplateResponse(request, self.created_template, context)

    @admin.action(description=_("Revoke the selected tokens (their client is refused at once)"))
    def revoke(self, request: HttpRequest, queryset: QuerySet[ScimToken]) -> None:
        live = list(queryset.filter(revoked_at__isnull=True))
        for token in live:
            scim_token_revoke(token=token)
        self.message_user(
            request,
            ngettext("%(count)d token revoked.", "%(count)d tokens revoked.", len(live))
            % {"count": len(live)}
            if live
            else gettext("No token revoked: they were revoked already."),
            messages.SUCCESS,
        )


@admin.register(ScimCall)
class ScimCallAdmin(UnlimitedOnly, _ReadOnly, admin.ModelAdmin[ScimCall]):
    list_display = ["created_at", "provider", "method", "path", "status", "address", "detail"]
    list_filter = ["provider", "status", "method"]
    search_fields = ["path", "resource_id"]
    date_hierarchy = "created_at"


@admin.register(ScimMinute)
class ScimMinuteAdmin(UnlimitedOnly, _ReadOnly, admin.ModelAdmin[ScimMinute]):
    """The requests of each token, and of each address without a valid token (refused:
    counted here, not stored one by one), by minute; those past SCIM_REQUESTS_PER_MINUTE
    were answered 429 without being counted further."""

    list_display = ["minute", "who", "count", "limited"]
    list_filter = ["limited"]
    search_fields = ["who"]
    date_hierarchy = "minute"


@admin.register(ScimUser)
class ScimUserAdmin(UnlimitedOnly, _ReadOnly, admin.ModelAdmin[ScimUser]):
    list_display = [
        "provider",
        "user_name",
        "external_id",
        "user",
        "active",
        "email",
        "email_state",
        "updated_at",
        "deleted_at",
    ]
    list_select_related = ["user"]

    @admin.display(description=_("e-mail for alerts"))
    def email_state(self, scim_user: ScimUser) -> str:
        """Whether the pushed e-mail is the account's (confirmed by a sign-in with it), or
        pending while alerts go to the last address a sign-in confirmed."""
        confirmed = scim_user.user.email
        if not scim_user.email or scim_user.email.casefold() == confirmed.casefold():
            return confirmed or gettext("none yet")
        return gettext("%(confirmed)s (pending until a sign-in with the pushed one)") % {
            "confirmed": confirmed or gettext("none yet")
        }

    list_filter = ["provider"]
    search_fields = ["user_name", "external_id", "user__username"]


@admin.register(ScimGroup)
class ScimGroupAdmin(UnlimitedOnly, _ReadOnly, admin.ModelAdmin[ScimGroup]):
    list_display = ["provider", "display_name", "external_id", "updated_at"]
    list_filter = ["provider"]
    search_fields = ["display_name", "external_id"]
