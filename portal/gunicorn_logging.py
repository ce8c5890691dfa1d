"""gunicorn's logger for the portal: its lines carry no secret, and the request id.

The webhook token travels in the path (`/webhooks/fleet/<token>/`), and gunicorn
writes paths where the portal's LOGGING does not reach: its access log, and
error lines such as "Invalid request from ip=…: Invalid HTTP request line: '…'".
`RedactingLogger` puts the portal's `RedactingFilter` on gunicorn's two
loggers, so that whatever access-log format, file, syslog or logging
configuration a deployment chooses, the token (right or wrong: a wrong one may
be a token just rotated out) and anything else credential-shaped is written as
`[REDACTED]`. `deploy/gunicorn.conf.py` names it as `logger_class`.

Each record also gets its `request_id` (`portal.lib.request_ids`): an access line
is written once the request is over, so it takes the id from the response's
`X-Request-Id`. With `LOG_FORMAT=json` (the portal's setting) gunicorn's own
handlers write one JSON object per line, as the portal's do.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

from gunicorn.glogging import Logger

from portal.json_logging import JsonFormatter
from portal.lib import request_ids
from portal.lib.redaction import RedactingFilter


class AccessRequestIdFilter(request_ids.RequestIdFilter):
    """The request id of an access line: the `X-Request-Id` the portal answered with."""

    def filter(self, record: logging.LogRecord) -> bool:
        atoms = record.args if isinstance(record.args, Mapping) else {}
        answered = atoms.get("{x-request-id}o")
        record.request_id = answered if request_ids.is_sane(answered) else request_ids.NONE
        return True


class RedactingLogger(Logger):
    """gunicorn's logger, with every record of its error and access logs scrubbed and
    given its request id; in JSON with `LOG_FORMAT=json`."""

    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        # On the loggers rather than their handlers: a logger's filters see each record
        # before any handler does, its own or those it propagates to. setup() runs
        # again on every reload (SIGHUP), on the same loggers. The id first: the
        # redaction may replace an access line's atoms by the finished message.
        for log, stamp in (
            (self.error_log, request_ids.RequestIdFilter),
            (self.access_log, AccessRequestIdFilter),
        ):
            log.filters = [
                found
                for found in log.filters
                if not isinstance(found, RedactingFilter | request_ids.RequestIdFilter)
            ]
            log.addFilter(stamp())
            log.addFilter(RedactingFilter())
        if _log_format() == "json":
            for log in (self.error_log, self.access_log):
                for handler in log.handlers:
                    if getattr(handler, "_gunicorn", False):
                        handler.setFormatter(JsonFormatter())


def _log_format() -> str:
    """The portal's LOG_FORMAT setting (read from the environment by its settings)."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    from django.conf import settings

    return str(settings.LOG_FORMAT)
