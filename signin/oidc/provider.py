"""The identity provider as the portal uses it: allauth's OpenID Connect provider with
PKCE (S256) always, a nonce in every authorization request (checked against the ID
token by `signin.adapters`), the scopes that bring the groups claim, and the flow's
parameters not open to the request."""

from __future__ import annotations

import secrets
from typing import Any

from allauth.account.utils import get_next_redirect_url
from allauth.socialaccount.helpers import render_authentication_error
from allauth.socialaccount.providers.base.constants import AuthProcess
from allauth.socialaccount.providers.oauth2.utils import generate_code_challenge
from allauth.socialaccount.providers.openid_connect.provider import OpenIDConnectProvider
from allauth.utils import get_request_param
from django.http import HttpRequest, HttpResponse
from requests import RequestException

from portal.lib.redaction import register_secret
from signin.access import AccessPolicy
from signin.oidc.views import OrganisationAdapter


class OrganisationProvider(OpenIDConnectProvider):
    package = "signin.oidc"
    oauth2_adapter_class = OrganisationAdapter
    pkce_enabled_default = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        register_secret(self.app.secret)  # scrubbed from every log line from now on
        self._adapter: OrganisationAdapter | None = None

    def get_oauth2_adapter(self, request: HttpRequest) -> OrganisationAdapter:
        # One per request: its discovery document, fetched once, serves the scopes and
        # the redirect alike.
        if self._adapter is None or self._adapter.request is not request:
            self._adapter = OrganisationAdapter(request, self.app.provider_id)
        return self._adapter

    def scope_for(self, request: HttpRequest) -> list[str]:
        """The scopes to ask for: the provider's `scope` setting (OIDC_SCOPES) when it has
        one; otherwise allauth's default, with the scope named like the groups claim
        when the provider's discovery document lists it (Dex, Authentik and Okta's
        custom authorization servers release groups only for their `groups` scope).
        """
        configured = self.app.settings.get("scope")
        if configured is None:
            configured = self.get_settings().get("SCOPE")  # allauth's, for every provider
        scopes: list[str]
        if configured is not None:
            scopes = (
                configured.split()
                if isinstance(configured, str)
                else [str(scope) for scope in configured]
            )
            return scopes if "openid" in scopes else ["openid", *scopes]
        scopes = self.get_default_scope()
        claim = AccessPolicy.from_settings(self.app.settings).groups_claim
        supported = self.get_oauth2_adapter(request).openid_config.get("scopes_supported")
        if isinstance(supported, list) and claim in supported and claim not in scopes:
            scopes.append(claim)
        return scopes

    def get_pkce_params(self) -> dict[str, str]:
        # Whatever a provider's settings say: an intercepted code must be worth nothing.
        params: dict[str, str] = generate_code_challenge()
        return params

    def get_redirect_from_request_kwargs(self, request: HttpRequest) -> dict[str, Any]:
        # allauth lets the request choose the process (connect an identity to the
        # signed-in user), the scope and extra parameters; here only where to go next.
        kwargs: dict[str, Any] = {"process": AuthProcess.LOGIN}
        if next_url := get_next_redirect_url(request):
            kwargs["next_url"] = next_url
        if get_request_param(request, "prompt") == "login":
            kwargs["prompt"] = "login"  # "sign in with another account"
        return kwargs

    def redirect(
        self,
        request: HttpRequest,
        process: str,
        next_url: str | None = None,
        data: Any = None,
        **kwargs: Any,
    ) -> HttpResponse:
        nonce = secrets.token_urlsafe(32)
        auth_params = {**self.get_auth_params(), "nonce": nonce}
        if kwargs.pop("prompt", None):
            auth_params["prompt"] = "login"
        try:
            scope = self.scope_for(request)
            # The nonce is kept in the flow's state, beside PKCE's verifier.
            response: HttpResponse = super().redirect(
                request,
                process,
                next_url,
                data,
                auth_params=auth_params,
                scope=scope,
                nonce=nonce,
                **kwargs,
            )
        except RequestException as exc:  # discovery failed: the provider is down
            response = render_authentication_error(request, self, exception=exc)
        return response


provider_classes = [OrganisationProvider]
