"""Who had each vehicle, as the refreshes of the vehicle list saw it, and who set a fine's
driver by hand.

The vehicle list gives each vehicle's driver *now* (spec 4.1); every refresh is an
observation. `DriverObservation` is one refresh taken into the history; `DriverSpan` is
one vehicle with one driver, from the refresh that first saw them together to the last
that did, and the refresh that first saw the next driver: only changes are written, so a
refresh where nothing changed writes one observation row. Written by
`fleet.services.driver_history` alone. `FineDriverCorrection` audits a person's choice
of a fine's driver (`fleet.services.attribution.fine_driver_correct`).
"""

from __future__ import annotations

from typing import Final

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from fleet.webhooks.payloads import REGISTRATION_LENGTH


class DriverBasis(models.TextChoices):
    """How a fine's driver is known (`Fine.driver_basis`). Every writer says which: only a
    fine not attributed yet is `PENDING` (and has no driver)."""

    PENDING = "", _("not attributed yet")
    HISTORY = "history", _("had the vehicle then")
    UNCERTAIN = "uncertain", _("changed hands around then")
    LIST = "list", _("the vehicle list's driver when the fine arrived")
    MANUAL = "manual", _("set by a person")


# How a driver is known, as every surface that names one marks it: a short mark, and
# what it means (on hover, in the CSV's column, in an alert).
BASIS_MARKS: Final = {
    DriverBasis.HISTORY: (
        _("had the vehicle"),
        _(
            "A fact: the vehicle list's refreshes saw this driver with the vehicle before "
            "and after the fine was committed."
        ),
    ),
    DriverBasis.MANUAL: (
        _("set by a person"),
        _("A person chose this driver, with a reason: the fine's page says who, when and why."),
    ),
    DriverBasis.LIST: (
        _("probable"),
        _(
            "A guess: the vehicle list's driver when the fine arrived (the fine is older than "
            "the history, or the vehicle left the list). Check who was driving before "
            "indicating."
        ),
    ),
    DriverBasis.UNCERTAIN: (
        _("uncertain"),
        _(
            "The vehicle changed hands around when the fine was committed: it was one of two "
            "drivers. Choose which on the fine's page."
        ),
    ),
}


class DriverObservation(models.Model):
    """One refresh of the vehicle list taken into the history.

    `seq` follows the previous observation's by one and is unique: two processes that
    took in the same refresh after the same observation cannot both write theirs (the
    second's transaction fails whole, its spans with it)."""

    seq = models.PositiveBigIntegerField(_("number"), unique=True)
    at = models.DateTimeField(_("fetched at"))
    version = models.CharField(_("vehicle list version"), max_length=64)
    vehicles = models.PositiveIntegerField(_("vehicles"))
    opened = models.PositiveIntegerField(_("spans opened"))
    closed = models.PositiveIntegerField(_("spans closed"))
    took_ms = models.PositiveIntegerField(_("took (ms)"))

    class Meta:
        verbose_name = _("vehicle list observation")
        verbose_name_plural = _("vehicle list observations")
        ordering = ["-seq"]
        indexes = [models.Index(fields=["at"], name="fleet_observation_at")]

    def __str__(self) -> str:
        return f"#{self.seq} {self.at:%Y-%m-%d %H:%M:%S}"


class DriverSpan(models.Model):
    """Vehicle `registration` (`fleet.plates.registration`) had driver `driver_id` (None:
    none) from `first_seen` to `last_seen`, both refreshes that saw it; `next_seen` is the
    refresh that first saw it otherwise (or without the vehicle). An open period
    (`next_seen` null) still holds at the latest observation; its `last_seen` is null, as
    it would be written at every refresh otherwise.

    A period that follows another of the vehicle holds that one's driver and its last
    sight (`previous_driver_id`, `previous_seen`): the hand-over is somewhere between
    `previous_seen` and `first_seen`, and both candidates are on this row. Written when
    the period is opened (a row among thousands inserted at once), so that ending a
    period writes the same two moments to all those a refresh ends (one UPDATE for a
    thousand). One open period per vehicle, and one per vehicle and first sight, by
    constraint."""

    registration = models.CharField(_("plate"), max_length=REGISTRATION_LENGTH)
    driver_id = models.PositiveBigIntegerField(_("driver id"), null=True, blank=True)
    first_seen = models.DateTimeField(_("first seen"))
    last_seen = models.DateTimeField(_("last seen"), null=True, blank=True)
    next_seen = models.DateTimeField(_("next driver first seen"), null=True, blank=True)
    previous_driver_id = models.PositiveBigIntegerField(
        _("previous driver id"), null=True, blank=True
    )
    previous_seen = models.DateTimeField(_("previous driver last seen"), null=True, blank=True)

    class Meta:
        verbose_name = _("period with a driver")
        verbose_name_plural = _("periods with a driver")
        ordering = ["registration", "-first_seen"]
        constraints = [
            models.UniqueConstraint(
                fields=["registration"],
                condition=models.Q(next_seen__isnull=True),
                name="fleet_span_one_open",
            ),
            models.UniqueConstraint(
                fields=["registration", "first_seen"], name="fleet_span_vehicle"
            ),
        ]
        indexes = [
            models.Index(
                fields=["driver_id", "first_seen"],
                condition=models.Q(driver_id__isnull=False),
                name="fleet_span_driver",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.registration}: {self.driver_id} from {self.first_seen:%Y-%m-%d %H:%M}"


class FineDriverCorrection(models.Model):
    """A person set a fine's driver: who, when, from what to what, and why. The fine's
    driver is theirs from then on (`DriverBasis.MANUAL`); no observation overrides it."""

    fine = models.ForeignKey(
        "fleet.Fine", on_delete=models.CASCADE, related_name="driver_corrections"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    user_name = models.CharField(_("by"), max_length=300)
    at = models.DateTimeField(_("at"), auto_now_add=True)
    from_driver_id = models.PositiveBigIntegerField(_("from driver id"), null=True, blank=True)
    from_basis = models.CharField(
        _("from basis"), max_length=10, choices=DriverBasis.choices, blank=True
    )
    to_driver_id = models.PositiveBigIntegerField(_("to driver id"))
    reason = models.TextField(_("reason"))

    class Meta:
        verbose_name = _("correction of a fine's driver")
        verbose_name_plural = _("corrections of fines' drivers")
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.fine_id}: {self.from_driver_id} → {self.to_driver_id}"
