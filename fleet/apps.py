from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class FleetConfig(AppConfig):
    name = "fleet"
    verbose_name = _("Fleet")

    def ready(self) -> None:
        from django.conf import settings

        from fleet import signals
        from fleet.admin.scoping import ADMIN_LIMITS
        from fleet.services.gauges import FleetState
        from portal.lib.admin_limits import admin_limits_set
        from portal.lib.metrics.exposition import state_collector_add
        from portal.lib.redaction import register_secret

        signals.connect()  # who sees what: fleet.services.scopes
        # Which staff are limited to their groups, in sign-in's admin too.
        admin_limits_set(ADMIN_LIMITS)
        # The API credentials are scrubbed from every log line from the start, not only
        # once a Fleet API client has been made (which registers them too).
        register_secret(settings.FLEET_ACCESS_TOKEN, settings.FLEET_SECRET_KEY)
        state_collector_add("fleet", FleetState())
