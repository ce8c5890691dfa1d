"""What staff without the whole-fleet permission see and change in the admin: as managers
see the portal, only what is about the vehicles of their groups (`fleet.services.scopes`),
and the people of their groups.

Every admin is one of these: its rows scoped (`Scoped`, and what a row is about says how;
`GroupsScoped` and `AboutGroupsScoped` for vehicle groups and what gives them), about
people and scoped to those the staff member administers (`AboutPeopleAdministered`,
`people_administered`), or neither shown to scoped staff nor changed by them
(`WholeFleetOnly`) where a row may name any vehicle or concerns the whole organisation.
These rules are the platform's limits of staff too (`portal.lib.admin_limits`, told when
the fleet's app is ready), which sign-in's admins follow. `tests/admin/test_admin_scope_walk.py`
walks every page, action and added view of the admin as staff of another group.
"""

from __future__ import annotations

from typing import Any, ClassVar

from django import forms
from django.contrib.auth.models import User
from django.db.models import Q, QuerySet
from django.http import HttpRequest

from fleet.models import Fine, Notification, VehicleGroup, VehicleGroupMember
from fleet.services.scopes import VehicleScope, scope_of, scope_people
from portal.lib.admin_limits import AdminLimits, UnlimitedOnly


class WholeFleetOnly(UnlimitedOnly):
    """What names any vehicle of the fleet, or concerns the whole organisation: staff
    without the whole-fleet permission (scoped like managers) neither see it nor change
    it."""


def sees_whole_fleet(request: HttpRequest) -> bool:
    return scope_of(request.user).whole_fleet


def people_administered(request: HttpRequest, users: QuerySet[Any]) -> QuerySet[Any]:
    """The people of `users` the staff member administers (`scope_people`)."""
    return scope_people(scope_of(request.user), users)


ADMIN_LIMITS = AdminLimits(unlimited=sees_whole_fleet, people=people_administered)


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


def people_choosable(request: HttpRequest) -> QuerySet[User]:
    """The people a staff member may put in their groups: those they administer, and those
    already in one of their groups (nothing of another group comes with them)."""
    users = User.objects.all()
    members = VehicleGroupMember.objects.filter(group__in=groups_held(request))
    return users.filter(
        Q(pk__in=people_administered(request, users).values("pk"))
        | Q(pk__in=members.values("user_id"))
    )


class AboutPeopleAdministered:
    """Rows about a person (`person`, a foreign key to a user): scoped staff see those about
    the people they administer, and choose among those only."""

    person: ClassVar[str] = "user"

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        rows: QuerySet[Any] = super().get_queryset(request)  # type: ignore[misc]
        if scope_of(request.user).whole_fleet:
            return rows
        people = people_administered(request, User.objects.all())
        return rows.filter(**{f"{self.person}__in": people})

    def formfield_for_foreignkey(
        self, db_field: Any, request: HttpRequest, **kwargs: Any
    ) -> forms.ModelChoiceField[Any] | None:
        if db_field.name == self.person:
            kwargs["queryset"] = people_administered(request, User.objects.all())
        field: forms.ModelChoiceField[Any] | None = super().formfield_for_foreignkey(  # type: ignore[misc]
            db_field, request, **kwargs
        )
        return field
