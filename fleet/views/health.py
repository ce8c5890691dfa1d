"""Liveness endpoint for load balancers and `make run`'s start-up wait."""

from __future__ import annotations

import ipaddress

from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from fleet.services.health import health_check

# Headers a reverse proxy adds when it relays a request (RFC 7239 and the customary ones).
_RELAYED = ("HTTP_FORWARDED", "HTTP_X_FORWARDED_FOR", "HTTP_X_REAL_IP")


@require_GET
@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    """`{"status": "ok"}` (200) or `{"status": "error"}` (503); which dependency
    failed (`checks`) only for staff users and for requests from this machine.

    Which parts the portal runs on is no business of the internet's. "From this
    machine" means the connection comes from a loopback address *and* carries
    no proxy's forwarding header: behind a reverse proxy on the same host,
    REMOTE_ADDR is the proxy's loopback address for every caller, so a relayed
    request counts as remote, whoever sent it. Forwarded addresses are not
    trusted for this (they can be forged past a misconfigured proxy); an operator
    reads the detail on the host itself (`curl` to gunicorn's own address) or
    signed in as staff.
    """
    checks = health_check()
    healthy = all(state == "ok" for state in checks.values())
    body: dict[str, object] = {"status": "ok" if healthy else "error"}
    if request.user.is_staff or _is_local(request):
        body["checks"] = checks
    return JsonResponse(body, status=200 if healthy else 503)


def _is_local(request: HttpRequest) -> bool:
    if any(request.META.get(header) for header in _RELAYED):
        return False
    try:
        address = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped  # ::ffff:127.0.0.1 from a dual-stack socket
    return address.is_loopback
