"""The portal's views, one module per area."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final
from urllib.parse import parse_qsl, urlsplit

from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django_htmx.http import push_url, replace_url
from django_htmx.middleware import HtmxDetails

from fleet.api.errors import Outcome
from fleet.models import MintOutcome

# The status of a page whose Fleet API part failed, by why: what went wrong, for proxies
# and logs (htmx fragments stay 200: htmx swaps only successful answers in). Anything
# else (an answer the portal could not use) is a 502.
_FAILURE_STATUS: Final[Mapping[str, int]] = {
    Outcome.RATE_LIMITED: 429,
    Outcome.UNAVAILABLE: 503,
    Outcome.CREDENTIALS_REJECTED: 502,
    Outcome.PERMISSION_DENIED: 403,
    Outcome.LOGIN_REJECTED: 409,
    MintOutcome.NO_ACCOUNT: 409,
}


class AuthenticatedRequest(HttpRequest):
    """The request a `login_required` view receives (with django-htmx's details)."""

    user: User
    htmx: HtmxDetails


def is_fragment_request(request: AuthenticatedRequest) -> bool:
    """Whether htmx asked for a fragment (a history restore needs the whole page)."""
    return bool(request.htmx) and not request.htmx.history_restore_request


def address_shown(
    request: AuthenticatedRequest, response: HttpResponse, address: str
) -> HttpResponse:
    """`response`, an htmx swap of a list's results, with the address bar set to `address`
    (the list's state): a new history entry for a new state, the same entry when the page
    shows that state already (a "Filter" press after a select applied the filter), so that
    one Back always goes to the state before."""
    current = request.htmx.current_url_abs_path or ""
    if _same_state(current, address):
        return replace_url(response, address)
    return push_url(response, address)


def _same_state(first: str, second: str) -> bool:
    """Whether two addresses of a list give the same state: one path, the same parameters
    (in any order, empty ones being no filter)."""
    a, b = urlsplit(first), urlsplit(second)
    return a.path == b.path and sorted(
        (name, value) for name, value in parse_qsl(a.query) if value
    ) == sorted((name, value) for name, value in parse_qsl(b.query) if value)


def with_failure_status(
    response: HttpResponse, outcome: str, *, retry_after: float | None = None
) -> HttpResponse:
    """`response`, a page whose Fleet API part failed for `outcome`, with the status that
    says so and, when the API said when to come back, `Retry-After` (whole seconds,
    rounded up: never sooner than it asked)."""
    response.status_code = _FAILURE_STATUS.get(outcome, 502)
    if retry_after:
        response["Retry-After"] = str(math.ceil(retry_after))
    return response


@dataclass(frozen=True, slots=True)
class Polling:
    """How a page that changes by itself polls: each wait half as long again, within bounds.

    The fragment carries its own next delay (`?poll=`), so a forgotten tab
    costs little; a fragment with nothing left to wait for has no trigger.
    """

    first_ms: int
    max_ms: int
    backoff: float = 1.5

    def delay(self, raw: str | None) -> int:
        """The wait (ms) a poll asks for, kept within the bounds."""
        try:
            delay = int(raw or self.first_ms)
        except ValueError:
            delay = self.first_ms
        return max(self.first_ms, min(delay, self.max_ms))

    def after(self, delay_ms: int) -> int:
        """The wait the next poll should ask for."""
        return min(math.ceil(delay_ms * self.backoff), self.max_ms)
