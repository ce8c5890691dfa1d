"""A user's saved views of the fines list."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils.translation import gettext_lazy as _


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
