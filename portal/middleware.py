"""Response headers the whole portal shares."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.utils.cache import patch_cache_control


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
