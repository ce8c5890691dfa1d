"""gunicorn's logger for the portal: its access and error lines carry no secret.

The webhook token travels in the path (`/webhooks/fleet/<token>/`), and gunicorn
writes paths where the portal's LOGGING does not reach: its access log, and
error lines such as "Invalid request from ip=…: Invalid HTTP request line: '…'".
`RedactingLogger` puts the portal's `RedactingFilter` on gunicorn's two
loggers, so that whatever access-log format, file, syslog or logging
configuration a deployment chooses, the token (right or wrong: a wrong one may
be a token just rotated out) and anything else credential-shaped is written as
`[REDACTED]`. `deploy/gunicorn.conf.py` names it as `logger_class`.
"""

from __future__ import annotations

from typing import Any

from gunicorn.glogging import Logger

from fleet.api.redaction import RedactingFilter


class RedactingLogger(Logger):
    """gunicorn's logger, with every record of its error and access logs scrubbed."""

    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        # On the loggers rather than their handlers: a logger's filters see each record
        # before any handler does, its own or those it propagates to. setup() runs
        # again on every reload (SIGHUP), on the same loggers.
        for log in (self.error_log, self.access_log):
            if not any(isinstance(found, RedactingFilter) for found in log.filters):
                log.addFilter(RedactingFilter())
