"""The login and callback views of allauth's OpenID Connect provider, with its adapter
made to verify every ID token's signature against the issuer's published keys."""

from __future__ import annotations

from typing import Any

from allauth.socialaccount.helpers import render_authentication_error
from allauth.socialaccount.internal import jwtkit
from allauth.socialaccount.models import SocialApp, SocialLogin, SocialToken
from allauth.socialaccount.providers.oauth2.client import OAuth2Error
from allauth.socialaccount.providers.oauth2.views import OAuth2CallbackView, OAuth2LoginView
from allauth.socialaccount.providers.openid_connect.views import OpenIDConnectOAuth2Adapter
from django.contrib.auth.decorators import login_not_required
from django.http import Http404, HttpRequest, HttpResponse
from requests import RequestException

from signin import sessions


class OrganisationAdapter(OpenIDConnectOAuth2Adapter):
    def complete_login(
        self, request: HttpRequest, app: SocialApp, token: SocialToken, **kwargs: Any
    ) -> SocialLogin:
        raw_id_token = kwargs["response"].get("id_token")
        if not raw_id_token:
            raise OAuth2Error("the token response carries no ID token")
        login: SocialLogin = super().complete_login(request, app, token, **kwargs)
        claims = login.account.extra_data
        userinfo = claims.get("userinfo")
        if userinfo is not None and userinfo.get("sub") != claims["id_token"].get("sub"):
            raise OAuth2Error("the userinfo answer is about another subject than the ID token")
        # For the sign-out at the provider (RP-initiated logout's id_token_hint).
        sessions.remember_id_token(request, raw_id_token)
        return login

    def _decode_id_token(self, app: SocialApp, id_token: str) -> dict[str, Any]:
        # allauth skips the signature when it fetched the token itself, as OpenID
        # Connect Core 3.1.3.7 allows over TLS; the portal checks it every time, so
        # that a forged or replayed answer fails however it arrived.
        try:
            claims: dict[str, Any] = jwtkit.verify_and_decode(
                credential=id_token,
                keys_url=self.openid_config["jwks_uri"],
                issuer=self.openid_config["issuer"],
                audience=app.client_id,
                lookup_kid=jwtkit.lookup_kid_jwk,
                verify_signature=True,
            )
        except (KeyError, TypeError, ValueError) as exc:  # a malformed token or key set
            raise OAuth2Error("Invalid id_token") from exc
        return claims


@login_not_required
def login(request: HttpRequest, provider_id: str) -> HttpResponse:
    return _run(OAuth2LoginView, request, provider_id)


@login_not_required
def callback(request: HttpRequest, provider_id: str) -> HttpResponse:
    return _run(OAuth2CallbackView, request, provider_id)


def _run(view_class: Any, request: HttpRequest, provider_id: str) -> HttpResponse:
    adapter = OrganisationAdapter(request, provider_id)
    try:
        response: HttpResponse = view_class.adapter_view(adapter)(request)
    except SocialApp.DoesNotExist:
        raise Http404 from None
    except RequestException as exc:
        # allauth asks for the provider's discovery document before its own error
        # handling starts: a provider that is down would otherwise be a 500.
        response = render_authentication_error(request, adapter.get_provider(), exception=exc)
    return response
