"""The one way alerts leave the portal over HTTP: POSTing to webhook subscriptions.

Explicit timeouts, no redirects followed (a redirect could point anywhere),
and only to http(s) addresses that resolve to public IP addresses unless
ALERTS_WEBHOOK_ALLOW_PRIVATE says otherwise: a subscription must not turn
the portal into a way to reach the loopback, the private network or a cloud
metadata service (SSRF). The address is checked when the subscription is
made and again before each POST; a name that resolves differently between
the check and the connection (DNS rebinding) is not caught, which is why
production leaves private addresses off.
"""

from __future__ import annotations

import ipaddress
import socket
import time
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

import requests
from django.conf import settings
from django.utils.translation import gettext as _

USER_AGENT: Final = "FleetPortal-Alerts/1.0"


class WebhookAddressRefused(ValueError):
    """The address is not one the portal posts to; the message says why, for a person."""


@dataclass(frozen=True, slots=True)
class PostOutcome:
    status_code: int | None
    error: str
    duration_ms: int

    @property
    def ok(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


def webhook_address_check(url: str) -> None:
    """`WebhookAddressRefused` unless the portal may POST to `url`."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise WebhookAddressRefused(_("The address must start with https:// (or http://)."))
    if parts.username or parts.password:
        raise WebhookAddressRefused(_("The address must not hold a user name or password."))
    if settings.ALERTS_WEBHOOK_ALLOW_PRIVATE:
        return
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        found = socket.getaddrinfo(parts.hostname, port, proto=socket.IPPROTO_TCP)
    except (OSError, ValueError):
        raise WebhookAddressRefused(_("The address's host name could not be found.")) from None
    for *_rest, sockaddr in found:
        address = ipaddress.ip_address(str(sockaddr[0]).partition("%")[0])
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
            address = address.ipv4_mapped
        if not address.is_global or address.is_multicast:
            raise WebhookAddressRefused(
                _("The address leads to a private, loopback or reserved network address.")
            )


def webhook_post(*, url: str, body: bytes, headers: dict[str, str]) -> PostOutcome:
    """POST `body` to `url`; what came back (never raises for the receiver's failures)."""
    started = time.monotonic()
    try:
        webhook_address_check(url)
        response = requests.post(
            url,
            data=body,
            headers=headers | {"user-agent": USER_AGENT},
            timeout=(5.0, settings.ALERTS_WEBHOOK_TIMEOUT),
            allow_redirects=False,
        )
        response.close()
        status_code: int | None = response.status_code
        error = "" if 200 <= response.status_code < 300 else f"answered {response.status_code}"
    except WebhookAddressRefused as refused:
        status_code, error = None, f"refused: {refused}"
    except requests.RequestException as failure:
        status_code, error = None, f"{type(failure).__name__}: {failure}"[:500]
    elapsed = round((time.monotonic() - started) * 1000)
    return PostOutcome(status_code=status_code, error=error, duration_ms=elapsed)
