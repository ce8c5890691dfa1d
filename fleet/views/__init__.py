"""The portal's views, one module per area."""

from __future__ import annotations

import math
from dataclasses import dataclass

from django.contrib.auth.models import User
from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails


class AuthenticatedRequest(HttpRequest):
    """The request a `login_required` view receives (with django-htmx's details)."""

    user: User
    htmx: HtmxDetails


def is_fragment_request(request: AuthenticatedRequest) -> bool:
    """Whether htmx asked for a fragment (a history restore needs the whole page)."""
    return bool(request.htmx) and not request.htmx.history_restore_request


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
