"""Every request counted for the operators (`portal.lib.metrics`): by view, method and status,
with the time it took, whatever answered it (a view, an error page, a middleware)."""

from __future__ import annotations

import time
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest
from django.http.response import HttpResponseBase

from portal.lib import metrics

# Methods outside these are counted as "other": a client may send any word.
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class MetricsMiddleware:
    """First of all middleware, so that the time includes theirs."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response
        self.static_url = settings.STATIC_URL or "/static/"

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        started = time.perf_counter()
        response = self.get_response(request)
        view = _view_name(request, self.static_url)
        method = request.method if request.method in _METHODS else "other"
        metrics.HTTP_REQUESTS.labels(view, method, str(response.status_code)).inc()
        metrics.HTTP_LATENCY.labels(view, method).observe(time.perf_counter() - started)
        return response


def _view_name(request: HttpRequest, static_url: str) -> str:
    """The URL name of the view that answered (never the path: it holds plates and ids)."""
    match = getattr(request, "resolver_match", None)
    if match is not None:
        return match.view_name or "unnamed"
    return "static" if request.path.startswith(static_url) else "unmatched"
