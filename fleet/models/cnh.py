"""Driver licence (CNH) lookups: each lookup a user asked for, its CPFs and what the API
answered, and the record of every display of full CPFs (LGPD)."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext, ngettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _

from fleet import cpf
from fleet.api.errors import Outcome
from portal.lib import formatting


class CnhLookupKind(models.TextChoices):
    SINGLE = "single", _("individual")
    BATCH = "batch", _("batch")


class CnhLookupStatus(models.TextChoices):
    QUEUED = "queued", pgettext_lazy("CNH lookup status", "Queued")
    RUNNING = "running", pgettext_lazy("CNH lookup status", "Running")
    WAITING_RETRY = "waiting_retry", pgettext_lazy("CNH lookup status", "Waiting to retry")
    DONE = "done", pgettext_lazy("CNH lookup status", "Done")
    FAILED = "failed", pgettext_lazy("CNH lookup status", "Failed")
    # Its call got no answer after it was sent: the API may have done the
    # lookup, and charged it, without the portal learning the result.
    UNKNOWN = "unknown", pgettext_lazy("CNH lookup status", "Outcome unknown")


class CnhReason(models.TextChoices):
    """Why a lookup is waiting to retry, or failed: the `Outcome` of the API's error,
    told apart more finely where a lookup's charge depends on it."""

    UPSTREAM_TIMEOUT = "upstream_timeout", _("the licensing service did not answer in time")
    RATE_LIMITED = Outcome.RATE_LIMITED.value, _("the fleet service asked us to wait")
    # The request never left (a connect error): nothing was done, nor charged.
    UNAVAILABLE = Outcome.UNAVAILABLE.value, _("the fleet service could not be reached")
    # Sent, and no answer came back (closed connection, read timeout).
    NO_ANSWER = "no_answer", _("the fleet service did not answer")
    # An answer with a server error (a 5xx other than 504).
    SERVER_ERROR = "server_error", _("the fleet service had an internal error")
    CREDENTIALS_REJECTED = (
        Outcome.CREDENTIALS_REJECTED.value,
        _("the portal's API credentials were refused"),
    )
    PERMISSION_DENIED = Outcome.PERMISSION_DENIED.value, _("no permission for the company")
    REJECTED = "rejected", _("the fleet service refused the request")
    INVALID_RESPONSE = "invalid_response", _("the fleet service answered something unexpected")


class CnhItemStatus(models.TextChoices):
    PENDING = "pending", pgettext_lazy("CNH lookup item", "Pending")
    OK = "ok", pgettext_lazy("CNH lookup item", "Found")
    ERROR = "error", pgettext_lazy("CNH lookup item", "Error")
    # Sent, and no answer came back: it may have been looked up, and charged.
    UNKNOWN = "unknown", pgettext_lazy("CNH lookup item", "Outcome unknown")


class CnhPurpose(models.TextChoices):
    """Why a lookup was made (LGPD: personal data is processed for a stated purpose)."""

    HIRING = "hiring", _("Hiring or taking on a driver")
    PERIODIC = "periodic", _("Periodic check of a driver's licence")
    FINE = "fine", _("Naming the driver of a traffic fine")
    INCIDENT = "incident", _("An accident or incident")
    OTHER = "other", _("Another purpose (say which)")


class CnhLookup(models.Model):
    """A driver licence lookup a user asked for: one CPF, or a batch of them.

    It runs in the background (`fleet.tasks.cnh_lookup_run`): `attempts`
    counts the calls of the current run, `next_attempt_at` says when a
    lookup waiting to retry will be tried again, `reason` why it waits,
    failed, or has an unknown outcome.
    """

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="cnh_lookups",
        verbose_name=_("requested by"),
    )
    # What its URL shows: a sequential id would tell how many lookups exist.
    public_id = models.UUIDField(_("public id"), default=uuid.uuid4, unique=True, editable=False)
    kind = models.CharField(_("kind"), max_length=10, choices=CnhLookupKind.choices)
    purpose = models.CharField(_("purpose"), max_length=20, choices=CnhPurpose.choices)
    purpose_detail = models.CharField(_("purpose, in the user's words"), max_length=200, blank=True)
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
        indexes = [
            models.Index(fields=["owner", "-created_at"], name="fleet_cnh_owner_created"),
            # The retention purge's range.
            models.Index(fields=["created_at"], name="fleet_cnh_created"),
        ]
        permissions = [("view_full_cpf", _("Can see full CPFs"))]

    def __str__(self) -> str:
        return gettext("CNH lookup %(number)s (%(kind)s, %(status)s)") % {
            "number": self.pk,
            "kind": self.get_kind_display(),
            "status": self.get_status_display().lower(),
        }

    def get_absolute_url(self) -> str:
        return reverse("fleet:cnh_lookup", args=[self.public_id])

    @property
    def is_final(self) -> bool:
        return self.status in (
            CnhLookupStatus.DONE,
            CnhLookupStatus.FAILED,
            CnhLookupStatus.UNKNOWN,
        )


class CnhLookupItem(models.Model):
    """One CPF of a lookup and what the API answered for it.

    `result` holds the API's members as received (known and unknown), read
    again for display by `fleet.api.licences.cnh_licence_from_json`.
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


class CpfDisclosurePlace(models.TextChoices):
    PAGE = "page", _("the lookup's page")
    ADMIN = "admin", _("the administration")
    PACKET = "packet", _("an indication packet (PDF)")
    DRIVER = "driver", _("a driver's page")


class CpfDisclosure(models.Model):
    """One display of full CPFs to a user: who, when, which lookup or driver, where (LGPD).

    Kept when the user or the lookup is deleted (retention): the names, the
    lookup's public id and the driver's id are copied, so that the record still
    says who saw what.
    """

    shown_at = models.DateTimeField(_("shown"), default=timezone.now, db_index=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        related_name="+",
        verbose_name=_("user"),
    )
    # Not "username": this catalogue's translation would replace Django's own in its forms.
    username = models.CharField(_("user's name then"), max_length=150)
    lookup = models.ForeignKey(
        CnhLookup,
        on_delete=models.SET_NULL,
        null=True,
        related_name="disclosures",
        verbose_name=_("lookup"),
    )
    lookup_public_id = models.UUIDField(_("lookup's public id"), null=True, blank=True)
    # A driver's CPF, shown on their page or in the admin: the fleet's id for the driver.
    driver_number = models.PositiveBigIntegerField(_("driver id"), null=True, blank=True)
    place = models.CharField(_("where"), max_length=10, choices=CpfDisclosurePlace.choices)
    cpf_count = models.PositiveIntegerField(_("CPFs shown"))

    class Meta:
        verbose_name = _("full CPF display")
        verbose_name_plural = _("full CPF displays")
        ordering = ["-shown_at", "-pk"]

    def __str__(self) -> str:
        return ngettext(
            "%(user)s saw %(count)d full CPF on %(moment)s",
            "%(user)s saw %(count)d full CPFs on %(moment)s",
            self.cpf_count,
        ) % {
            "user": self.username,
            "count": self.cpf_count,
            "moment": formatting.moment(self.shown_at),
        }
