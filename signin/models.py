"""The audit trail of sign-ins through an identity provider.

Local logins are audited by django-axes (its access logs and failures, in
the admin beside this one); this records every answer an identity provider
gave the portal and what the portal made of it. Never a token, a code or a
secret: the subject, the e-mail and the outcome.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from fleet import formatting


class SsoOutcome(models.TextChoices):
    SIGNED_IN = "signed_in", _("signed in")
    PROVISIONED = "provisioned", _("signed in for the first time: account created")
    LINKED = "linked", _("signed in: linked to the existing account with this e-mail")
    UNVERIFIED_EMAIL = "unverified_email", _("refused: e-mail not verified by the provider")
    DOMAIN_NOT_ALLOWED = "domain_not_allowed", _("refused: e-mail domain not allowed")
    NO_ROLE = "no_role", _("refused: in no group that gives access")
    DEACTIVATED = "deactivated", _("refused: portal account deactivated")
    CONFLICT = "conflict", _("refused: e-mail already linked to another identity")
    LINK_BY_ADMINISTRATOR = (
        "link_by_admin",
        _("refused: an administrator must link the account with this e-mail"),
    )
    BAD_ANSWER = "bad_answer", _("refused: the provider's answer did not check out")
    CANCELLED = "cancelled", _("cancelled at the provider")
    UNAVAILABLE = "unavailable", _("provider unavailable")

    @classmethod
    def successes(cls) -> frozenset[SsoOutcome]:
        return frozenset({cls.SIGNED_IN, cls.PROVISIONED, cls.LINKED})


class Role(models.TextChoices):
    """What a provider's groups claim makes a person here (signin.access)."""

    MANAGER = "manager", _("fleet manager")
    ADMINISTRATOR = "administrator", _("administrator (Django admin)")


class SsoAttempt(models.Model):
    """One answer of an identity provider and what became of it."""

    created_at = models.DateTimeField(_("when"), auto_now_add=True, db_index=True)
    provider = models.CharField(_("provider"), max_length=200)
    subject = models.CharField(_("subject at the provider"), max_length=255, blank=True)
    email = models.CharField(_("e-mail"), max_length=254, blank=True)
    address = models.GenericIPAddressField(_("address"), null=True, blank=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("portal user"),
    )
    outcome = models.CharField(_("outcome"), max_length=30, choices=SsoOutcome.choices)
    role = models.CharField(_("role"), max_length=30, choices=Role.choices, blank=True)
    detail = models.CharField(_("detail"), max_length=300, blank=True)

    class Meta:
        verbose_name = _("single sign-on attempt")
        verbose_name_plural = _("single sign-on attempts")
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return " · ".join(
            (
                formatting.moment(self.created_at) or "-",
                self.email or self.subject or "-",
                self.get_outcome_display(),
            )
        )
