"""The alerts app: it listens to the fines and notifications the webhook processing writes,
and to sign-in's word (`portal.lib.identity`) on whose access ended or began again."""

from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AlertsConfig(AppConfig):
    name = "alerts"
    verbose_name = _("Alerts")

    def ready(self) -> None:
        # The outbox rows are written in the transaction that writes the records.
        from alerts.services.outbox import alerts_create_for_changes
        from alerts.services.pauses import (
            alerts_pause_on_access_end,
            alerts_pause_on_refusal,
            alerts_resume_on_restore,
            alerts_resume_on_sign_in,
        )
        from fleet.webhooks.changes import records_changed
        from portal.lib.identity import (
            access_ended,
            access_granted,
            access_refused,
            access_restored,
        )

        records_changed.connect(alerts_create_for_changes, dispatch_uid="alerts.outbox")
        # Alerts stop when access ends, and start again at the next sign-in.
        access_refused.connect(alerts_pause_on_refusal, dispatch_uid="alerts.pause")
        access_granted.connect(alerts_resume_on_sign_in, dispatch_uid="alerts.resume")
        # Blocked by an administrator, or deprovisioned: until the block is lifted, or
        # the next sign-in.
        access_ended.connect(alerts_pause_on_access_end, dispatch_uid="alerts.pause.ended")
        access_restored.connect(alerts_resume_on_restore, dispatch_uid="alerts.resume.restored")
