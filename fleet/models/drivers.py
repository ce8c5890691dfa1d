"""The names of the fleet's drivers, which the vehicle list gives only as ids, and the
words of those names, which the driver pickers search."""

from __future__ import annotations

from django.db import models
from django.urls import reverse
from django.utils.translation import gettext_lazy as _

# A name's words are kept up to this many characters: what anyone types to find it.
WORD_LENGTH = 40


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


class DriverWord(models.Model):
    """One word of a driver's name, without accents and in lower case
    (`fleet.services.drivers.name_words`): a picker finds "Ana Souza" from "sou" by a
    range of this index, whatever the number of drivers. Written with the name, by
    `fleet.services.drivers.driver_words_write` alone."""

    driver = models.ForeignKey(
        Driver, on_delete=models.CASCADE, related_name="words", db_index=False
    )
    word = models.CharField(_("word"), max_length=WORD_LENGTH)

    class Meta:
        verbose_name = _("word of a driver's name")
        verbose_name_plural = _("words of drivers' names")
        constraints = [
            models.UniqueConstraint(fields=["driver", "word"], name="fleet_driver_word_unique")
        ]
        indexes = [models.Index(fields=["word", "driver"], name="fleet_driver_word")]

    def __str__(self) -> str:
        return self.word
