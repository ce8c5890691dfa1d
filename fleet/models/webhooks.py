"""What the fleet platform pushes by webhook (spec 2.6 and 6): every delivery as received,
the fines and notifications built from them, and the payload keys the portal does not
know yet. What a payload says is read by `fleet.webhooks.payloads` (and a fine's
infraction facts by `fleet.webhooks.facts`), nowhere else."""

from __future__ import annotations

import hashlib
from functools import cached_property

from django.db import models
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django_stubs_ext import StrOrPromise

from fleet.api.values import AMOUNT_DIGITS
from fleet.models.driving import DriverBasis
from fleet.models.indications import DeadlineBasis, Indication, NeedBasis, to_indicate_indexes
from fleet.schema import DescendingIndex
from fleet.webhooks.facts import FineFacts, fine_facts
from fleet.webhooks.payloads import (
    REFERENCE_LENGTH,
    REGISTRATION_LENGTH,
    payload_plate,
    payload_text,
)
from portal.lib import formatting


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


# Deliveries whose body is of no more use once old: they can only come out the same.
BODY_PURGED_STATUSES = (DeliveryStatus.PROCESSED, DeliveryStatus.DUPLICATE)


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
    # When the body of a delivery processed long ago was emptied
    # (`FLEET_WEBHOOK_BODIES_KEEP_DAYS`); `body_size` and `body_sha256` stay.
    body_purged_at = models.DateTimeField(_("body purged"), null=True, blank=True)
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
            # The bodies the nightly purge may empty, oldest first (`BODY_PURGED_STATUSES`).
            models.Index(
                fields=["received_at"],
                condition=models.Q(body_purged_at__isnull=True, status__in=BODY_PURGED_STATUSES),
                name="fleet_delivery_body_kept",
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.pk} · {formatting.moment(self.received_at)} · {self.get_status_display()}"

    def body_text(self) -> str:
        """The body as text; bytes that are not UTF-8 shown as replacement characters."""
        return bytes(self.body).decode("utf-8", errors="replace")


def _registration_index(name: str) -> models.Index:
    """A vehicle's records, untreated first; only the records that name a plate."""
    return models.Index(
        fields=["registration", "treated"], condition=~models.Q(registration=""), name=name
    )


def of_vehicle(registration: str) -> models.Q:
    """The records of the vehicle `registration` (`fleet.plates.registration`), as the
    plate index reads them: SQLite reads a partial index only for a query that says its
    condition (a registration's equality does not imply it there)."""
    return models.Q(registration=registration) & ~models.Q(registration="")


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

    def shown_version(self) -> str:
        """What a list's kept row of this record shows changes with (`fleet.views.rows`):
        when it last changed, and its history of `treated` (which only grows)."""
        return f"{self.updated_at.timestamp()}:{len(self.treated_history)}"

    def treated_changes(self) -> list[dict[str, object]]:
        """The history reduced to its changes: each entry differs from the one before."""
        changes: list[dict[str, object]] = []
        for entry in self.treated_history:
            if not changes or changes[-1].get("treated") != entry.get("treated"):
                changes.append(entry)
        return changes


class Wording(models.Model):
    """A text many records share, once however many share it: a fine's infraction (its
    payload's `description`), a notification's title. The lists' searches look for
    words in these few rows, not in every record (`fleet.services.fines`). Written by
    processing, never changed."""

    text = models.TextField(_("text"))
    digest = models.CharField(_("SHA-256 of the text"), max_length=64, unique=True)

    class Meta:
        verbose_name = _("wording")
        verbose_name_plural = _("wordings")

    def __str__(self) -> str:
        return self.text


def _wording_field(verbose_name: StrOrPromise) -> models.ForeignKey[Wording | None, Wording | None]:
    """A record's `Wording`: in an index of the list's order (see the Meta.indexes), and
    without a database constraint, which added to ten million rows would lock them."""
    return models.ForeignKey(
        Wording,
        on_delete=models.PROTECT,
        db_index=False,
        db_constraint=False,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=verbose_name,
    )


def _nullable_choice(
    verbose_name: StrOrPromise, choices: type[models.TextChoices], *, max_length: int = 10
) -> models.CharField[str | None, str | None]:
    """A choice that may be null: a column SQLite adds to ten million rows without copying
    the table (a NOT NULL one, or one with a default, makes Django's SQLite backend
    rebuild it). Null means "no writer has reached this row yet", never a choice."""
    return models.CharField(
        verbose_name, max_length=max_length, choices=choices.choices, null=True, blank=True
    )


class Fine(WebhookRecord):
    """A traffic fine (a `frame` event): its official document and payment slip.

    `link_frame` is empty while the issuing authority has not made the official
    document available (`linkFrame: null`). `amount` and `occurred_at` are the
    payload's, read when the fine is written (`fleet.webhooks.payloads`; null when
    absent or malformed: the payload keeps what was sent, `amount_text` and
    `occurred_at_text`, shown only then); every page, export, e-mail and outgoing
    webhook shows these columns. `driver_id` is the driver of its vehicle in the
    fleet's vehicle list when the fine arrived (null if unknown). `reference` (the
    notice number, `autoInfracao`) and `infraction` (its `description`, in the
    `Wording`s) are the payload's too, for the list's search: no filter reads the JSON.
    """

    # The driver's name, and an uncertain fine's two candidates as the pages name them:
    # given to a page's fines by `fleet.services.drivers.fines_named` (not columns).
    driver_name = ""
    driver_candidates: tuple[str, ...] = ()

    link_frame = models.TextField(_("official infraction document"), blank=True)
    link = models.TextField(_("payment slip"), blank=True)
    amount = models.DecimalField(
        _("amount (R$)"), max_digits=AMOUNT_DIGITS, decimal_places=2, null=True, blank=True
    )
    occurred_at = models.DateTimeField(_("committed on"), null=True, blank=True)
    driver_id = models.PositiveBigIntegerField(_("driver id"), null=True, blank=True)
    # How `driver_id` is known (`fleet.services.attribution`); the period it was read from.
    driver_basis = models.CharField(
        _("how the driver is known"),
        max_length=10,
        choices=DriverBasis.choices,
        blank=True,
        default=DriverBasis.PENDING,
    )
    driver_span = models.ForeignKey(
        "fleet.DriverSpan",
        on_delete=models.DO_NOTHING,  # spans are never deleted
        null=True,
        blank=True,
        db_constraint=False,
        db_index=False,
        related_name="+",
        verbose_name=_("period with a driver"),
    )
    reference = models.CharField(
        _("notice number"), max_length=REFERENCE_LENGTH, blank=True, default=""
    )
    infraction = _wording_field(_("infraction"))
    # The fine as work with a deadline (`fleet.models.indications`): whether its driver is
    # to be indicated, by when, and by when the slip is due, each with how it is known.
    # Null only on a row no writer has reached yet (`fleet.webhooks.deadlines`). Nullable
    # columns: added to ten million rows without rewriting them.
    indication = _nullable_choice(_("driver indication"), Indication, max_length=12)
    indication_basis = _nullable_choice(_("how the need to indicate is known"), NeedBasis)
    indication_due = models.DateField(_("indicate the driver by"), null=True, blank=True)
    indication_due_basis = _nullable_choice(
        _("how the indication deadline is known"), DeadlineBasis
    )
    payment_due = models.DateField(_("payment due"), null=True, blank=True)
    payment_due_basis = _nullable_choice(_("how the payment due date is known"), DeadlineBasis)

    class Meta:
        verbose_name = _("fine")
        verbose_name_plural = _("fines")
        ordering = ["treated", "-updated_at", "-id"]
        permissions = [
            ("change_fine_driver", _("Can set who was driving for a fine")),
            (
                "change_fine_indication",
                _("Can set a fine's deadlines and whether it needs an indication"),
            ),
        ]
        indexes = [
            # The list's order, and the plate: a part of the fleet that walks it checks
            # each fine's plate from the index alone (`VehicleScope.records`). Not the
            # id that breaks ties (0023): with the whole order in it, SQLite's planner
            # walked it for filters that select few fines, to spare their sort. The id
            # held beside the keys (0024; PostgreSQL's INCLUDE, SQLite's indexes hold
            # it already): a deep page read from the index alone, not the table.
            models.Index(
                fields=["treated", "-updated_at", "registration"],
                include=["id"],
                name="fleet_fine_list_ids",
            ),
            _registration_index("fleet_fine_plate"),
            # Sums over all the fines (the dashboard's tallies from scratch, the list's
            # totals), each read from an index alone: untreated in total, by vehicle and
            # by driver; by month; received lately.
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
            # The fines still to attribute (`fleet.services.attribution`); the list by how the
            # driver is known, in its order, with the plate and driver it checks (0035).
            models.Index(
                fields=["key"],
                condition=models.Q(driver_basis=DriverBasis.PENDING),
                name="fleet_fine_unattributed",
            ),
            models.Index(
                fields=["driver_basis", "treated", "-updated_at", "registration", "driver_id"],
                include=["id"],
                name="fleet_fine_basis",
            ),
            # The list sorted by when committed or by amount, either way, NULLs last: a
            # page deep in it reads its rows from these indexes, not a sort of them all.
            DescendingIndex(fields=["-occurred_at", "-id"], name="fleet_fine_occurred_desc"),
            models.Index(fields=["treated", "occurred_at"], name="fleet_fine_treated_occurred"),
            models.Index(fields=["amount", "id"], name="fleet_fine_amount"),
            DescendingIndex(fields=["-amount", "-id"], name="fleet_fine_amount_desc"),
            models.Index(fields=["received_at", "amount"], name="fleet_fine_received"),
            # The fines still without their document: counted on their own, and listed.
            models.Index(
                fields=["treated", "-updated_at"],
                condition=models.Q(link_frame=""),
                name="fleet_fine_without_document",
            ),
            # The search: a notice number, or its beginning; an infraction, in the list's order.
            # Whole (not partial): SQLite reads a partial index only for a query that says
            # its condition, which a range of notice numbers does not.
            models.Index(fields=["reference"], name="fleet_fine_reference"),
            models.Index(
                fields=["infraction", "treated", "-updated_at"], name="fleet_fine_infraction"
            ),
            # The fines still to indicate: by deadline, by vehicle, by driver.
            *to_indicate_indexes(),
        ]

    def get_absolute_url(self) -> str:
        return reverse("fleet:fine", args=[self.pk])

    def shown_version(self) -> str:
        """And its driver and indication deadline: set by the worker or a person, the fine
        itself unchanged."""
        names = "\n".join((self.driver_name, *self.driver_candidates))
        name = hashlib.sha256(names.encode()).hexdigest()[:12]
        due = f"{self.indication}:{self.indication_due}:{self.indication_due_basis}"
        return f"{super().shown_version()}:{self.driver_id}:{self.driver_basis}:{name}:{due}"

    @property
    def description(self) -> str:
        return payload_text(self.payload, "description")

    @property
    def indication_missed(self) -> bool:
        """Whether its driver is still to be indicated and the deadline to do so has passed
        (by the portal's local day): the NIC, twice this fine, is to be expected."""
        return (
            self.indication == Indication.NEEDED
            and self.indication_due is not None
            and self.indication_due < timezone.localdate()
        )

    @cached_property
    def facts(self) -> FineFacts:
        """The infraction's facts its payload carries (`fleet.webhooks.facts`)."""
        return fine_facts(self.payload)

    @property
    def occurred_at_text(self) -> str:
        """`occurredAt` as sent (a text that may not be a time)."""
        return payload_text(self.payload, "occurredAt")

    @property
    def amount_text(self) -> str:
        """`amount` as sent (a text that may not be a number)."""
        return payload_text(self.payload, "amount")


class Notification(WebhookRecord):
    """A notification (a `notification` event); `heading`, its title among the `Wording`s,
    for the list's search."""

    heading = _wording_field(_("title"))

    class Meta:
        verbose_name = _("notification")
        verbose_name_plural = _("notifications")
        ordering = ["treated", "-updated_at", "-id"]
        indexes = [
            models.Index(
                fields=["treated", "-updated_at", "registration"],
                include=["id"],
                name="fleet_notification_list_ids",
            ),
            _registration_index("fleet_notification_plate"),
            models.Index(
                fields=["heading", "treated", "-updated_at"], name="fleet_notification_heading"
            ),
        ]

    def get_absolute_url(self) -> str:
        return reverse("fleet:notification", args=[self.pk])

    @property
    def title(self) -> str:
        return payload_text(self.payload, "title")

    @property
    def message(self) -> str:
        return payload_text(self.payload, "message")


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
