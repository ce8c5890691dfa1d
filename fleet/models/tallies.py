"""The dashboard's running sums of fines (`fleet.services.tallies` keeps them)."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _


class TallyDimension(models.TextChoices):
    UNTREATED = "untreated", _("untreated fines")
    MONTH = "month", _("fines by month committed")
    VEHICLE = "vehicle", _("untreated fines by vehicle")
    DRIVER = "driver", _("untreated fines by driver")
    DAY = "day", _("fines by day received")
    WITHOUT_DOCUMENT = "no_document", _("fines without their document")
    # Its one row counts the transactions that changed the others: the figures' version.
    VERSION = "version", _("changes of the tallies")


class FineTally(models.Model):
    """How many fines one figure of the dashboard counts, and their R$ in cents.

    One row per dimension and key: "" for a total, the month committed (`2026-11`) or
    the day received (`2026-11-25`) in local time, the vehicle's registration, the
    driver id (zero-padded, so that keys sort as the ids do). Written in the
    transaction that writes the fines it counts, only by adding to it; a row may
    come down to zero and stay.
    """

    dimension = models.CharField(_("dimension"), max_length=12, choices=TallyDimension.choices)
    key = models.CharField(_("key"), max_length=20, blank=True)
    count = models.BigIntegerField(_("fines"), default=0)
    # In cents, whole: sums that stay exact however many times they are added to.
    cents = models.BigIntegerField(_("amount (R$ cents)"), default=0)

    class Meta:
        verbose_name = _("fine tally")
        verbose_name_plural = _("fine tallies")
        constraints = [
            models.UniqueConstraint(fields=["dimension", "key"], name="fleet_fine_tally_key"),
        ]
        indexes = [
            # The first vehicles and drivers by R$, and by count, read from an index's end.
            models.Index(
                fields=["dimension", "-cents", "-count", "key"], name="fleet_tally_amount"
            ),
            models.Index(fields=["dimension", "-count", "key"], name="fleet_tally_count"),
        ]

    def __str__(self) -> str:
        return f"{self.dimension} {self.key}: {self.count}"
