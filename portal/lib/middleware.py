"""What the whole portal shares around every request: its id and log line, response headers."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.utils.cache import patch_cache_control

from portal.lib import request_ids
from portal.lib.redaction import redact

requests_logger = logging.getLogger("portal.requests")


class PrivateNoStoreMiddleware:
    """Every response Django makes says `Cache-Control: private, no-store`.

    Every page, htmx fragment and CSV export shows fleet data or someone's
    personal data, or carries a CSRF token; none may be kept by a shared proxy or
    on the disk of a shared computer. Doing it here rather than with a decorator
    per view covers a new page without anyone having to remember it. Static files
    keep their long caching: WhiteNoise answers them before this middleware runs
    (it comes after WhiteNoiseMiddleware in MIDDLEWARE).
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        # Merged into what a view said (never_cache's no-cache, must-revalidate stay).
        patch_cache_control(response, private=True, no_store=True)
        return response


class RequestIdMiddleware:
    """Gives each request its id (`portal.lib.request_ids`) and logs one line when it is answered.

    The id is nginx's `X-Request-Id` when it sent a sane one (nginx sets it on
    every request, over whatever a client sent), else a new one. It is bound
    while the request runs, so every log line it causes carries it, and comes
    back in the response's `X-Request-Id` header. First in MIDDLEWARE, so that
    every other middleware's lines, the error pages and the request line
    (`portal.requests`: method, path without its query, view, status, time,
    user) are inside it.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        request_id = request_ids.accepted(request.headers.get("X-Request-Id"))
        with request_ids.bound(request_id):
            started = time.monotonic()
            response = self.get_response(request)
            response["X-Request-Id"] = request_id
            _request_log(request, response, duration_ms=(time.monotonic() - started) * 1000)
        return response


def request_log_skip(request: HttpRequest) -> None:
    """No request line for `request`: one a view counted instead, among many alike (the
    refused requests of a flood, `signin.scim.views`), whose first it logged."""
    request._request_log_skipped = True  # type: ignore[attr-defined]


def _request_log(request: HttpRequest, response: HttpResponseBase, *, duration_ms: float) -> None:
    if getattr(request, "_request_log_skipped", False):
        return
    match = request.resolver_match
    view = match.view_name if match is not None else "-"
    # Only a user the request already loaded: reading it here would cost a query of the
    # session (and could fail with the database, on the way out of a 500 or a 503).
    user = getattr(request, "_cached_user", None)
    user_id = user.pk if user is not None and user.is_authenticated else None
    # The path only, scrubbed here (a webhook's token is in it): a query string may hold
    # anything a form or a link put there.
    path = redact(request.path)
    requests_logger.info(
        "%s %s -> %d in %.0f ms (%s)",
        # As Django's own request lines (`log_response`): a path's decoded %0A would
        # otherwise end the line there and start one the client wrote.
        _escaped(request.method or ""),
        _escaped(path),
        response.status_code,
        duration_ms,
        view,
        extra={
            "method": request.method,
            "path": path,
            "view": view,
            "status": response.status_code,
            "duration_ms": round(duration_ms),
            "user_id": user_id,
        },
    )


def _escaped(text: str) -> str:
    """`text` with control characters (and anything not ASCII) written as escapes."""
    return text.encode("unicode_escape").decode("ascii")
