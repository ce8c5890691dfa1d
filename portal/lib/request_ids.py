"""The request id: one short code that follows a request into every log line it causes.

The portal's middleware (`portal.lib.middleware.RequestIdMiddleware`) binds an id
for each request: the `X-Request-Id` nginx sets, when it is a sane token, or
a new one. It is returned in the response, written on the error pages (a
manager quotes it), stored beside the arguments of every background task the
request enqueues (`portal.lib.tasks_backend`) and bound again by the worker while
the task runs. `RequestIdFilter` puts it on every log record, so the Fleet API
client's line of each call carries it beside the API's trace id.

A context variable holds it: one per thread under gunicorn's workers and the
worker's queue threads, and nothing left over from one request to the next.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

# What nginx's $request_id looks like (32 hex digits) and what other proxies send
# (UUIDs, dotted or dashed tokens). Anything else came from a client that is not
# ours to trust in a log line (a newline, a megabyte, markup): it gets a new id.
_SANE = re.compile(r"[A-Za-z0-9._-]{1,64}")
# Written where a record has no request behind it (the worker between tasks, start-up).
NONE = "-"

_current: ContextVar[str | None] = ContextVar("fleet_request_id", default=None)


def new() -> str:
    """A fresh id, shaped like nginx's `$request_id`."""
    return uuid.uuid4().hex


def is_sane(value: object) -> bool:
    """Whether `value` may be used as a request id as it is."""
    return isinstance(value, str) and _SANE.fullmatch(value) is not None


def accepted(value: str | None) -> str:
    """`value` when it is a sane id (a proxy's), else a new one."""
    return value if value is not None and is_sane(value) else new()


def current() -> str | None:
    """The id of the request (or of the task's request) under way here; None outside one."""
    return _current.get()


@contextmanager
def bound(request_id: str | None) -> Iterator[None]:
    """Make `request_id` the current id for the block (None: no id), then restore the last."""
    token = _current.set(request_id)
    try:
        yield
    finally:
        _current.reset(token)


class RequestIdFilter(logging.Filter):
    """Puts `request_id` on every record a handler writes ("-" outside a request).

    A record that already carries one keeps it (gunicorn's access line takes
    the response's header, since the request is over when it is written).
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if not getattr(record, "request_id", None):
            record.request_id = current() or NONE
        return True
