"""Work a request can leave for after its response: the page first, then the chores.

`later(work)` runs `work` once the response has gone out, or at once outside
a request (a management command, a task, a test calling a service). "Gone
out" is Django's `request_finished`, which the WSGI server sends when it
closes the response, after writing all of it: the person waiting has the page.
The worker (the thread, under gthread) is busy until the work is done, as it
would have been before answering.

Each request has its own list (a context variable: one per thread under a
threaded server). Work that fails is logged and does not stop the work after it.
The work runs with the id of the request that left it (`portal.lib.request_ids`), so
its log lines are found with the request's.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from portal.lib import request_ids

logger = logging.getLogger(__name__)

_pending: ContextVar[list[Callable[[], object]] | None] = ContextVar(
    "fleet_after_response", default=None
)


def later(work: Callable[[], object]) -> None:
    """Run `work` after this request's response is sent; now outside a request."""
    pending = _pending.get()
    if pending is None:
        work()
    else:
        request_id = request_ids.current()

        def under_the_requests_id() -> object:
            with request_ids.bound(request_id):
                return work()

        pending.append(under_the_requests_id)


def in_request() -> bool:
    """Whether `later` would wait for a response (this code runs inside a request)."""
    return _pending.get() is not None


def request_started(**_: Any) -> None:
    """`request_started`'s receiver: this request leaves nothing yet."""
    _pending.set([])


def request_finished(**_: Any) -> None:
    """`request_finished`'s receiver: the response is out; do what was left."""
    pending = _pending.get()
    _pending.set(None)
    for work in pending or ():
        try:
            work()
        except Exception:
            logger.exception("work left for after the response failed")


def pending_forget() -> None:
    """This thread forgets the work of a response that was never closed, without doing it.

    A WSGI server closes every response; a test client's streamed answer that nobody
    read is never closed, and would leave its thread inside that request: work that
    code outside a request asks for later would wait for a close that never comes.
    """
    _pending.set(None)
