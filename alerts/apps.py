"""The alerts app: it listens to the fines and notifications the webhook processing writes."""

from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AlertsConfig(AppConfig):
    name = "alerts"
    verbose_name = _("Alerts")

    def ready(self) -> None:
        # The outbox rows are written in the transaction that writes the records.
        from alerts.services.outbox import alerts_create_for_changes
        from fleet.webhooks.changes import records_changed

        records_changed.connect(alerts_create_for_changes, dispatch_uid="alerts.outbox")
