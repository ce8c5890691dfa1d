"""The retry policy of `FleetClient`, all in one place.

- Each call has a budget of seconds (`retry_budget`, per client or per call)
  and a cap on attempts (`max_attempts`). A wait of any kind (Retry-After,
  backoff, a route's cooldown) happens only when it fits in what is left of
  the budget; otherwise the call fails at once with an error saying when to
  come back, so a page can answer instead of hanging.
- Connect errors are retried by urllib3's `Retry` on the adapter (nothing
  was sent, so any method is safe), with exponential backoff and jitter,
  within the same budget and attempt cap (`BudgetedRetry`).
- Read errors (timeout, dropped connection) are retried only for GET: a POST
  may have been processed.
- 429 and 504 pause the route in the shared `Cooldown` for their Retry-After,
  and are retried (any method: the server did not do the work) if that fits.
- The CNH lookups are the exception: one may take the licensing service's
  whole minute, so they wait 70 s for an answer and never wait to retry
  inside the call (budget 0): a 504 is raised with its `retry_after` for the
  background task to reschedule, and it does not pause the route, since it
  says that one lookup timed out, not that the API is overloaded.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from types import TracebackType
from typing import Final, Self

from urllib3.connectionpool import ConnectionPool
from urllib3.exceptions import MaxRetryError
from urllib3.response import BaseHTTPResponse
from urllib3.util.retry import Retry

from fleet.api.cooldown import Cooldown
from fleet.api.errors import (
    FleetError,
    GatewayTimeout,
    RetryLater,
    UpstreamUnavailable,
    resendable,
)
from portal.lib import metrics

logger = logging.getLogger("fleet.api")

_BACKOFF_BASE: Final = 0.1
_BACKOFF_MAX: Final = 1.0


def backoff(retry_number: int) -> float:
    """Exponential backoff with full jitter, so that callers do not retry in step."""
    ceiling = min(_BACKOFF_MAX, _BACKOFF_BASE * 2 ** (retry_number - 1))
    return random.uniform(ceiling / 2, ceiling)  # noqa: S311 - jitter, not cryptography


@dataclass(slots=True)
class CallBudget:
    """Time and attempts left to one client call, shared with urllib3's retries."""

    method: str
    route: str
    deadline: float
    max_attempts: int
    attempts: int = 0
    timeout_pauses_route: bool = True
    clock: Callable[[], float] = time.monotonic  # what `deadline` is measured on
    sleep: Callable[[float], None] = time.sleep  # how the call waits, urllib3's backoff too

    def remaining(self) -> float:
        return self.deadline - self.clock()

    def allows(self, wait: float) -> bool:
        """Whether another attempt may start after waiting `wait` seconds.

        Strictly less: a spent budget (0 to begin with) allows no retry, not even an
        immediate one, whether or not the clock has moved since.
        """
        return self.attempts < self.max_attempts and wait < self.remaining()


# The call in progress on this thread, for `BudgetedRetry` to consult.
_current_call: ContextVar[CallBudget | None] = ContextVar("fleet_api_call", default=None)


@contextmanager
def spending(call: CallBudget) -> Iterator[None]:
    """Make `call` the one whose budget urllib3's connect retries spend, while inside."""
    token = _current_call.set(call)
    try:
        yield
    finally:
        _current_call.reset(token)


class BudgetedRetry(Retry):
    """urllib3 retries of connect errors, counted against the current call's budget."""

    def increment(
        self,
        method: str | None = None,
        url: str | None = None,
        response: BaseHTTPResponse | None = None,
        error: Exception | None = None,
        _pool: ConnectionPool | None = None,
        _stacktrace: TracebackType | None = None,
    ) -> Self:
        retry = super().increment(method, url, response, error, _pool, _stacktrace)
        call = _current_call.get()
        if call is not None:
            wait = retry.get_backoff_time()
            if not call.allows(wait):
                raise MaxRetryError(_pool, url, error) from error  # type: ignore[arg-type]
            call.attempts += 1
            logger.info(
                "%s %s: could not connect, retrying in %.2f s (attempt %d)",
                call.method,
                call.route,
                wait,
                call.attempts,
            )
        return retry

    def sleep(self, response: BaseHTTPResponse | None = None) -> None:
        """Wait out the backoff the way the current call waits (its client's `sleep`)."""
        call = _current_call.get()
        if call is None:
            super().sleep(response)
            return
        wait = self.get_backoff_time()
        if wait > 0:
            call.sleep(wait)


def connect_retries(max_attempts: int) -> BudgetedRetry:
    """The adapter's retries: connect errors only, with backoff, never a status or a read."""
    return BudgetedRetry(
        total=None,
        connect=max_attempts - 1,
        read=False,
        redirect=0,
        status=0,
        other=0,
        allowed_methods=None,
        backoff_factor=_BACKOFF_BASE,
        backoff_max=_BACKOFF_MAX,
        backoff_jitter=_BACKOFF_BASE,
        raise_on_status=False,
        respect_retry_after_header=False,
    )


def retry_wait(call: CallBudget, error: FleetError, cooldown: Cooldown) -> float | None:
    """Seconds to wait before retrying after `error`, or None if it is final.

    A Retry-After also pauses the route in `cooldown` for every caller.
    """
    if isinstance(error, RetryLater):
        if error.retry_after is not None:
            if call.timeout_pauses_route or not isinstance(error, GatewayTimeout):
                cooldown.hold(call.route, error.retry_after)
                metrics.FLEET_API_COOLDOWNS.labels(str(error.status or "")).inc()
            return error.retry_after
        return backoff(call.attempts)
    # Connect errors were already retried by urllib3 (`connect_retries`): final here.
    if isinstance(error, UpstreamUnavailable) and not error.sent:
        return None
    return backoff(call.attempts) if resendable(error, method=call.method) else None
