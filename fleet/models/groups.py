"""Vehicle groups: the part of the fleet a manager sees (`fleet.services.scopes`).

A group is a name and a set of vehicles, each kept by its registration (the plate in
the Mercosul format, `plates.registration`), so that a vehicle is matched under its old
and its Mercosul plate. A user sees the union of their groups; the `view_whole_fleet`
permission sees everything, vehicles in no group too. A user is in a group by hand (in
the admin, or `manage.py vehicle_groups grant`) or because an identity provider's groups
claim holds a value mapped to it (`DirectoryGroup`), applied again at every sign-in.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from fleet import plates

WHOLE_FLEET_PERMISSION = "fleet.view_whole_fleet"


class VehicleGroup(models.Model):
    name = models.CharField(_("name"), max_length=100, unique=True)
    description = models.CharField(_("description"), max_length=300, blank=True)
    # Counts the changes of its plates: part of the cache keys of what its members see.
    revision = models.PositiveIntegerField(_("revision"), default=0, editable=False)
    # The revision its own tallies (`GroupTally`) were counted at; None: not yet. Its
    # dashboard reads them only while they are of its revision (`fleet.services.tallies`).
    tallied_revision = models.PositiveIntegerField(
        _("figures counted at revision"), null=True, blank=True, editable=False
    )
    created_at = models.DateTimeField(_("created"), auto_now_add=True)

    class Meta:
        verbose_name = _("vehicle group")
        verbose_name_plural = _("vehicle groups")
        ordering = ["name"]
        permissions = [("view_whole_fleet", _("Can see the whole fleet, vehicles in no group too"))]

    def __str__(self) -> str:
        return self.name


class VehicleGroupPlate(models.Model):
    """One vehicle of a group, by its registration."""

    group = models.ForeignKey(
        VehicleGroup, on_delete=models.CASCADE, related_name="plates", verbose_name=_("group")
    )
    registration = models.CharField(_("plate (Mercosul format)"), max_length=7)

    class Meta:
        verbose_name = _("vehicle of a group")
        verbose_name_plural = _("vehicles of a group")
        constraints = [
            models.UniqueConstraint(
                fields=["group", "registration"], name="fleet_vehicle_group_plate"
            ),
        ]
        indexes = [models.Index(fields=["registration", "group"], name="fleet_group_plate_reg")]

    def __str__(self) -> str:
        return self.plate_display

    @property
    def plate_display(self) -> str:
        """Both plates of a vehicle that had an old one: `ABC1C34 (ABC-1234)`."""
        old = plates.old_plate(self.registration)
        return f"{self.registration} ({plates.display(old)})" if old else self.registration


class VehicleGroupMember(models.Model):
    """A user in a group: by hand (`provider` empty) or by an identity provider's groups."""

    group = models.ForeignKey(
        VehicleGroup, on_delete=models.CASCADE, related_name="members", verbose_name=_("group")
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="vehicle_group_memberships",
        verbose_name=_("user"),
    )
    provider = models.CharField(
        _("given by"),
        max_length=200,
        blank=True,
        help_text=_(
            "Empty: given by hand, kept until removed by hand. Otherwise the identity "
            "provider whose groups give it, applied again at every sign-in."
        ),
    )
    granted_at = models.DateTimeField(_("given"), auto_now_add=True)

    class Meta:
        verbose_name = _("member of a vehicle group")
        verbose_name_plural = _("members of vehicle groups")
        constraints = [
            models.UniqueConstraint(
                fields=["user", "group", "provider"], name="fleet_vehicle_group_member"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} · {self.group}"


class DirectoryGroup(models.Model):
    """A value of an identity provider's groups claim that puts its holders in a group."""

    provider = models.CharField(_("identity provider"), max_length=200)
    value = models.CharField(_("value of the groups claim"), max_length=255)
    group = models.ForeignKey(
        VehicleGroup,
        on_delete=models.CASCADE,
        related_name="directory_groups",
        verbose_name=_("vehicle group"),
    )

    class Meta:
        verbose_name = _("group of an identity provider")
        verbose_name_plural = _("groups of identity providers")
        ordering = ["provider", "value"]
        constraints = [
            models.UniqueConstraint(
                fields=["provider", "value", "group"], name="fleet_directory_group"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.provider}: {self.value} → {self.group}"


class ScopeVersion(models.Model):
    """One row counting the changes of who sees what (permissions, groups of users,
    vehicle groups and their members): each process keeps the scopes it read under it
    (`fleet.services.scopes`)."""

    value = models.BigIntegerField(_("changes"), default=0)

    class Meta:
        verbose_name = _("version of the vehicle scopes")
        verbose_name_plural = _("versions of the vehicle scopes")

    def __str__(self) -> str:
        return str(self.value)
