"""The bearer tokens of the SCIM clients: one or more per identity provider, shown once.

A token reads `scim_<prefix>_<secret>`: the prefix finds its row, the SHA-256 of the
whole token is compared in constant time. A token works `TOKEN_DAYS` days unless made for
fewer or more; a provider has two live tokens at most, so that a new one is made, set in
the provider, and the old one revoked, with no moment without one. A token has 256
random bits, so a plain digest is enough (no slow hash: nothing to guess).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import timedelta
from typing import Final

from allauth.socialaccount.adapter import get_adapter
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from signin.models import ScimToken
from signin.oidc.provider import OrganisationProvider

_SCHEME: Final = "scim"


class UnknownProvider(ValueError):
    """No configured identity provider has this id."""


class TooManyTokens(ValueError):
    """The provider has `LIVE_TOKENS` live tokens already: one is revoked first."""


# Live tokens a provider may have at once: the one in use, and its successor while the
# provider's settings change over to it.
LIVE_TOKENS: Final = 2
# Days a token works, unless told otherwise (`manage.py scim_token --days`).
TOKEN_DAYS: Final = 365


def scim_provider_ids(request: HttpRequest | None = None) -> set[str]:
    """The ids of the configured identity providers, as their identities are stored
    (SocialAccount.provider): the social applications' and OIDC_PROVIDER_ID."""
    providers = get_adapter().list_providers(request or HttpRequest())
    return {provider.sub_id for provider in providers if isinstance(provider, OrganisationProvider)}


def scim_token_mint(*, provider: str, created_by: str, days: int = TOKEN_DAYS) -> str:
    """A new token for `provider`'s SCIM client, working `days` days; the only time it is
    seen whole. `TooManyTokens` when the provider has `LIVE_TOKENS` live ones already."""
    if provider not in scim_provider_ids():
        raise UnknownProvider(provider)
    if days < 1:
        raise ValueError("a token works one day at least")
    with transaction.atomic():
        live = scim_tokens_live().filter(provider=provider).select_for_update()
        if len(live) >= LIVE_TOKENS:
            raise TooManyTokens(provider)
        prefix = secrets.token_hex(6)
        token = f"{_SCHEME}_{prefix}_{secrets.token_urlsafe(32)}"
        ScimToken.objects.create(
            provider=provider,
            prefix=prefix,
            digest=_digest(token),
            created_by=created_by[:150],
            expires_at=timezone.now() + timedelta(days=days),
        )
    return token


def scim_tokens_live() -> QuerySet[ScimToken]:
    """The tokens that work: not revoked, not expired."""
    return ScimToken.objects.filter(revoked_at__isnull=True, expires_at__gt=timezone.now())


def scim_token_check(presented: str, *, address: str | None = None) -> ScimToken | None:
    """The live token `presented` is, or None (unknown, wrong, revoked, expired, or its
    provider no longer configured); its last use (and from where) is recorded."""
    scheme, _, rest = presented.partition("_")
    prefix, _, secret = rest.partition("_")
    if scheme != _SCHEME or not prefix or not secret:
        return None
    token = scim_tokens_live().filter(prefix=prefix).first()
    if token is None or not hmac.compare_digest(token.digest, _digest(presented)):
        return None
    if token.provider not in scim_provider_ids():
        return None
    ScimToken.objects.filter(pk=token.pk).update(
        last_used_at=timezone.now(), last_used_from=address
    )
    return token


def scim_token_revoke(*, token: ScimToken) -> None:
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()
