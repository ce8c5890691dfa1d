"""The dashboard's running sums of fines, the whole fleet's and each vehicle group's
(`fleet.services.tallies` keeps them)."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

from fleet.models.groups import VehicleGroup


class TallyDimension(models.TextChoices):
    UNTREATED = "untreated", _("untreated fines")
    MONTH = "month", _("fines by month committed")
    VEHICLE = "vehicle", _("untreated fines by vehicle")
    DRIVER = "driver", _("untreated fines by driver, where established")
    # The untreated fines whose driver is a guess, by how (`DriverBasis.LIST`, or
    # `UNCERTAIN`): left out of DRIVER, which counts the drivers established.
    GUESSED = "driver_guess", _("untreated fines whose driver is a guess")
    DAY = "day", _("fines by day received")
    WITHOUT_DOCUMENT = "no_document", _("fines without their document")
    TO_INDICATE = "to_indicate", _("untreated fines to indicate by deadline")
    # Its one row counts the transactions that changed the others: the figures' version.
    VERSION = "version", _("changes of the tallies")


class Tally(models.Model):
    """How many fines one figure of the dashboard counts, and their R$ in cents.

    One row per dimension and key: "" for a total, the month committed (`2026-11`) or
    the day received (`2026-11-25`) in local time, the vehicle's registration, the
    driver id (zero-padded, so that keys sort as the ids do), the day by which a fine's
    driver is to be indicated (`2026-12-31`). Written in the
    transaction that writes the fines it counts, only by adding to it; a row may
    come down to zero and stay.
    """

    dimension = models.CharField(_("dimension"), max_length=12, choices=TallyDimension.choices)
    key = models.CharField(_("key"), max_length=20, blank=True)
    count = models.BigIntegerField(_("fines"), default=0)
    # In cents, whole: sums that stay exact however many times they are added to.
    cents = models.BigIntegerField(_("amount (R$ cents)"), default=0)

    class Meta:
        abstract = True


class FineTally(Tally):
    """A `Tally` of the whole fleet's fines."""

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


class GroupTally(Tally):
    """What a `FineTally` counts, of the fines of one vehicle group's vehicles only: a
    region's dashboard reads a few rows, not its millions of fines. Written with the
    fleet's, in the same transaction, by adding to it; counted again from the fines
    when the group's plates change (`VehicleGroup.tallied_revision`)."""

    # No constraint in the database: a writer may add to a group deleted meanwhile (its
    # rows are deleted with it, those of such a race left unread).
    group = models.ForeignKey(
        VehicleGroup,
        on_delete=models.CASCADE,
        db_constraint=False,
        db_index=False,  # the key's constraint begins with it
        related_name="tallies",
        verbose_name=_("group"),
    )

    class Meta:
        verbose_name = _("vehicle group's fine tally")
        verbose_name_plural = _("vehicle groups' fine tallies")
        constraints = [
            models.UniqueConstraint(
                fields=["group", "dimension", "key"], name="fleet_group_tally_key"
            ),
        ]
        indexes = [
            models.Index(
                fields=["group", "dimension", "-cents", "-count", "key"],
                name="fleet_group_tally_amount",
            ),
            models.Index(
                fields=["group", "dimension", "-count", "key"], name="fleet_group_tally_count"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.group_id} {self.dimension} {self.key}: {self.count}"
