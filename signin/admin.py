"""The admin of sign-in: identity providers (a client secret is write-only), people's
linked identities (and linking one by hand), the audit trail of single sign-ons, and
unlocking a local login.

django-axes registers its own pages beside these: access attempts (delete one to
unlock), access failures and the access log of every sign-in and sign-out; allauth its
e-mail addresses and sessions; Django its groups of users.

Staff limited to a part of the organisation (`portal.lib.admin_limits`) administer the
people of their part, without giving anyone rights; every other page here concerns the
whole organisation (who signs in, and how) and is not theirs.
"""

from __future__ import annotations

from typing import Any

from allauth.account.admin import EmailAddressAdmin
from allauth.account.models import EmailAddress
from allauth.socialaccount.admin import SocialAccountAdmin, SocialAppAdmin, SocialAppForm
from allauth.socialaccount.models import SocialAccount, SocialApp, SocialToken
from allauth.usersessions.admin import UserSessionAdmin
from allauth.usersessions.models import UserSession
from axes.admin import AccessAttemptAdmin, AccessFailureLogAdmin, AccessLogAdmin
from axes.models import AccessAttempt, AccessFailureLog, AccessLog
from axes.utils import reset as axes_reset
from django import forms
from django.contrib import admin, messages
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group, User
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from portal.lib import formatting
from portal.lib.admin_limits import UnlimitedOnly, people_administered, staff_unlimited
from signin.blocks import access_block, access_unblock
from signin.models import SsoAttempt
from signin.providers import provider_list
from signin.scim import admin as scim_admin  # noqa: F401 (registers provisioning's pages)


class ProviderForm(SocialAppForm):
    """allauth's form, the client secret typed and never shown again."""

    secret = forms.CharField(
        label=_("client secret"),
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        help_text=_("Leave empty to keep the current one."),
    )

    def clean_secret(self) -> str:
        typed: str = self.cleaned_data.get("secret") or ""
        return typed or (self.instance.secret if self.instance.pk else "")


class ProviderAdmin(UnlimitedOnly, SocialAppAdmin):
    form = ProviderForm
    list_display = ("name", "provider_id", "client_id")
    fields = ("provider", "provider_id", "name", "client_id", "secret", "settings")


class LinkedIdentityAdmin(UnlimitedOnly, SocialAccountAdmin):
    """allauth's social accounts, as an administrator links a person's identity by hand
    (the sign-in links by e-mail only where that is safe: signin.admission): the
    provider chosen among the configured ones, the subject typed, nothing else."""

    fields = ("user", "provider", "uid")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        # Another subject or provider is another identity: add it, rather than edit this one.
        return ("provider", "uid") if obj is not None else ()

    def formfield_for_dbfield(
        self, db_field: Any, request: HttpRequest, **kwargs: Any
    ) -> forms.Field | None:
        if db_field.name == "provider":
            return forms.ChoiceField(
                label=_("provider"),
                choices=[
                    (provider.sub_id, f"{provider.name} ({provider.sub_id})")
                    for provider in provider_list(request)
                ],
            )
        if db_field.name == "uid":
            kwargs["label"] = _("UID (subject at the provider)")
            kwargs["help_text"] = _(
                "The person's subject at the provider: their sign-in's refusal page shows it, "
                "and so does the attempt in Single sign-on attempts."
            )
        field: forms.Field | None = super().formfield_for_dbfield(db_field, request, **kwargs)
        return field


@admin.register(SsoAttempt)
class SsoAttemptAdmin(UnlimitedOnly, admin.ModelAdmin[SsoAttempt]):
    list_display = ("created_at", "provider", "email", "address", "outcome", "role", "user")
    list_filter = ("outcome", "provider")
    search_fields = ("email", "subject", "user__username")
    date_hierarchy = "created_at"
    readonly_fields = [field.name for field in SsoAttempt._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class IdentityInline(admin.TabularInline[SocialAccount, User]):
    model = SocialAccount
    extra = 0
    fields = ("provider", "uid", "date_joined", "last_login")
    readonly_fields = fields
    verbose_name = _("linked identity")
    verbose_name_plural = _("linked identities (single sign-on)")

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class PortalUserAdmin(UserAdmin[User]):
    """The portal's users. Whether one is active is not edited here: their identity
    provider says it (over SCIM), and an administrator's block (*Block access*) says
    it over that, until lifted (*Unblock access*); both are shown."""

    inlines = [IdentityInline]
    list_display = (
        "username",
        "email",
        "first_name",
        "last_name",
        "is_staff",
        "is_active",
        "blocked",
        "last_login",
    )
    list_select_related = ["access_block"]
    readonly_fields = ("is_active", "blocked")
    actions = ["block", "unblock", "unlock_local_login"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[User]:
        return people_administered(request, super().get_queryset(request))

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = super().get_readonly_fields(request, obj)
        if staff_unlimited(request):
            return fields
        # A right given by staff limited to a part would reach past it.
        return (*fields, "is_staff", "is_superuser", "groups", "user_permissions")

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        fieldsets = super().get_fieldsets(request, obj)
        if obj is None:
            return fieldsets
        roles = _(
            "Staff and superuser status follow the identity provider's administrators' "
            "groups at each sign-in through it (its groups claim); a push of its directory "
            "(SCIM) can take them away, never give them."
        )
        return [
            *fieldsets[:1],
            (_("Access"), {"fields": ("is_active", "blocked")}),
            *[
                (
                    name,
                    {
                        **options,
                        "fields": [f for f in options["fields"] if f != "is_active"],
                        **({"description": roles} if "is_staff" in options["fields"] else {}),
                    },
                )
                for name, options in fieldsets[1:]
            ],
        ]

    def save_model(self, request: HttpRequest, obj: User, form: Any, change: bool) -> None:
        if not change:
            super().save_model(request, obj, form, change)
            return
        # What the form changed only: the rest of the row as the page read it would undo
        # what was written since (a block, a provider's push).
        columns = {field.name for field in User._meta.concrete_fields}
        obj.save(update_fields=[name for name in form.changed_data if name in columns])

    @admin.display(description=_("blocked by an administrator"))
    def blocked(self, user: User) -> str:
        block = getattr(user, "access_block", None) if user.pk else None
        if block is None:
            return gettext("no")
        return gettext("since %(since)s, by %(by)s") % {
            "since": formatting.moment(block.since),
            "by": block.by,
        }

    @admin.action(
        description=_(
            "Block access of the selected users (sessions end and alerts pause at once; "
            "no provider and no sign-in undoes it)"
        )
    )
    def block(self, request: HttpRequest, queryset: QuerySet[User]) -> None:
        # Not oneself: an administrator locked out of the admin cannot undo it.
        by = gettext("administrator %(name)s") % {"name": request.user.get_username()}
        count = sum(
            access_block(user=user, by=by) for user in queryset.exclude(pk=request.user.pk or 0)
        )
        self.message_user(
            request,
            ngettext("%(count)d user blocked.", "%(count)d users blocked.", count)
            % {"count": count}
            if count
            else gettext("No user blocked: they were blocked already (or only you were chosen)."),
            messages.SUCCESS,
        )

    @admin.action(description=_("Unblock access of the selected users"))
    def unblock(self, request: HttpRequest, queryset: QuerySet[User]) -> None:
        by = gettext("administrator %(name)s") % {"name": request.user.get_username()}
        count = sum(access_unblock(user=user, by=by) for user in queryset)
        self.message_user(
            request,
            ngettext("%(count)d user unblocked.", "%(count)d users unblocked.", count)
            % {"count": count}
            if count
            else gettext("No user unblocked: none of them was blocked."),
            messages.SUCCESS,
        )

    @admin.action(description=_("Unlock the local login of the selected users"))
    def unlock_local_login(self, request: HttpRequest, queryset: QuerySet[User]) -> None:
        cleared = sum(axes_reset(username=user.get_username()) for user in queryset)
        self.message_user(
            request,
            ngettext(
                "%(count)d locked attempt record cleared.",
                "%(count)d locked attempt records cleared.",
                cleared,
            )
            % {"count": cleared}
            if cleared
            else gettext("No locked attempt record to clear."),
            messages.SUCCESS,
        )


class GroupOfUsersAdmin(UnlimitedOnly, GroupAdmin):
    """Groups of users carry permissions, the whole fleet's among them."""


class EmailAddressesAdmin(UnlimitedOnly, EmailAddressAdmin):
    """The e-mail addresses sign-in links identities by."""


class SessionsAdmin(UnlimitedOnly, UserSessionAdmin):
    """Each person's sessions: where and when they signed in."""


class AttemptsAdmin(UnlimitedOnly, AccessAttemptAdmin):
    """Failed sign-ins by person and address (deleting one unlocks it)."""


class AccessLogsAdmin(UnlimitedOnly, AccessLogAdmin):
    """Every sign-in and sign-out."""


class FailuresAdmin(UnlimitedOnly, AccessFailureLogAdmin):
    """Every failed sign-in."""


for model, model_admin in (
    (Group, GroupOfUsersAdmin),
    (EmailAddress, EmailAddressesAdmin),
    (UserSession, SessionsAdmin),
    (AccessAttempt, AttemptsAdmin),
    (AccessLog, AccessLogsAdmin),
    (AccessFailureLog, FailuresAdmin),
):
    admin.site.unregister(model)
    admin.site.register(model, model_admin)
admin.site.unregister(SocialApp)
admin.site.register(SocialApp, ProviderAdmin)
admin.site.unregister(SocialAccount)
admin.site.register(SocialAccount, LinkedIdentityAdmin)
# The portal keeps no provider tokens (SOCIALACCOUNT_STORE_TOKENS is off).
admin.site.unregister(SocialToken)
admin.site.unregister(User)
admin.site.register(User, PortalUserAdmin)
