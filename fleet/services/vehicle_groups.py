"""Vehicle groups kept by hand: plates imported from a list or a CSV, and members given and taken.

An import never fails for a bad line: it writes the lines it can read and reports the
others by number, so that a list of thousands of plates with one typo needs one fix,
not a second upload of everything. Only an input too large to read, as a whole, is
refused before anything is written. Plates are stored as registrations
(`plates.registration`): a vehicle listed under its old and its Mercosul plate is one.
Every change of a group's plates goes through here, and counts a revision of the group
(`scopes.vehicle_groups_changed`) so that its members see it at their next page.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import batched
from typing import Final

from django.contrib.auth.models import Permission, User
from django.db import transaction
from django.db.models import Count
from django.utils.translation import gettext, ngettext

from fleet import plates
from fleet.models import WHOLE_FLEET_PERMISSION, VehicleGroup, VehicleGroupMember, VehicleGroupPlate
from fleet.services.scopes import WHOLE_FLEET, VehicleScope, scope_forget, vehicle_groups_changed
from fleet.services.vehicles import fleet_registrations
from portal.lib.spreadsheets import ANY_DELIMITER, NotText, delimiter_of, spreadsheet_text

MAX_LINES: Final = 200_000
MAX_CHARACTERS: Final = 8 * 1024 * 1024
_LINE_LONGEST: Final = 400
_SHOWN: Final = 60  # characters of a refused line shown back
_BATCH: Final = 1000
_NAME_LONGEST: Final = VehicleGroup._meta.get_field("name").max_length or 100
# A first line of these cells is a header, not a vehicle (in English or Portuguese).
_HEADER_PLATE: Final = frozenset({"plate", "placa"})
_HEADER_GROUP: Final = frozenset({"group", "grupo"})


class VehicleGroupImportError(ValueError):
    """The input as a whole cannot be imported (too large, not text): nothing was written."""


class VehicleGroupsUnknown(LookupError):
    """Names that are no vehicle group's."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = list(names)
        super().__init__(
            ngettext(
                "There is no vehicle group named %(names)s.",
                "There are no vehicle groups named %(names)s.",
                len(self.names),
            )
            % {"names": ", ".join(f"“{name}”" for name in self.names)}
        )


@dataclass(frozen=True, slots=True)
class RefusedLine:
    number: int  # 1-based, as an editor shows it
    text: str  # shortened
    reason: str


@dataclass(slots=True)
class ImportReport:
    groups_created: list[str] = field(default_factory=list)
    plates_added: int = 0
    already_present: int = 0  # in their group before the import
    duplicates: int = 0  # the same vehicle and group on an earlier line
    refused: list[RefusedLine] = field(default_factory=list)
    # Plates the fleet's vehicle list does not hold (added all the same: a vehicle may be
    # listed later), by the line that first named them; None when there was no list.
    unknown: list[tuple[int, str]] | None = None


@dataclass(slots=True)
class PlateList:
    """One plate per line, read: the registrations in their order, and the refused lines."""

    registrations: list[str] = field(default_factory=list)
    refused: list[RefusedLine] = field(default_factory=list)
    duplicates: int = 0


@dataclass(frozen=True, slots=True)
class Revocation:
    removed: list[VehicleGroup]
    # Groups the user stays in through an identity provider's groups: name -> providers.
    still_given: dict[str, list[str]]
    whole_fleet_removed: bool  # the user's own permission, which they held
    # Whether the user still sees the whole fleet (a superuser, or a group of users's permission).
    still_whole_fleet: bool


@dataclass(slots=True)
class _Read:
    # A group's key (its casefolded name; "" for the one group of a plain list) -> the
    # name as first written, and its registrations in the order read.
    groups: dict[str, tuple[str, dict[str, None]]] = field(default_factory=dict)
    refused: list[RefusedLine] = field(default_factory=list)
    duplicates: int = 0
    first_line: dict[str, int] = field(default_factory=dict)  # of each registration


def vehicle_groups_import(
    lines: Iterable[str], *, group: VehicleGroup | None = None, scope: VehicleScope = WHOLE_FLEET
) -> ImportReport:
    """Add the plates of `lines` to their groups: `plate,group` rows (groups created as
    needed, by name), or one plate per line into `group`. A text stream is lines too.

    For a `scope` limited to its groups (staff without the whole fleet), a row naming a
    group that is not one of the scope's (whether it exists or not), or a vehicle the
    scope does not see, is refused: a vehicle put in one of its groups would be seen.

    Raises `VehicleGroupImportError`, before writing anything, for an input longer than
    `MAX_LINES` lines or `MAX_CHARACTERS` characters.
    """
    read = _read(lines, named=group is None, scope=scope)
    report = ImportReport(refused=read.refused, duplicates=read.duplicates)
    if not read.groups:
        return report
    listed = fleet_registrations()
    if listed is not None:
        report.unknown = sorted(
            (number, plates.display(registration))
            for registration, number in read.first_line.items()
            if registration not in listed
        )
    with transaction.atomic():
        if group is None:
            by_key, report.groups_created = _groups_resolve(
                {key: name for key, (name, _found) in read.groups.items()}
            )
        else:
            by_key = {"": group}
        wanted = {by_key[key].pk: found for key, (_name, found) in read.groups.items()}
        before = _plate_counts(wanted)
        rows = (
            VehicleGroupPlate(group_id=pk, registration=registration)
            for pk, found in wanted.items()
            for registration in found
        )
        for batch in batched(rows, _BATCH, strict=False):
            VehicleGroupPlate.objects.bulk_create(batch, ignore_conflicts=True)
        after = _plate_counts(wanted)
        changed = [pk for pk in wanted if after.get(pk, 0) != before.get(pk, 0)]
        vehicle_groups_changed(changed)
    report.plates_added = sum(after.values()) - sum(before.values())
    report.already_present = sum(len(found) for found in wanted.values()) - report.plates_added
    return report


def vehicle_groups_import_bytes(
    data: bytes, *, group: VehicleGroup | None = None, scope: VehicleScope = WHOLE_FLEET
) -> ImportReport:
    """`vehicle_groups_import` of a file's bytes: UTF-8 (with or without a byte order mark),
    or Windows-1252, as Excel saves a CSV in Brazil."""
    # Lines end at \n, \r\n or \r only (not at str.splitlines' other breaks), as an
    # editor numbers them.
    text = io.StringIO(text_decode(data), newline=None)
    return vehicle_groups_import(text, group=group, scope=scope)


def text_decode(data: bytes) -> str:
    """A list's text; `VehicleGroupImportError` for one too large, or not text at all."""
    if len(data) > MAX_CHARACTERS:
        raise VehicleGroupImportError(_too_large())
    try:
        return spreadsheet_text(data)
    except NotText:
        raise VehicleGroupImportError(
            gettext("This file is not a text file: save the list as CSV or plain text.")
        ) from None


def plate_list_read(lines: Iterable[str], *, scope: VehicleScope = WHOLE_FLEET) -> PlateList:
    """Read one plate per line (as `vehicle_groups_import` into a group for `scope`),
    writing nothing."""
    read = _read(lines, named=False, scope=scope)
    _name, found = read.groups.get("", ("", {}))
    return PlateList(registrations=list(found), refused=read.refused, duplicates=read.duplicates)


def vehicle_group_plates_remove(*, group: VehicleGroup, registrations: Iterable[str]) -> int:
    """Take these vehicles (registrations, `plates.registration`) out of `group`; how many
    were in it."""
    wanted = sorted(set(registrations))
    removed = 0
    with transaction.atomic():
        for batch in batched(wanted, _BATCH, strict=False):
            removed += VehicleGroupPlate.objects.filter(
                group=group, registration__in=batch
            ).delete()[0]
        if removed:
            vehicle_groups_changed([group.pk])
    return removed


def vehicle_groups_named(names: Iterable[str]) -> list[VehicleGroup]:
    """The groups of these names, as typed or in another case; `VehicleGroupsUnknown` lists
    those that name no group."""
    wanted = list(dict.fromkeys(" ".join(name.split()) for name in names))
    by_name = {group.name: group for group in VehicleGroup.objects.filter(name__in=wanted)}
    if missing := [name for name in wanted if name not in by_name]:
        folded = {group.name.casefold(): group for group in VehicleGroup.objects.all()}
        by_name |= {name: folded[name.casefold()] for name in missing if name.casefold() in folded}
    if unknown := [name for name in wanted if name not in by_name]:
        raise VehicleGroupsUnknown(unknown)
    return list({by_name[name].pk: by_name[name] for name in wanted}.values())


def vehicle_group_grant(
    *, user: User, groups: Iterable[VehicleGroup], whole_fleet: bool = False
) -> list[VehicleGroup]:
    """Put `user` in `groups` by hand (kept until taken out by hand), and give them the
    whole fleet if asked; the groups they were not in by hand before."""
    groups = list(groups)
    with transaction.atomic():
        held = set(
            VehicleGroupMember.objects.filter(user=user, provider="", group__in=groups).values_list(
                "group_id", flat=True
            )
        )
        added = [group for group in groups if group.pk not in held]
        VehicleGroupMember.objects.bulk_create(
            [VehicleGroupMember(user=user, group=group, provider="") for group in added],
            ignore_conflicts=True,
        )
        if whole_fleet:
            user.user_permissions.add(_whole_fleet_permission())
    _user_forget(user)
    return added


def vehicle_group_revoke(
    *, user: User, groups: Iterable[VehicleGroup], whole_fleet: bool = False
) -> Revocation:
    """Take `user` out of `groups` where they were put by hand, and take away their own
    whole-fleet permission if asked. Groups given by an identity provider stay: its next
    sign-in would give them again; the provider's groups claim decides those."""
    groups = list(groups)
    had_whole_fleet = False
    with transaction.atomic():
        hand = VehicleGroupMember.objects.filter(user=user, provider="", group__in=groups)
        removed_ids = set(hand.values_list("group_id", flat=True))
        hand.delete()
        if whole_fleet:
            permission = _whole_fleet_permission()
            had_whole_fleet = user.user_permissions.filter(pk=permission.pk).exists()
            user.user_permissions.remove(permission)
    given: dict[str, list[str]] = {}
    for name, provider in (
        VehicleGroupMember.objects.filter(user=user, group__in=groups)
        .exclude(provider="")
        .order_by("group__name", "provider")
        .values_list("group__name", "provider")
    ):
        given.setdefault(name, []).append(provider)
    _user_forget(user)
    return Revocation(
        removed=[group for group in groups if group.pk in removed_ids],
        still_given=given,
        whole_fleet_removed=had_whole_fleet,
        still_whole_fleet=user.has_perm(WHOLE_FLEET_PERMISSION),
    )


def _read(lines: Iterable[str], *, named: bool, scope: VehicleScope) -> _Read:
    """Parse `lines`: `plate,group` rows when `named`, else one plate per line; a row names
    a vehicle `scope` sees, and any group or, limited to its groups, one of those."""
    read = _Read()
    held = None if scope.may_create_groups else {name.casefold() for name in scope.group_names}
    delimiter = ""
    started = False  # a row read: a header comes first
    characters = 0
    for number, raw in enumerate(lines, start=1):
        if number > MAX_LINES:
            raise VehicleGroupImportError(_too_large())
        characters += len(raw)
        if characters > MAX_CHARACTERS:
            raise VehicleGroupImportError(_too_large())
        line = raw.removeprefix("\ufeff").rstrip("\r\n")
        if not line.strip():
            continue
        if len(line) > _LINE_LONGEST:
            read.refused.append(_refused(number, line, _reason_too_long()))
            continue
        delimiter = delimiter or delimiter_of(line) or ""
        # A plain list has no field of its own to hold a delimiter: any one ends the plate.
        cells = _cells(line, delimiter or ",") if named else ANY_DELIMITER.split(line)
        while cells and not cells[-1].strip():
            cells.pop()  # a spreadsheet's empty columns
        if not cells:
            continue
        first, started = not started, True
        if first and _is_header(cells, named=named):
            continue
        outcome = _row(cells, named=named, scope=scope, held=held)
        if isinstance(outcome, str):
            read.refused.append(_refused(number, line, outcome))
            continue
        registration, name = outcome
        read.first_line.setdefault(registration, number)
        key = name.casefold()
        found = read.groups.setdefault(key, (name, {}))[1]
        if registration in found:
            read.duplicates += 1
        else:
            found[registration] = None
    return read


def _cells(line: str, delimiter: str) -> list[str]:
    if '"' not in line:
        return line.split(delimiter)
    try:
        return next(csv.reader([line], delimiter=delimiter))
    except (csv.Error, StopIteration):
        return line.split(delimiter)


def _is_header(cells: list[str], *, named: bool) -> bool:
    words = [cell.strip().casefold() for cell in cells]
    if named:
        return len(words) == 2 and words[0] in _HEADER_PLATE and words[1] in _HEADER_GROUP
    return len(words) == 1 and words[0] in _HEADER_PLATE


def _row(
    cells: list[str], *, named: bool, scope: VehicleScope, held: set[str] | None
) -> tuple[str, str] | str:
    """(registration, group name) of a row, or the reason it is refused; `held`: the
    casefolded names of the groups it may name (None: any, made as needed)."""
    if len(cells) > (2 if named else 1):
        if named:
            return gettext("Too many fields: write the plate, then the group's name.")
        return gettext("Too many fields: write one plate per line, without a group's name.")
    plate = cells[0].strip().strip('"')
    if not plate:
        return gettext("No plate before the group's name.")
    if not plates.is_valid(plate):
        return gettext(
            "“%(plate)s” is not a plate: write it as ABC-1234 (old) or ABC1D23 (Mercosul)."
        ) % {"plate": _shortened(plate)}
    name = " ".join(cells[1].split()) if named and len(cells) > 1 else ""
    if named:
        if not name:
            return gettext("No group's name after the plate.")
        if len(name) > _NAME_LONGEST:
            return gettext("The group's name is longer than %(longest)d characters.") % {
                "longest": _NAME_LONGEST
            }
        if not name.isprintable():
            return gettext("The group's name holds characters that cannot be shown.")
        if held is not None and name.casefold() not in held:
            return gettext(
                "“%(group)s” is not one of your vehicle groups: only staff who see the whole "
                "fleet add vehicles to other groups or create groups."
            ) % {"group": _shortened(name)}
    registration = plates.registration(plate)
    if not scope.covers(registration):
        return gettext(
            "“%(plate)s” is not a vehicle of your groups: only staff who see the whole fleet "
            "add other vehicles to groups."
        ) % {"plate": _shortened(plate)}
    return registration, name


def _groups_resolve(names: dict[str, str]) -> tuple[dict[str, VehicleGroup], list[str]]:
    """The groups of these names (key: casefolded), created as needed; and those created.

    A name in another case than a group's is that group: `Frota sul` is not a new group
    beside `Frota Sul`.
    """
    existing = {group.name.casefold(): group for group in VehicleGroup.objects.all()}
    new = [name for key, name in names.items() if key not in existing]
    VehicleGroup.objects.bulk_create(
        [VehicleGroup(name=name) for name in new], ignore_conflicts=True
    )
    if new:
        existing |= {
            group.name.casefold(): group for group in VehicleGroup.objects.filter(name__in=new)
        }
    return {key: existing[key] for key in names}, sorted(new, key=str.casefold)


def _plate_counts(group_ids: Iterable[int]) -> dict[int, int]:
    counted = (
        VehicleGroupPlate.objects.filter(group_id__in=list(group_ids))
        .values("group_id")
        .annotate(count=Count("pk"))
        .values_list("group_id", "count")
    )
    return dict(counted)


def _whole_fleet_permission() -> Permission:
    app_label, codename = WHOLE_FLEET_PERMISSION.split(".")
    return Permission.objects.get(content_type__app_label=app_label, codename=codename)


def _user_forget(user: User) -> None:
    """Have `user`'s permissions and scope read again, on this object too."""
    for cache in ("_perm_cache", "_user_perm_cache", "_group_perm_cache"):
        if hasattr(user, cache):
            delattr(user, cache)
    scope_forget(user)


def _refused(number: int, line: str, reason: str) -> RefusedLine:
    return RefusedLine(number=number, text=_shortened(line), reason=reason)


def _shortened(text: str) -> str:
    return text if len(text) <= _SHOWN else f"{text[: _SHOWN - 1]}…"


def _reason_too_long() -> str:
    return gettext("The line is longer than %(longest)d characters.") % {"longest": _LINE_LONGEST}


def _too_large() -> str:
    return gettext(
        "The list is too long: at most %(lines)d lines and %(megabytes)d MB at once. "
        "Split it into smaller files."
    ) % {"lines": MAX_LINES, "megabytes": MAX_CHARACTERS // (1024 * 1024)}
