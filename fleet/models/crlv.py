"""The vehicle each e-CRLV request was seen for: the API's request status need not name
its plate (spec 2.4), and a manager who sees only part of the fleet may follow only the
requests of their vehicles (`fleet.services.crlv`)."""

from __future__ import annotations

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


class CrlvRequestVehicle(models.Model):
    request_id = models.CharField(_("request id"), max_length=200, unique=True)
    registration = models.CharField(_("plate (Mercosul format)"), max_length=7, db_index=True)
    seen_at = models.DateTimeField(_("last seen"), default=timezone.now)

    class Meta:
        verbose_name = _("vehicle of an e-CRLV request")
        verbose_name_plural = _("vehicles of e-CRLV requests")

    def __str__(self) -> str:
        return f"{self.request_id} · {self.registration}"
