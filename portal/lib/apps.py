"""The platform's wiring, at start-up: what every app relies on and none of them owns.

The third-party loggers' records scrubbed (`redaction`), each task the worker runs
counted (`metrics.exposition`), a database part-way through squashed migrations told
before `migrate` runs (`squashed_migrations`), and the work a request leaves for after
its response run once it is sent (`after_response`).
"""

from __future__ import annotations

from django.apps import AppConfig
from django.core.signals import request_finished, request_started
from django.utils.translation import gettext_lazy as _


class PlatformConfig(AppConfig):
    name = "portal.lib"
    label = "platform"
    verbose_name = _("Platform")

    def ready(self) -> None:
        from django.tasks.signals import task_finished

        from portal.lib import after_response, squashed_migrations  # noqa: F401 - registers
        from portal.lib.metrics.exposition import task_finished_count
        from portal.lib.redaction import protect_library_loggers

        # requests and urllib3 carry more than the Fleet API's calls (an identity
        # provider's, through allauth): their records are scrubbed from the start.
        protect_library_loggers()
        task_finished.connect(task_finished_count, dispatch_uid="portal.lib.metrics")
        uid = "portal.lib.after_response"
        request_started.connect(after_response.request_started, dispatch_uid=uid)
        request_finished.connect(after_response.request_finished, dispatch_uid=uid)
