"""Staff limited to a part of the organisation, in every app's admin.

Which staff are limited, and which people are theirs, is the fleet's to say (its vehicle
scopes: a staff member without the whole fleet sees their vehicle groups only); it tells
here when its app is ready (`admin_limits_set`), and sign-in's, the alerts' and the
platform's admins ask here, so that no app imports another.

A limited staff member administers what is about their part alone: the rows each app
scopes, and the people of their part (`people_administered`). What concerns the whole
organisation (identity providers, provisioning, groups of users and their permissions,
audit trails, the task queue) is not shown to them, nor changed by them
(`UnlimitedOnly`). Until the fleet has told, only superusers are unlimited.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet
from django.http import HttpRequest


@dataclass(frozen=True, slots=True)
class AdminLimits:
    # Whether the request's staff member administers the whole organisation.
    unlimited: Callable[[HttpRequest], bool]
    # The people of a queryset of users the request's staff member administers.
    people: Callable[[HttpRequest, QuerySet[Any]], QuerySet[Any]]


_limits: list[AdminLimits] = []


def admin_limits_set(limits: AdminLimits) -> None:
    """The fleet's rules (its app's `ready()`; again: replaced)."""
    _limits[:] = [limits]


def staff_unlimited(request: HttpRequest) -> bool:
    """Whether the request's staff member administers the whole organisation."""
    if not _limits:
        return bool(request.user.is_superuser)
    return _limits[0].unlimited(request)


def people_administered(request: HttpRequest, users: QuerySet[Any]) -> QuerySet[Any]:
    """The people of `users` the request's staff member administers: all of them for
    those unlimited."""
    if not _limits:
        return users if request.user.is_superuser else users.none()
    return _limits[0].people(request, users)


class UnlimitedOnly:
    """What concerns the whole organisation: staff limited to a part of it neither see it
    nor change it, whatever their permissions."""

    def has_module_permission(self, request: HttpRequest) -> bool:
        return staff_unlimited(request) and super().has_module_permission(request)  # type: ignore[misc]

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return staff_unlimited(request) and super().has_view_permission(request, obj)  # type: ignore[misc]

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return staff_unlimited(request) and super().has_add_permission(request, *args)  # type: ignore[misc]

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return staff_unlimited(request) and super().has_change_permission(request, obj)  # type: ignore[misc]

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return staff_unlimited(request) and super().has_delete_permission(request, obj)  # type: ignore[misc]
