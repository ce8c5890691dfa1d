"""The bearer tokens of the SCIM clients: one or more per identity provider, shown once.

A token reads `scim_<prefix>_<secret>`: the prefix finds its row, the SHA-256 of the
whole token is compared in constant time. A token has 256 random bits, so a plain
digest is enough (no slow hash: nothing to guess).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Final

from allauth.socialaccount.adapter import get_adapter
from django.http import HttpRequest
from django.utils import timezone

from signin.models import ScimToken
from signin.oidc.provider import OrganisationProvider

_SCHEME: Final = "scim"


class UnknownProvider(ValueError):
    """No configured identity provider has this id."""


def scim_provider_ids(request: HttpRequest | None = None) -> set[str]:
    """The ids of the configured identity providers, as their identities are stored
    (SocialAccount.provider): the social applications' and OIDC_PROVIDER_ID."""
    providers = get_adapter().list_providers(request or HttpRequest())
    return {provider.sub_id for provider in providers if isinstance(provider, OrganisationProvider)}


def scim_token_mint(*, provider: str, created_by: str) -> str:
    """A new token for `provider`'s SCIM client; the only time it is seen whole."""
    if provider not in scim_provider_ids():
        raise UnknownProvider(provider)
    prefix = secrets.token_hex(6)
    token = f"{_SCHEME}_{prefix}_{secrets.token_urlsafe(32)}"
    ScimToken.objects.create(
        provider=provider, prefix=prefix, digest=_digest(token), created_by=created_by[:150]
    )
    return token


def scim_token_check(presented: str) -> ScimToken | None:
    """The live token `presented` is, or None (unknown, wrong, revoked, or its provider
    no longer configured)."""
    scheme, _, rest = presented.partition("_")
    prefix, _, secret = rest.partition("_")
    if scheme != _SCHEME or not prefix or not secret:
        return None
    token = ScimToken.objects.filter(prefix=prefix, revoked_at__isnull=True).first()
    if token is None or not hmac.compare_digest(token.digest, _digest(presented)):
        return None
    if token.provider not in scim_provider_ids():
        return None
    ScimToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
    return token


def scim_token_revoke(*, token: ScimToken) -> None:
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()
