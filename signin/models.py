"""The audit trail of sign-ins through an identity provider.

Local logins are audited by django-axes (its access logs and failures, in
the admin beside this one); this records every answer an identity provider
gave the portal and what the portal made of it. Never a token, a code or a
secret: the subject, the e-mail and the outcome.

Provisioning (SCIM 2.0, `signin.scim`) keeps its tokens (hashed), the calls it
answered, and the users and groups each provider pushed.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from portal.lib import formatting


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


# --- Provisioning from the directory (SCIM 2.0) ---------------------------------------


class ScimToken(models.Model):
    """The bearer token an identity provider's SCIM client sends; only its SHA-256 is kept.

    `prefix` is the token's public start: the row is found by it, then the digest is
    compared in constant time.
    """

    provider = models.CharField(_("identity provider"), max_length=200, db_index=True)
    prefix = models.CharField(_("prefix"), max_length=16, unique=True, editable=False)
    digest = models.CharField(_("SHA-256 of the token"), max_length=64, editable=False)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    created_by = models.CharField(_("created by"), max_length=150, blank=True)
    revoked_at = models.DateTimeField(_("revoked"), null=True, blank=True)
    # A token ends: `manage.py scim_token --days` (365 by default); another is made
    # before, and both work while the provider's settings change (two at most).
    expires_at = models.DateTimeField(_("expires"))
    last_used_at = models.DateTimeField(_("last used"), null=True, blank=True)
    last_used_from = models.GenericIPAddressField(_("last used from"), null=True, blank=True)

    class Meta:
        verbose_name = _("SCIM token")
        verbose_name_plural = _("SCIM tokens")
        ordering = ["provider", "-created_at"]

    def __str__(self) -> str:
        return f"{self.provider} · {self.prefix}…"


class ScimCall(models.Model):
    """One request to the SCIM endpoints and its answer: never the token, never a body."""

    created_at = models.DateTimeField(_("when"), auto_now_add=True, db_index=True)
    provider = models.CharField(_("identity provider"), max_length=200, blank=True)
    token = models.ForeignKey(
        ScimToken,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="calls",
        verbose_name=_("token"),
    )
    method = models.CharField(_("method"), max_length=10)
    path = models.CharField(_("path"), max_length=300)
    resource_id = models.CharField(_("resource id"), max_length=100, blank=True)
    status = models.PositiveSmallIntegerField(_("status"))
    detail = models.CharField(_("detail"), max_length=300, blank=True)
    address = models.GenericIPAddressField(_("address"), null=True, blank=True)

    class Meta:
        verbose_name = _("SCIM call")
        verbose_name_plural = _("SCIM calls")
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.method} {self.path} → {self.status}"


class ScimMinute(models.Model):
    """The requests to the SCIM endpoints of one token, or of one address without a valid
    token, in one minute: what SCIM_REQUESTS_PER_MINUTE is counted against, for every
    process of the deployment. An address's are the record of the requests refused to it
    (counted here, not stored one row each, nor logged one line each)."""

    who = models.CharField(_("token or address"), max_length=60)
    minute = models.DateTimeField(_("minute"))
    count = models.PositiveIntegerField(_("requests"), default=0)
    limited = models.BooleanField(
        _("limited"),
        default=False,
        help_text=_("More than SCIM_REQUESTS_PER_MINUTE: the rest were answered 429."),
    )

    class Meta:
        verbose_name = _("SCIM requests in a minute")
        verbose_name_plural = _("SCIM requests by minute")
        ordering = ["-minute", "who"]
        constraints = [models.UniqueConstraint(fields=["who", "minute"], name="signin_scim_minute")]
        # The retention's range (SCIM_CALLS_KEEP_DAYS).
        indexes = [models.Index(fields=["minute"], name="signin_scim_minute_when")]

    def __str__(self) -> str:
        return f"{self.who} · {self.minute:%Y-%m-%d %H:%M} · {self.count}"


class AccessBlock(models.Model):
    """An administrator's block of a person's access in the portal: their account is
    inactive, their sessions ended and their alerts paused, whatever their identity
    provider says (a SCIM `active: true`) and whatever sign-in comes; only an
    administrator lifts it (`signin.blocks`)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="access_block",
        verbose_name=_("portal user"),
    )
    since = models.DateTimeField(_("blocked since"), auto_now_add=True)
    by = models.CharField(_("blocked by"), max_length=200)
    reason = models.CharField(_("why"), max_length=200, blank=True)

    class Meta:
        verbose_name = _("access blocked")
        verbose_name_plural = _("accesses blocked")
        ordering = ["-since"]

    def __str__(self) -> str:
        return f"{self.user} · {self.since:%Y-%m-%d %H:%M}"


class ScimUser(models.Model):
    """A portal user as one identity provider provisions them: its `userName` and
    `externalId` (the subject it signs them in with, kept as their SocialAccount's uid)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    provider = models.CharField(_("identity provider"), max_length=200)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="scim_identities",
        verbose_name=_("portal user"),
    )
    user_name = models.CharField(_("userName"), max_length=255)
    external_id = models.CharField(_("externalId"), max_length=255, blank=True)
    # What the provider last said (`active`; None: nothing, which is active); the portal
    # user is active when this is and no administrator blocked them (`AccessBlock`).
    active = models.BooleanField(_("active at the provider"), null=True, default=True)
    # The e-mail the provider pushed: pending until the person signs in with it (then it
    # is their account's, where alerts go); a push alone never points alerts elsewhere.
    email = models.EmailField(_("e-mail pushed"), blank=True)
    # Its type and whether primary, as pushed (answered as pushed; Entra filters by type).
    email_type = models.CharField(_("type of the e-mail pushed"), max_length=20, blank=True)
    email_primary = models.BooleanField(_("e-mail pushed is primary"), null=True, blank=True)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    updated_at = models.DateTimeField(_("last modified"), auto_now=True)
    # DELETE keeps the portal user and their records; the provider no longer sees them.
    deleted_at = models.DateTimeField(_("deleted by the provider"), null=True, blank=True)

    class Meta:
        verbose_name = _("provisioned user")
        verbose_name_plural = _("provisioned users")
        ordering = ["provider", "user_name"]
        constraints = [
            models.UniqueConstraint(
                fields=["provider", "user_name"],
                condition=models.Q(deleted_at__isnull=True),
                name="signin_scim_user_name",
            ),
            models.UniqueConstraint(
                fields=["provider", "user"],
                condition=models.Q(deleted_at__isnull=True),
                name="signin_scim_user",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.provider}: {self.user_name}"


class ScimGroup(models.Model):
    """A group an identity provider pushes: its `displayName` and `externalId` are values
    of that provider's groups (`fleet.models.DirectoryGroup`), as the groups claim's are."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    provider = models.CharField(_("identity provider"), max_length=200)
    display_name = models.CharField(_("displayName"), max_length=255)
    external_id = models.CharField(_("externalId"), max_length=255, blank=True)
    members = models.ManyToManyField(
        ScimUser, related_name="groups", blank=True, verbose_name=_("members")
    )
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    updated_at = models.DateTimeField(_("last modified"), auto_now=True)

    class Meta:
        verbose_name = _("provisioned group")
        verbose_name_plural = _("provisioned groups")
        ordering = ["provider", "display_name"]
        constraints = [
            models.UniqueConstraint(
                fields=["provider", "display_name"], name="signin_scim_group_name"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.provider}: {self.display_name}"
