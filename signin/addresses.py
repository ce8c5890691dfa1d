"""The address a request came from, as the deployment's proxies report it."""

from __future__ import annotations

from django.http import HttpRequest

from fleet.webhooks.receive import webhook_source_address


def client_address(request: HttpRequest) -> str | None:
    """The client's IP address (FLEET_WEBHOOK_PROXY_COUNT says how many proxies to skip).

    Also django-axes' AXES_CLIENT_IP_CALLABLE: a lockout by address locks the
    client, not the proxy in front of every client.
    """
    return webhook_source_address(
        remote_addr=request.META.get("REMOTE_ADDR", ""),
        forwarded_for=request.META.get("HTTP_X_FORWARDED_FOR", ""),
    )
