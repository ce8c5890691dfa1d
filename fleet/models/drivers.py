"""The names of the fleet's drivers, which the vehicle list gives only as ids."""

from __future__ import annotations

from django.db import models
from django.urls import reverse
from django.utils.translation import gettext_lazy as _


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
