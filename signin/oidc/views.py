"""The login and callback views of allauth's OpenID Connect provider, with its adapter
made to verify every ID token's signature against the issuer's published keys."""

from __future__ import annotations

from typing import Any

import jwt
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

# What providers sign ID tokens with (RS256 and ES256 above all); never HMAC or "none".
SIGNING_ALGORITHMS = frozenset({"RS256", "RS384", "RS512", "PS256", "ES256", "ES384", "ES512"})
# Two servers' clocks differ a little: an ID token issued "in a second" is not a forgery.
CLOCK_SKEW_SECONDS = 60


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
        """The ID token's claims, once its signature, issuer, audience and times check out.

        allauth skips the signature when it fetched the token itself, as OpenID
        Connect Core 3.1.3.7 allows over TLS, and allows no clock skew; here the
        signature is checked every time (with allauth's key lookup, against the
        issuer's published keys, fetched again for each sign-in so that a rotated key
        is found), by PyJWT, with a minute of leeway between two servers' clocks.
        """
        try:
            alg, key = jwtkit.fetch_key(
                id_token, self.openid_config["jwks_uri"], jwtkit.lookup_kid_jwk
            )
            if alg not in SIGNING_ALGORITHMS:
                raise OAuth2Error(f"ID token signed with {alg}, not a public-key algorithm")
            claims: dict[str, Any] = jwt.decode(
                id_token,
                key=key,
                algorithms=[alg],
                audience=app.client_id,
                issuer=self.openid_config["issuer"],
                leeway=CLOCK_SKEW_SECONDS,
                options={"require": ["iss", "sub", "aud", "exp", "iat"]},
            )
            jwtkit.verify_jti(claims)
        except jwt.PyJWTError as exc:
            raise OAuth2Error("Invalid id_token") from exc
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
