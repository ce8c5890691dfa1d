"""Changes of who sees what, wherever they are made (the admin, a shell, a service):
each counts a new version of the vehicle scopes (`fleet.services.scopes.scopes_changed`).
A person whose access a provider refused leaves the vehicle groups that provider gave; a
person's groups at a provider (a sign-in's claim, SCIM's push) give theirs.
A driver's name, saved, has its words indexed for the pickers (`driver_words_write`).

Writes in bulk send no signal: the services that make them count the change themselves.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Group, Permission, User
from django.db.models.signals import m2m_changed, post_delete, post_save

from fleet.models import Driver, VehicleGroup, VehicleGroupMember
from fleet.services.drivers import driver_names_changed, driver_words_write
from fleet.services.scopes import directory_groups_apply, scopes_changed
from portal.lib.identity import access_refused, directory_groups_asserted

_UID = "fleet.scopes"


def _changed(sender: Any, **kwargs: Any) -> None:
    if kwargs.get("raw"):
        return  # loading a fixture
    action = kwargs.get("action")
    if action is not None and not action.startswith("post_"):
        return  # m2m_changed: only once it is done
    scopes_changed()


def _user_saved(sender: Any, update_fields: Any = None, raw: bool = False, **kwargs: Any) -> None:
    # A sign-in writes `last_login` alone: it changes nobody's scope.
    if raw or (update_fields is not None and set(update_fields) <= {"last_login"}):
        return
    scopes_changed()


def _access_refused(sender: Any, *, user: User, provider: str = "", **kwargs: Any) -> None:
    """The provider no longer vouches for the person: nor for their groups there."""
    if provider:
        directory_groups_apply(user=user, provider=provider, values=())


def _directory_groups(
    sender: Any, *, user: User, provider: str, values: Any, **kwargs: Any
) -> None:
    """Sign-in heard which of the provider's groups the person is in: the vehicle groups
    those give, theirs."""
    directory_groups_apply(user=user, provider=provider, values=values)


def _driver_saved(sender: Any, instance: Driver, raw: bool = False, **kwargs: Any) -> None:
    driver_words_write([instance])


def _driver_removed(sender: Any, **kwargs: Any) -> None:
    driver_names_changed()


def connect() -> None:
    for model in (VehicleGroup, VehicleGroupMember):
        post_save.connect(_changed, sender=model, dispatch_uid=f"{_UID}.save.{model.__name__}")
    for deleted in (VehicleGroup, VehicleGroupMember, Group, Permission, User):
        post_delete.connect(
            _changed, sender=deleted, dispatch_uid=f"{_UID}.delete.{deleted.__name__}"
        )
    for through in (User.groups.through, User.user_permissions.through, Group.permissions.through):
        m2m_changed.connect(_changed, sender=through, dispatch_uid=f"{_UID}.m2m.{through.__name__}")
    post_save.connect(_user_saved, sender=User, dispatch_uid=f"{_UID}.user")
    access_refused.connect(_access_refused, dispatch_uid=f"{_UID}.refused")
    directory_groups_asserted.connect(_directory_groups, dispatch_uid=f"{_UID}.directory")
    post_save.connect(_driver_saved, sender=Driver, dispatch_uid="fleet.drivers.words")
    post_delete.connect(_driver_removed, sender=Driver, dispatch_uid="fleet.drivers.removed")
