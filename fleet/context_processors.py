"""Template context shared by every page."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from fleet.services.scopes import scope_of
from portal.lib import request_ids


def fleet_environment(request: HttpRequest) -> dict[str, Any]:
    """Which Fleet environment the portal talks to, for the banner; and the part of the
    fleet the user sees (`vehicle_scope`, read only by a page that shows it)."""
    return {
        "fleet_environment": settings.FLEET_ENVIRONMENT,
        "vehicle_scope": SimpleLazyObject(lambda: scope_of(request.user)),
    }


def request_code(request: HttpRequest) -> dict[str, Any]:
    """The request's id, which a page that reports a failure shows (`_request_code.html`)."""
    return {"request_code": request_ids.current()}
