"""The portal's records: fleet web-app logins, the audit trail of SSO mints, CNH lookups,
and what the fleet platform pushes by webhook (every delivery as received, the fines and
notifications built from them, and the payload keys the portal does not know yet)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation

from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext, ngettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _

from fleet import cpf, display, encryption, plates
from fleet.api.errors import Outcome


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
        return " · ".join(
            (
                display.moment(self.created_at) or "-",
                str(self.user or "-"),
                self.get_outcome_display(),
            )
        )


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


class CpfDisclosure(models.Model):
    """One display of full CPFs to a user: who, when, which lookup, where (LGPD).

    Kept when the user or the lookup is deleted (retention): the names and the
    lookup's public id are copied, so that the record still says who saw what.
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
    lookup_public_id = models.UUIDField(_("lookup's public id"))
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
            "moment": display.moment(self.shown_at),
        }


# --- Webhooks (spec 2.6 and 6) ---------------------------------------------------


class DeliveryStatus(models.TextChoices):
    RECEIVED = "received", _("received, not processed yet")
    PROCESSED = "processed", _("processed")
    DUPLICATE = "duplicate", _("duplicate of an earlier delivery")
    UNKNOWN_KIND = "unknown_kind", _("kept: unknown event kind")
    INVALID = "invalid", _("kept: invalid")
    FAILED = "failed", _("kept: processing failed")
    REFUSED = "refused", _("refused: too large")


# Deliveries that may come out differently when processed again.
REPLAYABLE_STATUSES = (
    DeliveryStatus.RECEIVED,
    DeliveryStatus.UNKNOWN_KIND,
    DeliveryStatus.INVALID,
    DeliveryStatus.FAILED,
)


class EventKind(models.TextChoices):
    FINE = "frame", _("fine")
    NOTIFICATION = "notification", _("notification")
    UNKNOWN = "unknown", _("unknown")


class WebhookDelivery(models.Model):
    """One POST to the webhook receiver, exactly as it arrived.

    Written before anything is parsed, so that nothing received is lost: a
    delivery that could not be processed keeps its error and can be replayed.
    Only headers that cannot be credentials are kept (`safe_headers`).
    """

    received_at = models.DateTimeField(_("received"), default=timezone.now, db_index=True)
    content_type = models.CharField(_("content type"), max_length=255, blank=True)
    body = models.BinaryField(_("body"), blank=True)
    body_size = models.PositiveIntegerField(_("body size (bytes)"))
    # Indexed with the status (Meta.indexes): duplicates are processed deliveries by body.
    body_sha256 = models.CharField(_("SHA-256 of the body"), max_length=64)
    headers = models.JSONField(_("headers"), default=dict, blank=True)
    source_address = models.GenericIPAddressField(_("source address"), null=True, blank=True)
    status = models.CharField(
        _("status"), max_length=20, choices=DeliveryStatus.choices, default=DeliveryStatus.RECEIVED
    )
    kind = models.CharField(_("event kind"), max_length=20, choices=EventKind.choices, blank=True)
    error = models.TextField(_("error"), blank=True)
    attempts = models.PositiveSmallIntegerField(_("processing attempts"), default=0)
    processed_at = models.DateTimeField(_("last processed"), null=True, blank=True)
    unknown_keys_unrecorded = models.PositiveIntegerField(
        _("unknown keys not recorded"),
        default=0,
        help_text=_(
            "New unknown keys of this delivery beyond FLEET_WEBHOOK_UNKNOWN_KEYS_MAX when it "
            "was last processed: counted here, not listed one by one."
        ),
    )
    duplicate_of = models.ForeignKey(
        "self",
        on_delete=models.SET_NULL,
        db_index=False,  # a partial index instead: see Meta.indexes
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("duplicate of"),
    )
    fine = models.ForeignKey(
        "Fine",
        on_delete=models.SET_NULL,
        db_index=False,  # a partial index instead: see Meta.indexes
        null=True,
        blank=True,
        related_name="deliveries",
        verbose_name=_("fine"),
    )
    notification = models.ForeignKey(
        "Notification",
        on_delete=models.SET_NULL,
        db_index=False,  # a partial index instead: see Meta.indexes
        null=True,
        blank=True,
        related_name="deliveries",
        verbose_name=_("notification"),
    )

    class Meta:
        verbose_name = _("webhook delivery")
        verbose_name_plural = _("webhook deliveries")
        ordering = ["-received_at", "-id"]
        # Every index is written by each delivery the receiver stores, so those of
        # columns a new delivery leaves empty cover only the rows that fill them: a
        # delivery stored touches its table and two indexes, not five. The waiting
        # deliveries in arrival order by status; a body's processed twin by both.
        indexes = [
            models.Index(fields=["status", "received_at"], name="fleet_delivery_status"),
            models.Index(fields=["body_sha256", "status"], name="fleet_delivery_body"),
            *(
                models.Index(
                    fields=[name], condition=models.Q(**{f"{name}__isnull": False}), name=index
                )
                for name, index in (
                    ("duplicate_of", "fleet_delivery_duplicate_of"),
                    ("fine", "fleet_delivery_fine"),
                    ("notification", "fleet_delivery_notification"),
                )
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.pk} · {display.moment(self.received_at)} · {self.get_status_display()}"

    def body_text(self) -> str:
        """The body as text; bytes that are not UTF-8 shown as replacement characters."""
        return bytes(self.body).decode("utf-8", errors="replace")


REGISTRATION_LENGTH = 20
# Digits of `Fine.amount`, two of them decimals: up to R$ 9,999,999,999.99.
AMOUNT_DIGITS = 12


def payload_plate(payload: object) -> str:
    """The plate an event's payload names, as sent ("" if none)."""
    return _text(payload, "carPlate", "plate")


def payload_registration(payload: object) -> str:
    """`WebhookRecord.registration` for `payload`."""
    return plates.registration(payload_plate(payload))[:REGISTRATION_LENGTH]


def _registration_index(name: str) -> models.Index:
    """A vehicle's records, untreated first; only the records that name a plate."""
    return models.Index(
        fields=["registration", "treated"], condition=~models.Q(registration=""), name=name
    )


class WebhookRecord(models.Model):
    """What fines and notifications share: one record per event id, updated in place.

    `key` is `id:<the payload's id>`, or `sha256:<digest of its identifying
    fields>` when the payload has no id. `treated_history` holds every
    distinct `treated` value seen, oldest first, as
    `{"treated", "at" (the payload's time, if any), "received", "delivery"}`.
    """

    key = models.CharField(_("key"), max_length=120, unique=True)
    external_id = models.CharField(_("id in the fleet platform"), max_length=100, blank=True)
    treated = models.BooleanField(_("treated"))
    treated_history = models.JSONField(_("history of treated"), default=list, blank=True)
    payload = models.JSONField(_("last payload"), default=dict)
    source_updated_at = models.DateTimeField(_("updated in the fleet platform"), null=True)
    # The payload's plate in the Mercosul format (`plates.registration`): a vehicle's
    # records whichever format they were issued under; "" without a plate.
    registration = models.CharField(
        _("vehicle registration"), max_length=REGISTRATION_LENGTH, blank=True, default=""
    )
    received_at = models.DateTimeField(_("received"), default=timezone.now)
    updated_at = models.DateTimeField(_("updated"), default=timezone.now)

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return self.external_id or self.key[:20]

    @property
    def plate(self) -> str:
        return payload_plate(self.payload)

    def treated_changes(self) -> list[dict[str, object]]:
        """The history reduced to its changes: each entry differs from the one before."""
        changes: list[dict[str, object]] = []
        for entry in self.treated_history:
            if not changes or changes[-1].get("treated") != entry.get("treated"):
                changes.append(entry)
        return changes


class Fine(WebhookRecord):
    """A traffic fine (a `frame` event): its official document and payment slip.

    `link_frame` is empty while the issuing authority has not made the official
    document available (`linkFrame: null`). `amount` and `occurred_at` are the
    payload's, read when the fine is written (null when absent or malformed: the
    payload keeps what was sent); `driver_id` is the driver of its vehicle in the
    fleet's vehicle list when the fine arrived (null if unknown).
    """

    link_frame = models.TextField(_("official infraction document"), blank=True)
    link = models.TextField(_("payment slip"), blank=True)
    amount = models.DecimalField(
        _("amount (R$)"), max_digits=AMOUNT_DIGITS, decimal_places=2, null=True, blank=True
    )
    occurred_at = models.DateTimeField(_("committed on"), null=True, blank=True)
    driver_id = models.PositiveBigIntegerField(_("driver id"), null=True, blank=True)

    class Meta:
        verbose_name = _("fine")
        verbose_name_plural = _("fines")
        ordering = ["treated", "-updated_at", "-id"]
        indexes = [
            models.Index(fields=["treated", "-updated_at"], name="fleet_fine_list"),
            _registration_index("fleet_fine_plate"),
            # The dashboard's sums, each read from an index alone: untreated in total,
            # by vehicle and by driver; by month; received lately.
            models.Index(fields=["treated", "amount"], name="fleet_fine_treated_amount"),
            # By vehicle and by driver, in the order of a GROUP BY, with what it sums.
            models.Index(
                fields=["treated", "registration", "amount"], name="fleet_fine_treated_plate"
            ),
            models.Index(
                fields=["treated", "driver_id", "amount"], name="fleet_fine_treated_driver"
            ),
            models.Index(
                fields=["driver_id", "treated"],
                condition=models.Q(driver_id__isnull=False),
                name="fleet_fine_driver",
            ),
            models.Index(fields=["occurred_at", "amount"], name="fleet_fine_occurred"),
            models.Index(fields=["received_at", "amount"], name="fleet_fine_received"),
            # The fines still without their document, counted on their own.
            models.Index(
                fields=["treated"], condition=models.Q(link_frame=""), name="fleet_fine_no_document"
            ),
            # The latest change: what the dashboard's cached figures are keyed by.
            models.Index(fields=["updated_at"], name="fleet_fine_updated"),
        ]

    def get_absolute_url(self) -> str:
        return reverse("fleet:fine", args=[self.pk])

    @property
    def reference(self) -> str:
        return _text(self.payload, "autoInfracao")

    @property
    def description(self) -> str:
        return _text(self.payload, "description")

    @property
    def occurred_at_text(self) -> str:
        """`occurredAt` as sent (a text that may not be a time)."""
        return _text(self.payload, "occurredAt")

    @property
    def amount_text(self) -> str:
        """`amount` as sent (a text that may not be a number)."""
        return _text(self.payload, "amount")


def payload_amount(payload: object) -> Decimal | None:
    """A fine payload's `amount` in R$ with two decimals; None if absent or not a number
    that fits `Fine.amount`."""
    text = _text(payload, "amount").replace("R$", "").strip()
    if "," in text and text.rfind(",") > text.rfind("."):
        text = text.replace(".", "").replace(",", ".")  # "1.293,47": as a Brazilian writes it
    try:
        value = Decimal(text).quantize(Decimal("0.01"))
    except (InvalidOperation, ValueError):
        return None
    if not value.is_finite() or abs(value) >= 10 ** (AMOUNT_DIGITS - 2):
        return None
    return value


def payload_occurred_at(payload: object) -> datetime | None:
    """A fine payload's `occurredAt` as an aware time (UTC when it names no offset); None
    if absent or not an ISO 8601 time."""
    text = _text(payload, "occurredAt")
    try:
        moment = datetime.fromisoformat(text) if text else None
    except ValueError:
        return None
    if moment is None:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


class Notification(WebhookRecord):
    """A notification (a `notification` event)."""

    class Meta:
        verbose_name = _("notification")
        verbose_name_plural = _("notifications")
        ordering = ["treated", "-updated_at", "-id"]
        indexes = [
            models.Index(fields=["treated", "-updated_at"], name="fleet_notification_list"),
            _registration_index("fleet_notification_plate"),
        ]

    def get_absolute_url(self) -> str:
        return reverse("fleet:notification", args=[self.pk])

    @property
    def title(self) -> str:
        return _text(self.payload, "title")

    @property
    def message(self) -> str:
        return _text(self.payload, "message")


class UnknownWebhookKey(models.Model):
    """A payload key the portal did not know when it first arrived (spec 6, rule 2).

    The admin lists those it still does not know, so that a developer sees
    what the platform added and when.
    """

    path = models.CharField(_("key"), max_length=200, unique=True)
    first_seen = models.DateTimeField(_("first seen"), default=timezone.now)
    first_delivery = models.ForeignKey(
        WebhookDelivery,
        on_delete=models.SET_NULL,
        null=True,
        related_name="+",
        verbose_name=_("first delivery"),
    )
    sample = models.CharField(_("sample value"), max_length=200, blank=True)

    class Meta:
        verbose_name = _("unknown webhook key")
        verbose_name_plural = _("unknown webhook keys")
        ordering = ["-first_seen", "path"]

    def __str__(self) -> str:
        return self.path


class Driver(models.Model):
    """A name for a driver id of the fleet's vehicle list (`driver_id`), where the portal
    knows one: the list names none, so an administrator types it in the admin."""

    driver_id = models.PositiveBigIntegerField(_("driver id"), unique=True)
    name = models.CharField(_("driver's name"), max_length=150)

    class Meta:
        verbose_name = _("driver")
        verbose_name_plural = _("drivers")
        ordering = ["name", "driver_id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.driver_id})"

    def get_absolute_url(self) -> str:
        return reverse("fleet:driver", args=[self.driver_id])


class SavedFineView(models.Model):
    """A user's named set of filters of the fines list (its query string), shown as a tab."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="saved_fine_views",
        verbose_name=_("portal user"),
    )
    name = models.CharField(_("name of the view"), max_length=60)
    query = models.CharField(_("filters (query string)"), max_length=500, blank=True)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)

    class Meta:
        verbose_name = _("saved view of the fines")
        verbose_name_plural = _("saved views of the fines")
        ordering = ["user", "name"]
        constraints = [
            models.UniqueConstraint(fields=["user", "name"], name="fleet_saved_fine_view_name"),
        ]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        url = reverse("fleet:fines")
        return f"{url}?{self.query}" if self.query else url


def _text(payload: object, *names: str) -> str:
    """The first of `names` in `payload` that holds a scalar, as text ("" if none)."""
    if isinstance(payload, dict):
        for name in names:
            value = payload.get(name)
            if isinstance(value, str | int | float) and not isinstance(value, bool):
                return str(value)
    return ""
