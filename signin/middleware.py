"""Sessions that end when idle or too old (signin.sessions), and pages whose forms may
lead to an identity provider."""

from __future__ import annotations

from collections.abc import Callable
from typing import cast
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import logout
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.utils.translation import gettext as _
from django_htmx.http import HttpResponseClientRedirect

from signin.providers import provider_list, provider_origin
from signin.sessions import PROVIDER_ORIGIN, Expiry, session_expiry, session_touch

# Pages whose forms start a sign-in at a provider (its buttons, "another account").
_SIGN_IN_PAGES = frozenset({"login", "openid_connect_login", "openid_connect_callback"})


class SessionTimeoutMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.user.is_authenticated:
            expiry = session_expiry(request)
            if expiry is not None:
                return _expired(request, expiry)
            session_touch(request)
        return self.get_response(request)


def _expired(request: HttpRequest, expiry: Expiry) -> HttpResponse:
    logout(request)
    if expiry is Expiry.IDLE:
        text = _(
            "Your session ended after %(minutes)d minutes without activity. Sign in again."
        ) % {"minutes": settings.SESSION_IDLE_MINUTES}
    else:
        text = _("Your session ended %(hours)d hours after you signed in. Sign in again.") % {
            "hours": settings.SESSION_MAX_HOURS
        }
    messages.info(request, text)
    if request.headers.get("HX-Request"):
        # An htmx request would swap the sign-in page into a fragment: send the page there.
        page = urlsplit(request.headers.get("HX-Current-URL", ""))
        back = f"{page.path}?{page.query}" if page.query else page.path or "/"
        return HttpResponseClientRedirect(redirect_to_login(back)["Location"])
    return redirect_to_login(request.get_full_path())


class ProviderFormsMiddleware:
    """Let forms lead to the identity providers, which CSP's `form-action 'self'` forbids.

    A form's redirects count as its destination: the login page's buttons post
    here and are sent to a provider, and the sign-out form of every page ends at
    the provider the session came through. Listed after Django's CSP middleware,
    so that this runs first on the way out.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if hasattr(response, "_csp_config") or "html" not in response.get("Content-Type", ""):
            return response
        origins = set()
        if origin := request.session.get(PROVIDER_ORIGIN):
            origins.add(origin)
        match = request.resolver_match
        if match is not None and match.url_name in _SIGN_IN_PAGES:
            origins.update(provider_origin(provider) for provider in provider_list(request))
        if origins:
            csp = cast("dict[str, list[str]]", settings.SECURE_CSP)
            policy = csp | {"form-action": [*csp.get("form-action", []), *sorted(origins)]}
            response._csp_config = policy  # type: ignore[attr-defined]  # Django's own hook
        return response
