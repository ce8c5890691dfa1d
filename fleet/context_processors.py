"""Template context shared by every page."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest


def fleet_environment(request: HttpRequest) -> dict[str, str]:
    """Which Fleet environment the portal talks to, for the banner."""
    return {"fleet_environment": settings.FLEET_ENVIRONMENT}
