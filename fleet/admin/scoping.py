"""What staff without the whole-fleet permission see in the admin: as managers see the
portal, only what is about the vehicles of their groups (`fleet.services.scopes`).

Every admin whose pages show a plate, an amount or a driver is one of these: its rows
scoped (`Scoped`, and what a row is about says how), or not shown at all to scoped staff
(`WholeFleetOnly`) where a row may name any vehicle. `tests/admin/test_admin_scope_walk.py`
walks every page of the admin as two staff members of disjoint groups.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.db.models import Q, QuerySet
from django.http import HttpRequest

from fleet.models import Fine, Notification, VehicleGroup
from fleet.services.scopes import VehicleScope, scope_of


class WholeFleetOnly:
    """What names any vehicle of the fleet, unread: staff without the whole-fleet
    permission (scoped like managers) do not see it."""

    def has_view_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return scope_of(request.user).whole_fleet and super().has_view_permission(  # type: ignore[misc]
            request, obj
        )

    def has_module_permission(self, request: HttpRequest) -> bool:
        return scope_of(request.user).whole_fleet and super().has_module_permission(request)  # type: ignore[misc]


class Scoped:
    """Rows about the vehicles the staff member sees: by default records that name a
    plate (`VehicleScope.records`); `scoped` says otherwise for rows about something
    that does."""

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        rows: QuerySet[Any] = super().get_queryset(request)  # type: ignore[misc]
        scope = scope_of(request.user)
        return rows if scope.whole_fleet else self.scoped(rows, scope)

    def scoped(self, rows: QuerySet[Any], scope: VehicleScope) -> QuerySet[Any]:
        return scope.records(rows)


def about_records_seen(scope: VehicleScope, *, through: str = "") -> Q:
    """Rows about a fine or a notification that `scope` sees (reached through `through`,
    a relation's path ending in `__`, or the row's own `fine` and `notification`)."""
    return Q(**{f"{through}fine__in": scope.records(Fine.objects.all()).values("pk")}) | Q(
        **{f"{through}notification__in": scope.records(Notification.objects.all()).values("pk")}
    )


def groups_held(request: HttpRequest) -> QuerySet[VehicleGroup]:
    """The vehicle groups the staff member sees and may choose: their own, or every one
    for the whole fleet."""
    return scope_of(request.user).groups(VehicleGroup.objects.all())


class GroupsScoped(Scoped):
    """Vehicle groups: scoped staff see and change their own, and make none (a new group
    may hold any vehicle: `VehicleScope.may_create_groups`)."""

    def scoped(self, rows: QuerySet[Any], scope: VehicleScope) -> QuerySet[Any]:
        return scope.groups(rows)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return scope_of(request.user).may_create_groups and super().has_add_permission(request)  # type: ignore[misc]


class AboutGroupsScoped(Scoped):
    """Rows about a vehicle group (`group`): scoped staff see those about their own groups,
    and choose among them only, so that no row they write gives another group."""

    def scoped(self, rows: QuerySet[Any], scope: VehicleScope) -> QuerySet[Any]:
        return rows.filter(group__in=scope.groups(VehicleGroup.objects.all()))

    def formfield_for_foreignkey(
        self, db_field: Any, request: HttpRequest, **kwargs: Any
    ) -> forms.ModelChoiceField[Any] | None:
        if db_field.related_model is VehicleGroup:
            kwargs["queryset"] = groups_held(request)
        field: forms.ModelChoiceField[Any] | None = super().formfield_for_foreignkey(  # type: ignore[misc]
            db_field, request, **kwargs
        )
        return field
