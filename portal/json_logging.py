"""Log lines as one JSON object each, for `LOG_FORMAT=json`.

Every handler of the portal (the console, Django's development server) and of
gunicorn (its error and access logs, `portal.gunicorn_logging`) writes with
`JsonFormatter` then: `time` (ISO 8601, UTC), `level`, `logger`, `message`,
`request_id`, the record's structured fields (the `extra` of a log call: a
request line's `method`, `path`, `status`, `duration_ms`; a Fleet API call's
`fleet_trace_id`; a task's `task`, `status`...) and `exception` when there is
one. Written with the standard library: a few lines, and every field passes
through the one redaction of the portal on its way out.

The handlers' `RedactingFilter` scrubs the message and the traceback before
any formatter runs; the formatter scrubs every string it writes once more,
the structured fields included, which no filter looks at. A secret that
reaches a log call in any field is written `[REDACTED]`.

`configure` (settings.LOGGING_CONFIG) also sends Python's warnings through the
handlers with JSON lines: printed as they are, a warning would be the one
line of the log that is not JSON (and two lines at that).
"""

from __future__ import annotations

import json
import logging
import logging.config
from datetime import UTC, datetime
from typing import Any

from portal.lib import request_ids
from portal.lib.redaction import redact

# The attributes every record has: anything else on a record came from `extra`.
_STANDARD = frozenset(vars(logging.LogRecord("", logging.INFO, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "request_id",
}


def configure(config: dict[str, Any]) -> None:
    """Django's logging set-up (`LOGGING_CONFIG`): `dictConfig`, and with LOG_FORMAT=json
    Python's warnings logged (`py.warnings`) rather than printed."""
    from django.conf import settings

    logging.config.dictConfig(config)
    if settings.LOG_FORMAT == "json":
        logging.captureWarnings(True)


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line, every string field redacted."""

    def format(self, record: logging.LogRecord) -> str:
        fields: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", None)
            or request_ids.current()
            or request_ids.NONE,
        }
        for name, value in vars(record).items():
            # Objects (Django's `request`, a socket) are no structured field: left out.
            if name not in _STANDARD and name not in fields and _is_plain(value):
                fields[name] = value
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            fields["exception"] = record.exc_text
        if record.stack_info:
            fields["stack"] = self.formatStack(record.stack_info)
        # ASCII only: a line separator inside a value (U+2028) stays inside its line.
        return json.dumps(_scrubbed(fields))


def _is_plain(value: object) -> bool:
    if value is None or isinstance(value, str | int | float | bool):
        return True
    if isinstance(value, list | tuple):
        return all(_is_plain(item) for item in value)
    if isinstance(value, dict):
        return all(isinstance(key, str) and _is_plain(item) for key, item in value.items())
    return False


def _scrubbed(value: Any) -> Any:
    """`value` with every string in it redacted (and a number that redaction would change,
    such as a CPF, written as the redacted text)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, bool) or value is None or isinstance(value, float):
        return value
    if isinstance(value, int):
        text = str(value)
        return value if (clean := redact(text)) == text else clean
    if isinstance(value, dict):
        return {key: _scrubbed(item) for key, item in value.items()}
    return [_scrubbed(item) for item in value]
