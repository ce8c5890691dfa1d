"""The sign-in pages: the login page (a button per identity provider, the local form as
LOCAL_LOGIN allows), sign-out (here and at the provider), and the pages that say
why a sign-in did not happen."""

from __future__ import annotations

import math
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from axes.models import AccessAttempt
from django.conf import settings
from django.contrib.auth import logout as auth_logout
from django.contrib.auth import views as auth_views
from django.db.models import Max, Q
from django.http import HttpRequest, HttpResponse, HttpResponseBase, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from portal.lib.addresses import client_address
from signin import sessions
from signin.forms import LocalLoginForm
from signin.local_login import LocalLogin
from signin.models import SsoOutcome
from signin.providers import local_login_mode, provider_list, provider_logout_url

if TYPE_CHECKING:
    from allauth.socialaccount.providers.base import Provider

    from signin.admission import Refused


class LoginView(auth_views.LoginView):
    """Django's login view, with the identity providers beside (or instead of) its form."""

    form_class = LocalLoginForm
    redirect_authenticated_user = True

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        self.providers = provider_list(request)
        self.local_login = local_login_mode(providers=self.providers)
        if self.local_login is LocalLogin.OFF and not request.user.is_authenticated:
            if request.method == "POST":
                return self.get(request, *args, **kwargs)  # no form to post to
            if len(self.providers) == 1:
                # The organisation's provider is the only door: go straight through it.
                (provider,) = self.providers
                straight: HttpResponse = provider.redirect_from_request(request)
                return straight
        return super().dispatch(request, *args, **kwargs)

    def get_form_kwargs(self) -> dict[str, Any]:
        return super().get_form_kwargs() | {"local_login": self.local_login}

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs) | _login_context(
            self.request, providers=self.providers, local_login=self.local_login
        )
        if self.local_login is LocalLogin.OFF:
            context["form"] = None
        return context


def _login_context(
    request: HttpRequest,
    *,
    providers: list[Any] | None = None,
    local_login: LocalLogin | None = None,
) -> dict[str, Any]:
    if providers is None:
        providers = provider_list(request)
    if local_login is None:
        local_login = local_login_mode(providers=providers)
    return {
        "providers": [
            {"name": provider.name, "login_url": provider.get_login_url(request)}
            for provider in providers
        ],
        "local_login": local_login.value,
        "demo_logins": settings.FLEET_ENVIRONMENT == "emulator" and local_login is LocalLogin.ON,
    }


def _login_page(request: HttpRequest, *, status: int, **context: Any) -> HttpResponse:
    """The login page with a problem stated at its top, and no form errors."""
    next_url = request.GET.get("next", "")
    context = _login_context(request) | {"form": None, "next": next_url} | context
    if context["local_login"] != LocalLogin.OFF.value:
        context["form"] = LocalLoginForm(request)
    return render(request, "registration/login.html", context, status=status)


@require_GET
def admin_login(request: HttpRequest) -> HttpResponse:
    """The admin asks for a login: the portal's, whatever LOCAL_LOGIN allows."""
    query = request.GET.urlencode()
    return HttpResponseRedirect(f"{reverse('login')}?{query}" if query else reverse("login"))


@require_POST
def logout(request: HttpRequest) -> HttpResponse:
    """End the portal session and, for a person who came through a provider, theirs there."""
    provider_id, id_token = sessions.signed_in_provider(request)
    auth_logout(request)
    signed_out_url = reverse("signed_out")
    if provider_id:
        at_provider = provider_logout_url(
            request=request,
            provider_id=provider_id,
            id_token=id_token,
            return_to=request.build_absolute_uri(signed_out_url),
        )
        if at_provider:
            return HttpResponseRedirect(at_provider)
    return HttpResponseRedirect(signed_out_url)


@require_GET
def signed_out(request: HttpRequest) -> HttpResponse:
    return render(request, "signin/signed_out.html")


@never_cache
def locked_out(
    request: HttpRequest, original_response: HttpResponse | None = None, credentials: Any = None
) -> HttpResponse:
    """django-axes' lockout answer: the login page, saying how long the lock lasts."""
    username = (credentials or {}).get("username") or request.POST.get("username", "")
    last_failure = AccessAttempt.objects.filter(
        Q(username=username) | Q(ip_address=client_address(request))
    ).aggregate(last=Max("attempt_time"))["last"]
    cooloff: timedelta = settings.AXES_COOLOFF_TIME
    remaining = cooloff if last_failure is None else last_failure + cooloff - timezone.now()
    minutes = max(1, math.ceil(remaining.total_seconds() / 60))
    return _login_page(request, status=429, lockout_minutes=minutes)


def refused(request: HttpRequest, *, provider: Provider | None, refusal: Refused) -> HttpResponse:
    """The page of a person the provider vouched for but the portal does not let in."""
    context = {
        "provider": provider.name if provider is not None else "",
        "reason": refusal.outcome.value,
        "another_account_url": provider.get_login_url(request) if provider is not None else "",
        # What an administrator types to link this identity (signin.admission).
        "provider_id": provider.sub_id if provider is not None else "",
        "subject": refusal.subject,
    }
    return render(request, "signin/refused.html", context, status=403)


def provider_problem(
    request: HttpRequest, *, provider: Provider, outcome: SsoOutcome
) -> HttpResponse:
    """The login page again, saying what went wrong with the provider's answer."""
    status = {SsoOutcome.UNAVAILABLE: 503, SsoOutcome.CANCELLED: 200}.get(outcome, 400)
    return _login_page(
        request, status=status, problem=outcome.value, problem_provider=provider.name
    )
