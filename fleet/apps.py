from __future__ import annotations

from django.apps import AppConfig
from django.core.signals import request_finished, request_started
from django.utils.translation import gettext_lazy as _


class FleetConfig(AppConfig):
    name = "fleet"
    verbose_name = _("Fleet")

    def ready(self) -> None:
        from django.conf import settings

        from fleet import after_response, signals
        from fleet.api.redaction import protect_library_loggers, register_secret

        signals.connect()  # who sees what: fleet.services.scopes

        # requests and urllib3 carry more than the Fleet API's calls (an identity
        # provider's, through allauth): their records are scrubbed from the start.
        protect_library_loggers()
        # The API credentials are scrubbed from every log line from the start, not only
        # once a Fleet API client has been made (which registers them too).
        register_secret(settings.FLEET_ACCESS_TOKEN, settings.FLEET_SECRET_KEY)

        from django.tasks.signals import task_finished

        from fleet.services.metrics import task_finished_count

        task_finished.connect(task_finished_count, dispatch_uid="fleet.metrics")

        uid = "fleet.after_response"
        request_started.connect(after_response.request_started, dispatch_uid=uid)
        request_finished.connect(after_response.request_finished, dispatch_uid=uid)
