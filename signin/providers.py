"""The identity providers the portal offers, and what local login allows beside them.

Providers come from the environment (OIDC_*) and from the admin (social
applications); allauth blends both. LOCAL_LOGIN says whether the portal's own
username and password form is shown: `on` for everyone, `staff` for
administrators only, `off`; unset, `on` without a provider and `staff` with one.
"""

from __future__ import annotations

import logging
from urllib.parse import urlencode, urlsplit

from allauth.socialaccount.adapter import get_adapter
from allauth.socialaccount.models import SocialApp
from allauth.socialaccount.providers.base import Provider
from django.conf import settings
from django.http import HttpRequest
from requests import RequestException

from signin.local_login import LocalLogin
from signin.oidc.provider import OrganisationProvider

logger = logging.getLogger(__name__)


def provider_list(request: HttpRequest) -> list[OrganisationProvider]:
    """Every configured identity provider, in the order the login page shows them."""
    providers: list[Provider] = get_adapter().list_providers(request)
    return sorted(
        (provider for provider in providers if isinstance(provider, OrganisationProvider)),
        key=lambda provider: provider.name.casefold(),
    )


def provider_choices(request: HttpRequest) -> list[tuple[str, str]]:
    """Every configured identity provider as (id, name), for the other apps
    (`portal.lib.identity.identity_providers`)."""
    return [(provider.sub_id, provider.name) for provider in provider_list(request)]


def provider_origin(provider: OrganisationProvider) -> str:
    """Where the provider's pages are (its issuer's origin): forms lead there."""
    issuer = urlsplit(provider.app.settings.get("server_url", ""))
    return f"{issuer.scheme}://{issuer.netloc}"


def provider_get(request: HttpRequest, provider_id: str) -> OrganisationProvider | None:
    try:
        provider = get_adapter().get_provider(request, provider_id)
    except SocialApp.DoesNotExist:
        return None
    return provider if isinstance(provider, OrganisationProvider) else None


def local_login_mode(*, providers: list[OrganisationProvider]) -> LocalLogin:
    configured = settings.LOCAL_LOGIN
    if configured:
        return LocalLogin(configured)
    return LocalLogin.STAFF if providers else LocalLogin.ON


def provider_logout_url(
    *, request: HttpRequest, provider_id: str, id_token: str | None, return_to: str
) -> str | None:
    """Where to sign out at the provider too (RP-initiated logout), if it says where.

    None when the provider is gone from the configuration, advertises no
    `end_session_endpoint`, or does not answer: the portal's own sign-out stands.
    """
    provider = provider_get(request, provider_id)
    if provider is None:
        return None
    try:
        endpoint = provider.get_oauth2_adapter(request).openid_config.get("end_session_endpoint")
    except (RequestException, ValueError) as exc:
        logger.warning(
            "Signed out of the portal only: %s did not answer its discovery (%s)",
            provider_id,
            type(exc).__name__,
        )
        return None
    if not endpoint:
        return None
    params = {"client_id": provider.app.client_id, "post_logout_redirect_uri": return_to}
    if id_token:
        params["id_token_hint"] = id_token
    separator = "&" if "?" in endpoint else "?"
    return f"{endpoint}{separator}{urlencode(params)}"
