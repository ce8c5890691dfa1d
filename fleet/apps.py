from __future__ import annotations

from django.apps import AppConfig
from django.core.signals import request_finished, request_started
from django.utils.translation import gettext_lazy as _


class FleetConfig(AppConfig):
    name = "fleet"
    verbose_name = _("Fleet")

    def ready(self) -> None:
        from fleet import afterwards
        from fleet.api.redaction import protect_library_loggers

        # requests and urllib3 carry more than the Fleet API's calls (an identity
        # provider's, through allauth): their records are scrubbed from the start.
        protect_library_loggers()

        request_started.connect(afterwards.request_started, dispatch_uid="fleet.afterwards")
        request_finished.connect(afterwards.request_finished, dispatch_uid="fleet.afterwards")
