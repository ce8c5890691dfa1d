"""Liveness endpoint for load balancers and `make run`'s start-up wait."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from fleet.services.health import health_check


@require_GET
@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    checks = health_check()
    healthy = all(state == "ok" for state in checks.values())
    return JsonResponse(
        {"status": "ok" if healthy else "error", "checks": checks},
        status=200 if healthy else 503,
    )
