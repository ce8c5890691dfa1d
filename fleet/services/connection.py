"""The one configured Fleet API client of this process."""

from __future__ import annotations

import functools
import hashlib

from django.conf import settings

from fleet.api.client import FleetClient
from fleet.services.cooldown import CacheCooldown


def fleet_client() -> FleetClient:
    """The client for the configured credentials, shared by every thread.

    Settings are read on each call (tests override them); the client and its
    connection pool are reused for as long as they stay the same. Its route
    cooldowns live in Django's cache, so a Retry-After pauses every worker.
    """
    return _client_for(
        settings.FLEET_BASE_URL,
        settings.FLEET_ACCESS_TOKEN,
        settings.FLEET_SECRET_KEY,
        settings.FLEET_INTERACTIVE_RETRY_BUDGET,
        settings.FLEET_READ_TIMEOUT,
        settings.FLEET_ANSWER_MAX_BYTES,
        settings.FLEET_ANSWER_SECONDS,
        settings.FLEET_CNH_LOOKUP_PATH,
        settings.FLEET_CNH_BATCH_PATH,
        tuple(settings.FLEET_WRONG_LOGIN_CODES),
    )


def fleet_cache_scope() -> str:
    """A short name for the configured API and account, for shared cache keys.

    Workers pointed at another API or account (a rate limit is per access
    token) must not share pauses or data. A digest: keys never hold the token.
    """
    return _scope_for(settings.FLEET_BASE_URL, settings.FLEET_ACCESS_TOKEN)


@functools.lru_cache(maxsize=4)
def _scope_for(base_url: str, access_token: str) -> str:
    return hashlib.sha256(f"{base_url}\n{access_token}".encode()).hexdigest()[:16]


def fleet_clients_forget() -> None:
    """Drop this process's clients: the next `fleet_client()` builds a new one, as another
    worker would (its connection pool too; the route cooldowns stay in the cache)."""
    _client_for.cache_clear()


@functools.lru_cache(maxsize=4)
def _client_for(
    base_url: str,
    access_token: str,
    secret_key: str,
    retry_budget: float,
    read_timeout: float,
    answer_max_bytes: int,
    answer_seconds: float,
    cnh_lookup_path: str,
    cnh_batch_path: str,
    wrong_login_codes: tuple[str, ...],
) -> FleetClient:
    return FleetClient(
        base_url=base_url,
        access_token=access_token,
        secret_key=secret_key,
        retry_budget=retry_budget,
        read_timeout=read_timeout,
        answer_max_bytes=answer_max_bytes,
        answer_seconds=answer_seconds,
        cooldown=CacheCooldown(scope=_scope_for(base_url, access_token)),
        cnh_lookup_path=cnh_lookup_path,
        cnh_batch_path=cnh_batch_path,
        wrong_login_codes=wrong_login_codes,
    )
