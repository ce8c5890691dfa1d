"""Who sees which vehicles: a user's scope, the union of their vehicle groups.

A user with the whole-fleet permission (`fleet.view_whole_fleet`: given to users or to
groups of users in the admin; superusers have every permission) sees the whole fleet,
vehicles in no group and records without a plate too. Anyone else, staff included,
sees the vehicles of their groups and the records that name them, whichever plate
(old or Mercosul) they name them by: a group holds registrations
(`plates.registration`), as the records do.

Every page reads the scope of its user once (`scope_of`, kept on the user object for
the request). Each process keeps the scopes it read under the version of who sees
what (`ScopeVersion`, one row, counted up by every change of a permission, a group of
users, a vehicle group or its members: `scopes_changed`, from the signals of
`fleet.signals` and the services that write in bulk), so that a page costs one small
query for it, and a change shows at the next page. The registrations are read only
where a page needs them, from this process's memory or the cache, keyed by the
groups and their revisions.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Any, Final

from django.contrib.auth.models import AnonymousUser, Permission, User
from django.core.cache import cache
from django.db import transaction
from django.db.models import Exists, F, Model, OuterRef, Q, QuerySet

from fleet import plates
from fleet.models import (
    WHOLE_FLEET_PERMISSION,
    CrlvRequestVehicle,
    DirectoryGroup,
    Driver,
    DriverBasis,
    DriverSpan,
    Fine,
    Notification,
    ScopeVersion,
    VehicleGroup,
    VehicleGroupMember,
    VehicleGroupPlate,
)
from fleet.services.tallies import fine_tallies_touch
from fleet.services.vehicle_index import Within
from portal.lib import worker
from portal.lib.bounded import bounded_put

_KEPT: Final = 64  # scopes' registrations this process keeps
_USERS_KEPT: Final = 4096  # users' scopes this process keeps, under the scopes' version
_CACHE_SECONDS: Final = 3600
_ATTRIBUTE: Final = "_fleet_vehicle_scope"

_registrations: dict[str, frozenset[str]] = {}
_scopes: dict[tuple[int, int], VehicleScope] = {}
_lock = threading.Lock()


@dataclass(frozen=True, slots=True)
class VehicleScope:
    """The vehicles a user sees: the whole fleet, or those of `group_ids` (maybe none)."""

    whole_fleet: bool
    group_ids: tuple[int, ...] = ()
    group_names: tuple[str, ...] = ()
    # Says which registrations the scope holds: the groups and their revisions.
    key: str = field(default="", compare=False)

    @property
    def empty(self) -> bool:
        return not self.whole_fleet and not self.group_ids

    def registrations(self) -> frozenset[str]:
        """The registrations of the scope's vehicles; `whole_fleet` holds them all (not listed)."""
        if self.whole_fleet:
            raise ValueError("the whole fleet's registrations are not listed")
        return _registrations_of(self.key, self.group_ids)

    def covers(self, registration: str) -> bool:
        """Whether a vehicle or record with this registration (or plate, either format) is
        in the scope; a record without a plate is the whole fleet's alone."""
        if self.whole_fleet:
            return True
        return bool(registration) and plates.registration(registration) in self.registrations()

    @property
    def may_create_groups(self) -> bool:
        """Whether the scope may make vehicle groups: a new group may hold any vehicle,
        so making one is the whole fleet's."""
        return self.whole_fleet

    def groups(self, groups: QuerySet[VehicleGroup]) -> QuerySet[VehicleGroup]:
        """The groups of `groups` the scope holds: its own, every one for the whole fleet."""
        return groups if self.whole_fleet else groups.filter(pk__in=self.group_ids)

    def records[M: Model](self, records: QuerySet[M], *, walked: bool = False) -> QuerySet[M]:
        """`records` (of a model with a `registration`) that the scope sees.

        By default the database finds them by their plates, then orders them all: right
        for a part of the fleet with few records. `walked`: each record, in the order an
        index gives them, is checked against the scope's plates, and a page stops at
        its last: right for a part holding many (`fleet.services.fines`)."""
        if self.whole_fleet:
            return records
        if not self.group_ids:
            return records.none()
        plates_of = VehicleGroupPlate.objects.filter(group_id__in=self.group_ids)
        if walked:
            return records.filter(Exists(plates_of.filter(registration=OuterRef("registration"))))
        # `exclude`: the records' index of plates holds only the records that name one.
        return records.exclude(registration="").filter(
            registration__in=plates_of.values("registration")
        )


WHOLE_FLEET: Final = VehicleScope(whole_fleet=True, key="whole")
NOTHING: Final = VehicleScope(whole_fleet=False, key="none")


def scope_of(user: User | AnonymousUser) -> VehicleScope:
    """What `user` sees; read once per user object (a request's)."""
    found: VehicleScope | None = getattr(user, _ATTRIBUTE, None)
    if found is None:
        found = _scope_read(user)
        setattr(user, _ATTRIBUTE, found)
    return found


def _scope_read(user: User | AnonymousUser) -> VehicleScope:
    if not user.is_authenticated or not user.is_active:
        return NOTHING
    if user.is_superuser:
        return WHOLE_FLEET
    version = _version_now()
    found = _scopes.get((user.pk, version))
    if found is None:
        found = _scope_of_user(user)
        with _lock:
            bounded_put(_scopes, (user.pk, version), found, size=_USERS_KEPT)
    return found


def _version_now() -> int:
    return next(iter(ScopeVersion.objects.filter(pk=1).values_list("value", flat=True)), 0)


def scopes_changed() -> None:
    """Count a change of who sees what: every process reads the scopes again. Counted in
    the transaction of the change, after it, so that a reader who finds the new version
    finds the change too."""
    if not ScopeVersion.objects.filter(pk=1).update(value=F("value") + 1):
        ScopeVersion.objects.get_or_create(pk=1, defaults={"value": 1})


def _scope_of_user(user: User) -> VehicleScope:
    if user.has_perm(WHOLE_FLEET_PERMISSION):
        return WHOLE_FLEET
    return _scope_of(VehicleGroup.objects.filter(members__user=user).distinct())


def scope_of_groups(group_ids: Iterable[int]) -> VehicleScope:
    """The scope of the vehicle groups `group_ids` as they are now (those that still
    exist): what a background task reads for the part of the fleet a page asked about,
    under the same key as its user's scope while the groups are unchanged."""
    return _scope_of(VehicleGroup.objects.filter(pk__in=list(group_ids)))


def _scope_of(found: QuerySet[VehicleGroup]) -> VehicleScope:
    groups = list(found.order_by("name").values_list("pk", "name", "revision", "created_at"))
    if not groups:
        return NOTHING
    by_id = sorted((pk, _version(revision, made)) for pk, _name, revision, made in groups)
    return VehicleScope(
        whole_fleet=False,
        group_ids=tuple(pk for pk, _name, _revision, _made in groups),  # by name, as the names
        group_names=tuple(name for _pk, name, _revision, _made in groups),
        key="groups:" + ",".join(f"{pk}.{version}" for pk, version in by_id),
    )


def _version(revision: int, created_at: datetime) -> str:
    """A group's version: its revision, and when it was made (a database may give a new
    group the id of one deleted, whose registrations the cache may still hold)."""
    return f"{revision}.{created_at.timestamp():.6f}"


def scopes_forget_all() -> None:
    """Forget the scopes and registrations this process keeps (a database emptied)."""
    with _lock:
        _scopes.clear()
        _registrations.clear()


def scope_forget(user: User) -> None:
    """Have `user`'s scope read again, here and in every process (after a change of their
    groups or permissions)."""
    if hasattr(user, _ATTRIBUTE):
        delattr(user, _ATTRIBUTE)
    for cached in ("_perm_cache", "_user_perm_cache", "_group_perm_cache"):
        if hasattr(user, cached):
            delattr(user, cached)
    scopes_changed()


def _registrations_of(key: str, group_ids: tuple[int, ...]) -> frozenset[str]:
    found = _registrations.get(key)
    if found is not None:
        return found
    cache_key = "fleet:scope:" + hashlib.sha256(key.encode()).hexdigest()[:32]
    cached = cache.get(cache_key)
    if isinstance(cached, frozenset):
        found = cached
    else:
        found = frozenset(
            VehicleGroupPlate.objects.filter(group_id__in=group_ids)
            .values_list("registration", flat=True)
            .distinct()
        )
        cache.set(cache_key, found, timeout=_CACHE_SECONDS)
    with _lock:
        bounded_put(_registrations, key, found, size=_KEPT)
    return found


def grouped_key() -> str:
    """Changes whenever the set of vehicles in some group may have changed."""
    groups = list(VehicleGroup.objects.order_by("pk").values_list("pk", "revision", "created_at"))
    digest = hashlib.sha256(repr(groups).encode()).hexdigest()[:32]
    return f"grouped:{digest}"


def grouped_registrations(key: str) -> frozenset[str]:
    """The registrations of every vehicle in some group (for `key`, `grouped_key()`)."""
    found = _registrations.get(key)
    if found is None:
        found = frozenset(
            VehicleGroupPlate.objects.values_list("registration", flat=True).distinct()
        )
        with _lock:
            bounded_put(_registrations, key, found, size=_KEPT)
    return found


def vehicle_groups_changed(group_ids: Iterable[int]) -> None:
    """Count a change of these groups' plates, in the caller's transaction that made it:
    their members' scopes are read again, and their tallies are counted again by the
    worker once it commits (until then their dashboards sum their fines). It takes the
    tallies' lock, which the writers of fines hold while they read the groups of a
    fine's vehicle (`fleet.services.tallies`): they see the plates before or after."""
    wanted = list(group_ids)
    if wanted:
        fine_tallies_touch()
        VehicleGroup.objects.filter(pk__in=wanted).update(revision=F("revision") + 1)
        transaction.on_commit(partial(worker.enqueue_unless_waiting, "group_tallies_catch_up"))
    scopes_changed()


def directory_groups_apply(*, user: User, provider: str, values: Iterable[str]) -> None:
    """Put `user` in the vehicle groups `provider` maps `values` (its groups claim) to, and
    out of the others that provider gave; groups given by hand stay as they are."""
    wanted = set(
        DirectoryGroup.objects.filter(provider=provider, value__in=set(values)).values_list(
            "group_id", flat=True
        )
    )
    with transaction.atomic():
        given = VehicleGroupMember.objects.filter(user=user, provider=provider)
        removed, _by_model = given.exclude(group_id__in=wanted).delete()
        added = wanted - set(given.values_list("group_id", flat=True))
        VehicleGroupMember.objects.bulk_create(
            [
                VehicleGroupMember(user=user, group_id=group, provider=provider)
                for group in sorted(added)
            ],
            ignore_conflicts=True,
        )
    if removed or added:  # a sign-in that changes nothing keeps every process's scopes
        scope_forget(user)


def scope_people(scope: VehicleScope, users: QuerySet[User]) -> QuerySet[User]:
    """The people of `users` staff of `scope` administer: everyone, for the whole fleet;
    otherwise those who see no more than the scope and hold no rights of their own (not
    staff, not superusers, without the whole-fleet permission, in no vehicle group but
    the scope's), so that nothing done to one of them reaches another group."""
    if scope.whole_fleet:
        return users
    app_label, codename = WHOLE_FLEET_PERMISSION.split(".")
    permission = {"content_type__app_label": app_label, "codename": codename}
    more = User.objects.filter(
        Q(is_staff=True)
        | Q(is_superuser=True)
        | Q(user_permissions__in=Permission.objects.filter(**permission))
        | Q(groups__permissions__in=Permission.objects.filter(**permission))
    )
    elsewhere = VehicleGroupMember.objects.exclude(group_id__in=scope.group_ids)
    return users.exclude(pk__in=more.values("pk")).exclude(pk__in=elsewhere.values("user_id"))


def scope_within(scope: VehicleScope, group: str = "") -> Within | None:
    """The part of the vehicle list `scope` shows, narrowed to one of its groups (`group`:
    its id) or, for the whole fleet, to the vehicles in no group (`group="none"`); None
    for the whole list. A group the scope does not hold is ignored."""
    if scope.whole_fleet:
        if group == "none":
            key = grouped_key()
            return Within(key=key, registrations=grouped_registrations(key), inside=False)
        one = _group_scope(group)
        return None if one is None else Within(one.key, one.registrations())
    if group.isdigit() and int(group) in scope.group_ids:
        one = _group_scope(group)
        if one is not None:
            return Within(one.key, one.registrations())
    return Within(scope.key, frozenset() if scope.empty else scope.registrations())


def scope_narrowed(scope: VehicleScope, group: str = "") -> VehicleScope:
    """`scope` narrowed to one of its vehicle groups (`group`: its id), or every group for
    the whole fleet; `scope` itself for no group, or one it does not hold."""
    if not group or not (scope.whole_fleet or (group.isdigit() and int(group) in scope.group_ids)):
        return scope
    return _group_scope(group) or scope


def _group_scope(group: str) -> VehicleScope | None:
    if not group.isdigit() or len(group) > 10:
        return None
    found = VehicleGroup.objects.filter(pk=int(group)).values_list(
        "pk", "name", "revision", "created_at"
    )
    for pk, name, revision, made in found:
        return VehicleScope(
            whole_fleet=False,
            group_ids=(pk,),
            group_names=(name,),
            key=f"groups:{pk}.{_version(revision, made)}",
        )
    return None


def scope_groups(scope: VehicleScope) -> list[tuple[int, str]]:
    """The groups a page may narrow `scope` to: its own, or every group for the whole fleet."""
    if scope.whole_fleet:
        return list(VehicleGroup.objects.order_by("name").values_list("pk", "name"))
    return list(zip(scope.group_ids, scope.group_names, strict=True))


def scope_sees(scope: VehicleScope, page: str, arguments: Mapping[str, Any]) -> bool:
    """Whether `scope` sees what the portal page `page` (a URL name and its arguments) is
    about: a vehicle, a fine, a notification, a driver or an e-CRLV request. Pages about
    none of these are seen."""
    if scope.whole_fleet:
        return True
    if "plate" in arguments:
        return scope.covers(str(arguments["plate"]))
    records: QuerySet[Any] | None = None
    if page == "fleet:fine" and "fine_id" in arguments:
        records = Fine.objects.filter(pk=arguments["fine_id"])
    elif page == "fleet:notification" and "notification_id" in arguments:
        records = Notification.objects.filter(pk=arguments["notification_id"])
    elif page == "fleet:driver":
        driver_id = arguments.get("driver_id")
        return isinstance(driver_id, int) and driver_seen(scope, driver_id)
    elif "request_id" in arguments:
        records = CrlvRequestVehicle.objects.filter(request_id=str(arguments["request_id"]))
    return records is None or scope.records(records).exists()


def scope_drivers(scope: VehicleScope, driver_id: Any) -> Q:
    """The condition that `scope` sees the driver `driver_id` (an `OuterRef` to a driver
    id, or a value): see `driver_seen`."""
    found = Q(pk__in=[])
    for rows in _driver_sources(scope, driver_id):
        found |= Q(Exists(rows))
    return found


def driver_seen(scope: VehicleScope, driver_id: int) -> bool:
    """Whether `scope` sees driver `driver_id`: the history had them drive one of its
    vehicles, or a fine of its vehicles is theirs by the history or the vehicle list. A
    fine set to them by a person does not count: a correction names a driver its author
    sees already, and cannot open another group's driver to them. The whole fleet sees
    every driver the portal knows (named, in the history or on a fine)."""
    return any(rows.exists() for rows in _driver_sources(scope, driver_id))


def _driver_sources(scope: VehicleScope, driver_id: Any) -> list[QuerySet[Any]]:
    spans = DriverSpan.objects.filter(driver_id=driver_id)
    fines = Fine.objects.filter(driver_id=driver_id)
    if scope.whole_fleet:
        return [Driver.objects.filter(driver_id=driver_id), spans, fines]
    if scope.empty:
        return []
    # By the driver's index first: a driver drove a few vehicles, a region holds thousands.
    by_history = fines.exclude(driver_basis=DriverBasis.MANUAL)
    return [scope.records(spans, walked=True), scope.records(by_history, walked=True)]
