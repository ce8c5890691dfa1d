"""Fleet web-app logins (spec 4.2) and the audit trail of the accessKeys minted with them."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from fleet.api.errors import Outcome
from portal.lib import encryption, formatting


class MintPurpose(models.TextChoices):
    EMBED = "embed", _("embedded application")
    DEEP_LINK = "deep_link", _("open in a new tab")
    LINK_CHECK = "link_check", _("check of a new fleet login")
    ADMIN_TEST = "admin_test", _("administrator's test")


class MintOutcome(models.TextChoices):
    """How an attempt to mint an accessKey ended: minted, no login to mint with, or
    the `Outcome` of the API's error (a 404 is an error: no key is ever "not found")."""

    MINTED = "minted", _("key minted")
    NO_ACCOUNT = "no_account", _("no fleet login linked")
    LOGIN_REJECTED = Outcome.LOGIN_REJECTED.value, _("fleet login rejected")
    CREDENTIALS_REJECTED = Outcome.CREDENTIALS_REJECTED.value, _("portal API credentials rejected")
    PERMISSION_DENIED = Outcome.PERMISSION_DENIED.value, _("no permission for the company")
    RATE_LIMITED = Outcome.RATE_LIMITED.value, _("rate limited")
    UNAVAILABLE = Outcome.UNAVAILABLE.value, _("fleet service unavailable")
    ERROR = Outcome.ERROR.value, _("other error")


class FleetAccount(models.Model):
    """A portal user's login to the fleet web application (spec 4.2).

    The password is kept encrypted (`portal.lib.encryption`) and is never shown
    again once saved: it is only decrypted to mint an accessKey.
    """

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="fleet_account",
        verbose_name=_("portal user"),
    )
    email = models.EmailField(_("fleet login e-mail"))
    password_encrypted = models.TextField(_("fleet password (encrypted)"), editable=False)
    last_success_at = models.DateTimeField(_("last successful login"), null=True, blank=True)
    last_failure_at = models.DateTimeField(_("last failed login"), null=True, blank=True)
    last_failure_outcome = models.CharField(
        _("reason of the last failure"), max_length=30, choices=MintOutcome.choices, blank=True
    )
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        verbose_name = _("fleet account")
        verbose_name_plural = _("fleet accounts")
        ordering = ["user__username"]

    def __str__(self) -> str:
        return f"{self.user} → {self.email}"

    def __repr__(self) -> str:
        return f"<FleetAccount {self.pk} {self.email}>"

    def set_password(self, raw_password: str) -> None:
        self.password_encrypted = encryption.encrypt(raw_password)

    def forget_results(self) -> None:
        """Clear the last success and failure: they were about another login."""
        self.last_success_at = self.last_failure_at = None
        self.last_failure_outcome = ""

    def password(self) -> str:
        return encryption.decrypt(self.password_encrypted)


class AccessKeyMint(models.Model):
    """One attempt to mint an accessKey: who, when, why, and how it ended.

    The key itself is never stored; it lives only in the one response that
    carries it to the browser.
    """

    created_at = models.DateTimeField(_("when"), auto_now_add=True, db_index=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        related_name="+",
        verbose_name=_("portal user"),
    )
    fleet_email = models.EmailField(_("fleet login e-mail"), blank=True)
    purpose = models.CharField(_("purpose"), max_length=20, choices=MintPurpose.choices)
    outcome = models.CharField(_("outcome"), max_length=30, choices=MintOutcome.choices)
    trace_id = models.CharField(_("upstream trace id"), max_length=100, blank=True)
    detail = models.CharField(_("detail"), max_length=500, blank=True)
    duration_ms = models.PositiveIntegerField(_("duration (ms)"), null=True)

    class Meta:
        verbose_name = _("accessKey mint")
        verbose_name_plural = _("accessKey mints")
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return " · ".join(
            (
                formatting.moment(self.created_at) or "-",
                str(self.user or "-"),
                self.get_outcome_display(),
            )
        )
