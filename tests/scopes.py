"""Who sees which vehicles, for the tests: the whole-fleet permission given by hand."""

from __future__ import annotations

from typing import Any


def grant_whole_fleet(user: Any) -> Any:
    """Give `user` the whole-fleet permission (fleet.services.scopes), as the "Whole fleet"
    group of users does: without it, and without vehicle groups, a user sees nothing and
    hears of nothing (no alerts)."""
    from django.contrib.auth.models import Permission

    from fleet.models import WHOLE_FLEET_PERMISSION

    app_label, codename = WHOLE_FLEET_PERMISSION.split(".")
    user.user_permissions.add(
        Permission.objects.get(content_type__app_label=app_label, codename=codename)
    )
    return user
