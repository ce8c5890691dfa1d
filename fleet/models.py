"""The portal's records: fleet web-app logins, the audit trail of SSO mints, CNH lookups."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from fleet import cpf, encryption


class MintPurpose(models.TextChoices):
    EMBED = "embed", _("embedded application")
    DEEP_LINK = "deep_link", _("open in a new tab")
    LINK_CHECK = "link_check", _("check of a new fleet login")
    ADMIN_TEST = "admin_test", _("administrator's test")


class MintOutcome(models.TextChoices):
    MINTED = "minted", _("key minted")
    NO_ACCOUNT = "no_account", _("no fleet login linked")
    LOGIN_REJECTED = "login_rejected", _("fleet login rejected")
    CREDENTIALS_REJECTED = "credentials_rejected", _("portal API credentials rejected")
    PERMISSION_DENIED = "permission_denied", _("no permission for the company")
    RATE_LIMITED = "rate_limited", _("rate limited")
    UNAVAILABLE = "unavailable", _("fleet service unavailable")
    ERROR = "error", _("other error")


class FleetAccount(models.Model):
    """A portal user's login to the fleet web application (spec 4.2).

    The password is kept encrypted (`fleet.encryption`) and is never shown
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
        return f"{self.created_at:%Y-%m-%d %H:%M:%S} {self.user} {self.outcome}"


class CnhLookupKind(models.TextChoices):
    SINGLE = "single", _("individual")
    BATCH = "batch", _("batch")


class CnhLookupStatus(models.TextChoices):
    QUEUED = "queued", pgettext_lazy("CNH lookup status", "Queued")
    RUNNING = "running", pgettext_lazy("CNH lookup status", "Running")
    WAITING_RETRY = "waiting_retry", pgettext_lazy("CNH lookup status", "Waiting to retry")
    DONE = "done", pgettext_lazy("CNH lookup status", "Done")
    FAILED = "failed", pgettext_lazy("CNH lookup status", "Failed")


class CnhReason(models.TextChoices):
    """Why a lookup is waiting to retry, or failed."""

    UPSTREAM_TIMEOUT = "upstream_timeout", _("the licensing service did not answer in time")
    RATE_LIMITED = "rate_limited", _("the fleet service asked us to wait")
    UNAVAILABLE = "unavailable", _("the fleet service did not answer")
    CREDENTIALS_REJECTED = "credentials_rejected", _("the portal's API credentials were refused")
    PERMISSION_DENIED = "permission_denied", _("no permission for the company")
    REJECTED = "rejected", _("the fleet service refused the request")
    INVALID_RESPONSE = "invalid_response", _("the fleet service answered something unexpected")


class CnhItemStatus(models.TextChoices):
    PENDING = "pending", pgettext_lazy("CNH lookup item", "Pending")
    OK = "ok", pgettext_lazy("CNH lookup item", "Found")
    ERROR = "error", pgettext_lazy("CNH lookup item", "Error")


class CnhLookup(models.Model):
    """A driver licence lookup a user asked for: one CPF, or a batch of them.

    It runs in the background (`fleet.tasks.cnh_lookup_run`): `attempts`
    counts the calls of the current run, `next_attempt_at` says when a
    lookup waiting to retry will be tried again, `reason` why it waits or
    failed.
    """

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="cnh_lookups",
        verbose_name=_("requested by"),
    )
    kind = models.CharField(_("kind"), max_length=10, choices=CnhLookupKind.choices)
    status = models.CharField(
        _("status"),
        max_length=20,
        choices=CnhLookupStatus.choices,
        default=CnhLookupStatus.QUEUED,
    )
    attempts = models.PositiveSmallIntegerField(_("attempts"), default=0)
    next_attempt_at = models.DateTimeField(_("next attempt"), null=True, blank=True)
    reason = models.CharField(_("reason"), max_length=30, choices=CnhReason.choices, blank=True)
    # For operators: the failure as the client described it (with the trace id).
    detail = models.CharField(_("detail"), max_length=500, blank=True)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated"), auto_now=True)
    finished_at = models.DateTimeField(_("finished"), null=True, blank=True)

    class Meta:
        verbose_name = _("CNH lookup")
        verbose_name_plural = _("CNH lookups")
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["owner", "-created_at"], name="fleet_cnh_owner_created")]

    def __str__(self) -> str:
        return f"CNH lookup {self.pk} ({self.kind}, {self.status})"

    def get_absolute_url(self) -> str:
        return reverse("fleet:cnh_lookup", args=[self.pk])

    @property
    def is_final(self) -> bool:
        return self.status in (CnhLookupStatus.DONE, CnhLookupStatus.FAILED)


class CnhLookupItem(models.Model):
    """One CPF of a lookup and what the API answered for it.

    `result` holds the API's members as received (known and unknown), read
    again for display by `fleet.api.resources.cnh_licence_from_json`.
    """

    lookup = models.ForeignKey(
        CnhLookup, on_delete=models.CASCADE, related_name="items", verbose_name=_("lookup")
    )
    position = models.PositiveIntegerField(_("position"))
    cpf = models.CharField(_("CPF"), max_length=11)
    status = models.CharField(
        _("status"), max_length=10, choices=CnhItemStatus.choices, default=CnhItemStatus.PENDING
    )
    result = models.JSONField(_("result"), null=True, blank=True)
    error_code = models.CharField(_("error code"), max_length=100, blank=True)
    error_message = models.CharField(_("error message"), max_length=500, blank=True)
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        verbose_name = _("CNH lookup item")
        verbose_name_plural = _("CNH lookup items")
        ordering = ["lookup", "position"]
        constraints = [
            models.UniqueConstraint(fields=["lookup", "position"], name="fleet_cnh_item_position"),
        ]

    def __str__(self) -> str:
        # Masked: this is what admin lists, logs and tracebacks show.
        return cpf.mask(self.cpf)

    def __repr__(self) -> str:
        return f"<CnhLookupItem {self.pk} {cpf.mask(self.cpf)} {self.status}>"
