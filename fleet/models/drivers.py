"""The names of the fleet's drivers, which the vehicle list gives only as ids, their CPFs
and licences where the portal knows them, and the words of those names, which the
driver pickers search."""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.urls import reverse
from django.utils.translation import gettext_lazy as _

# A name's words are kept up to this many characters: what anyone types to find it.
WORD_LENGTH = 40


class Driver(models.Model):
    """A name for a driver id of the fleet's vehicle list (`driver_id`), where the portal
    knows one: the list names none, so an administrator types it in the admin.

    A driver may hold a CPF (personal data), typed by an administrator or a user with
    `fleet.change_driver_cpf`: kept encrypted, with a keyed digest by which a CNH
    lookup of that CPF finds the driver (`fleet.services.driver_licences`). `licence` is
    the newest such lookup's answer, `licence_checked_at` when it came.
    """

    driver_id = models.PositiveBigIntegerField(_("driver id"), unique=True)
    name = models.CharField(_("driver's name"), max_length=150)
    # Null without a CPF: a column SQLite adds to a million rows without copying the table
    # (one NOT NULL, or with a default, makes Django's SQLite backend rebuild it).
    cpf_encrypted = models.TextField(  # noqa: DJ001
        _("CPF (encrypted)"), null=True, blank=True, editable=False
    )
    cpf_digest = models.CharField(  # noqa: DJ001
        _("CPF's digest"), max_length=64, null=True, blank=True, editable=False
    )
    # No constraint: a lookup past its retention is deleted, and the driver's licence with it.
    licence = models.ForeignKey(
        "fleet.CnhLookupItem",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        editable=False,
        related_name="+",
        db_constraint=False,
        db_index=False,
        verbose_name=_("latest licence lookup"),
    )
    licence_checked_at = models.DateTimeField(
        _("licence last looked up"), null=True, blank=True, editable=False
    )

    class Meta:
        verbose_name = _("driver")
        verbose_name_plural = _("drivers")
        ordering = ["name", "driver_id"]
        permissions = [("change_driver_cpf", _("Can enter a driver's CPF"))]
        indexes = [
            # A lookup's CPFs find their drivers; the licences' batch walks these drivers.
            models.Index(
                fields=["cpf_digest"],
                condition=Q(cpf_digest__isnull=False),
                name="fleet_driver_cpf",
            ),
            models.Index(
                fields=["id"], condition=Q(cpf_digest__isnull=False), name="fleet_driver_with_cpf"
            ),
            # A lookup purged clears the licence of its drivers.
            models.Index(fields=["licence"], name="fleet_driver_licence"),
        ]

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
