"""A fine as work with a deadline: whether its driver is to be indicated to the traffic
authority (CTB art. 257 §7), by when, and by when its slip is due; how each is known;
and every change a person makes to them (`FineIndicationChange`). The values themselves
are the fine's columns (`Fine.indication`, `Fine.indication_due`, `Fine.payment_due`),
set from its payload by `fleet.webhooks.deadlines`, changed by `fleet.services.indications`.
"""

from __future__ import annotations

from datetime import date
from typing import Final

from django.conf import settings
from django.db import models
from django.utils.formats import date_format
from django.utils.translation import gettext_lazy as _

from fleet.schema import ConditionLedIndex


class DeadlineBasis(models.TextChoices):
    """How a deadline is known: a fact the platform sent, a fact a person typed from the
    paper notice, or the portal's estimate (the notice's date, else the fine's receipt,
    plus `FLEET_INDICATION_DAYS`)."""

    SENT = "sent", _("sent by the platform")
    TYPED = "typed", _("typed from the notice")
    ESTIMATED = "estimated", _("estimated: check the notice")


class Indication(models.TextChoices):
    """Where a fine's driver indication stands."""

    NEEDED = "needed", _("to indicate")
    NOT_NEEDED = "not_needed", _("no indication needed")
    INDICATED = "indicated", _("indicated, awaiting the authority")
    ACCEPTED = "accepted", _("indication accepted")
    # A refused indication puts the fine back to NEEDED, its record kept
    # (`DriverIndication`).


# "Missed" is not stored: it is what the clock says of a fine still NEEDED whose
# deadline has passed (`Fine.indication_missed`; the NIC, twice the fine, is to be
# expected). It may still be indicated, late, and a later deadline (typed from the
# notice, or sent) ends it with no other write. Kept as one comparison on the column
# (`indication = 'needed'`), the queue's partial index serves SQLite too, which cannot
# prove that a list of bound values implies an index's `IN (...)`. The value and its
# label name that state where a state is shown or sent (the alerts' `state`; changes
# recorded before it was derived, migration 0034).
MISSED: Final = "missed"
MISSED_LABEL: Final = _("deadline missed: expect the NIC")


def to_indicate_indexes() -> list[ConditionLedIndex]:
    """The partial indexes of the fines still to indicate (`Fine.Meta.indexes`): by
    deadline (the queue and its pages, the daily reminders; the missed first, "missed"
    being a deadline passed), and by vehicle or by driver, then deadline. One comparison
    per column in the condition, which SQLite matches with bound values (never a list,
    `IN (?, ?)`), and led by those columns on SQLite (`ConditionLedIndex`: why)."""
    return [
        ConditionLedIndex(
            fields=[*columns, "indication_due", "id"],
            condition=models.Q(indication=Indication.NEEDED, treated=False),
            leading=["indication", "treated"],
            name=name,
        )
        for name, columns in (
            ("fleet_fine_to_indicate", []),
            ("fleet_fine_to_indicate_plate", ["registration"]),
            ("fleet_fine_to_indicate_driver", ["driver_id"]),
        )
    ]


class NeedBasis(models.TextChoices):
    """How the portal knows whether a fine needs an indication: the platform's flag
    (`indicationRequired`), a person's choice (with a reason), or the safe default for an
    infraction nobody said anything about: it needs one."""

    SENT = "sent", _("sent by the platform")
    TYPED = "typed", _("set by a person")
    ASSUMED = "assumed", _("assumed: nothing said it is not needed")


class IndicationField(models.TextChoices):
    """What a `FineIndicationChange` changed."""

    INDICATION_DUE = "indication_due", _("indication deadline")
    PAYMENT_DUE = "payment_due", _("payment due date")
    INDICATION = "indication", _("indication")


class FineIndicationChange(models.Model):
    """A person changed a fine's deadline or whether it needs an indication: who, when,
    from what to what, and from what they know it (the paper notice, a reason)."""

    fine = models.ForeignKey(
        "fleet.Fine", on_delete=models.CASCADE, related_name="indication_changes"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    user_name = models.CharField(_("by"), max_length=300)
    at = models.DateTimeField(_("at"), auto_now_add=True)
    field = models.CharField(_("changed"), max_length=20, choices=IndicationField.choices)
    before = models.CharField(_("before"), max_length=40, blank=True)
    before_basis = models.CharField(_("known before as"), max_length=10, blank=True)
    after = models.CharField(_("after"), max_length=40, blank=True)
    reason = models.TextField(_("from what, or why"))

    class Meta:
        verbose_name = _("change of a fine's indication or deadline")
        verbose_name_plural = _("changes of fines' indications and deadlines")
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.fine_id} {self.field}: {self.before or '—'} → {self.after or '—'}"

    @property
    def before_shown(self) -> str:
        return self._shown(self.before)

    @property
    def after_shown(self) -> str:
        return self._shown(self.after)

    @property
    def before_basis_shown(self) -> str:
        """How the value before was known, in the reader's language."""
        choices = NeedBasis if self.field == IndicationField.INDICATION else DeadlineBasis
        known = {value: str(label) for value, label in choices.choices}
        return known.get(self.before_basis, self.before_basis)

    def _shown(self, value: str) -> str:
        """A value as the page shows it: a day in the reader's format, a state's name."""
        if not value:
            return ""
        if self.field == IndicationField.INDICATION:
            return str(
                dict(Indication.choices).get(value, MISSED_LABEL if value == MISSED else value)
            )
        try:
            return date_format(date.fromisoformat(value), "SHORT_DATE_FORMAT")
        except ValueError:
            return value


class IndicationChannel(models.TextChoices):
    """How a driver was indicated to the traffic authority."""

    PLATFORM = "platform", _("through the fleet platform")
    POST = "post", _("by post (the notice's form)")
    AUTHORITY = "authority", _("on the authority's site or SNE")


class IndicationOutcome(models.TextChoices):
    ACCEPTED = "accepted", _("accepted")
    REFUSED = "refused", _("refused")


class DriverIndication(models.Model):
    """A fine's driver indicated to the traffic authority: who was named, how, on which
    day, by whom; then what the authority answered (accepted, or refused with its
    reason: the fine is to indicate again)."""

    fine = models.ForeignKey("fleet.Fine", on_delete=models.CASCADE, related_name="indications")
    driver_id = models.PositiveBigIntegerField(_("driver id"))
    driver_name = models.CharField(_("driver"), max_length=300, blank=True)
    channel = models.CharField(_("how"), max_length=10, choices=IndicationChannel.choices)
    indicated_on = models.DateField(_("indicated on"))
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    user_name = models.CharField(_("by"), max_length=300)
    at = models.DateTimeField(_("recorded at"), auto_now_add=True)
    outcome = models.CharField(
        _("answer"), max_length=10, choices=IndicationOutcome.choices, blank=True
    )
    outcome_reason = models.TextField(_("the authority's reason"), blank=True)
    outcome_by = models.CharField(_("answer recorded by"), max_length=300, blank=True)
    outcome_at = models.DateTimeField(_("answer recorded at"), null=True, blank=True)

    class Meta:
        verbose_name = _("driver indication")
        verbose_name_plural = _("driver indications")
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.fine_id}: {self.driver_id} ({self.channel}, {self.indicated_on})"


class ReceiptType(models.TextChoices):
    """What a receipt's content is, as its first bytes and its parser say (never its name
    nor the type the browser declared)."""

    PDF = "application/pdf", "PDF"
    PNG = "image/png", "PNG"
    JPEG = "image/jpeg", "JPEG"


class IndicationReceipt(models.Model):
    """The proof an indication was sent (a post office receipt, the authority site's
    confirmation), kept in the database with its indication: the portal runs on several
    hosts with no shared disk and no media storage configured, and a receipt is small
    (`FLEET_INDICATION_RECEIPT_MAX_BYTES`), so the row holds the file itself. Served only
    through the fine's page, to those who see the fine."""

    indication = models.OneToOneField(
        DriverIndication, on_delete=models.CASCADE, related_name="receipt"
    )
    name = models.CharField(_("file name"), max_length=120)
    content_type = models.CharField(_("type"), max_length=40, choices=ReceiptType.choices)
    size = models.PositiveIntegerField(_("size in bytes"))
    sha256 = models.CharField(_("SHA-256"), max_length=64)
    content = models.BinaryField(_("content"))
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    uploaded_at = models.DateTimeField(_("uploaded at"), auto_now_add=True)

    class Meta:
        verbose_name = _("indication receipt")
        verbose_name_plural = _("indication receipts")

    def __str__(self) -> str:
        return f"{self.name} ({self.kind}, {self.size} B)"

    @property
    def kind(self) -> str:
        """The file's type in a word: PDF, PNG or JPEG."""
        return str(ReceiptType(self.content_type).label)
