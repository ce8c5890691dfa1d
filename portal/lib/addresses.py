"""The address a request came from, as the deployment's proxies report it: the webhook
receiver's record of a sender, sign-in's lockouts and audit, SCIM's rate limits."""

from __future__ import annotations

import functools
import ipaddress

from django.conf import settings
from django.http import HttpRequest


def client_address(request: HttpRequest) -> str | None:
    """The client's IP address (FLEET_WEBHOOK_PROXY_COUNT says how many proxies to skip).

    Also django-axes' AXES_CLIENT_IP_CALLABLE: a lockout by address locks the
    client, not the proxy in front of every client.
    """
    return forwarded_address(
        remote_addr=request.META.get("REMOTE_ADDR", ""),
        forwarded_for=request.META.get("HTTP_X_FORWARDED_FOR", ""),
    )


def forwarded_address(*, remote_addr: str, forwarded_for: str = "") -> str | None:
    """The sender's address as the deployment's proxies report it.

    With FLEET_WEBHOOK_PROXY_COUNT = N > 0, each of N proxies appended the
    address it received from to X-Forwarded-For: the Nth entry from the
    right is the one the outermost proxy saw (entries left of it are the
    sender's own claims). With 0, or with fewer entries than proxies (a
    request that did not come through all of them: every entry may be the
    sender's own), the connection's address, which the sender cannot choose.
    None when it is not an IP address.
    """
    candidate = remote_addr
    proxies = settings.FLEET_WEBHOOK_PROXY_COUNT
    if proxies and forwarded_for:
        hops = [hop.strip() for hop in forwarded_for.split(",") if hop.strip()]
        if len(hops) >= proxies:
            candidate = hops[-proxies]
    return _ip_address(candidate)


@functools.lru_cache(maxsize=1024)  # senders are a few addresses, parsed once each
def _ip_address(text: str) -> str | None:
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return None
