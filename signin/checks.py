"""System checks of the sign-in configuration."""

from __future__ import annotations

from typing import Any, cast

from django.conf import settings
from django.core.checks import CheckMessage, Warning

from signin.access import AccessPolicy


def providers_let_someone_in(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """A provider from the environment without allowed domains or groups admits nobody."""
    providers = cast("dict[str, dict[str, Any]]", settings.SOCIALACCOUNT_PROVIDERS)
    apps: list[dict[str, Any]] = providers.get("openid_connect", {}).get("APPS", [])
    return [
        Warning(
            f"The identity provider {app.get('name')!r} lets nobody in.",
            hint="Set OIDC_ALLOWED_DOMAINS, OIDC_MANAGER_GROUPS or OIDC_ADMIN_GROUPS.",
            id="signin.W001",
        )
        for app in apps
        if not AccessPolicy.from_settings(app.get("settings", {})).lets_anyone_in
    ]
