"""`manage.py vehicle_groups`: import plates into vehicle groups, and give or take them by hand."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import translation

from fleet.models import VehicleGroup
from fleet.services.vehicle_groups import (
    MAX_CHARACTERS,
    ImportReport,
    VehicleGroupImportError,
    VehicleGroupsUnknown,
    vehicle_group_grant,
    vehicle_group_revoke,
    vehicle_groups_import_bytes,
    vehicle_groups_named,
)

_UNKNOWN_LISTED = 100  # plates not in the vehicle list printed one by one


class Command(BaseCommand):
    help = (
        "Vehicle groups from the command line. `import FILE`: add the plates of a CSV of "
        "`plate,group` rows (groups created as needed), or with --group of a list of one "
        "plate per line; refused lines are listed by number and the others imported. "
        "`grant USERNAME GROUP…` and `revoke USERNAME GROUP…`: put a user in groups by hand "
        "or take them out; --whole-fleet gives or takes the permission to see the whole fleet."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
        importing = actions.add_parser(
            "import", help="Add plates to groups from a CSV file or a list (`-`: standard input)."
        )
        importing.add_argument("file", metavar="FILE")
        importing.add_argument(
            "--group",
            metavar="NAME",
            help="The file lists one plate per line, all into this existing group.",
        )
        granting = actions.add_parser("grant", help="Put a user in groups by hand.")
        revoking = actions.add_parser("revoke", help="Take a user out of groups given by hand.")
        for action, whole_fleet in (
            (
                granting,
                "Give the user the permission to see the whole fleet, vehicles in no group too.",
            ),
            (revoking, "Take the permission to see the whole fleet from the user."),
        ):
            action.add_argument("username", metavar="USERNAME")
            action.add_argument("groups", metavar="GROUP", nargs="*")
            action.add_argument("--whole-fleet", action="store_true", help=whole_fleet)

    def handle(self, *args: Any, **options: Any) -> None:
        # In English, as the rest of its output: the reasons the services give are
        # translated for the admin's pages.
        with translation.override("en"):
            self._handle(options)

    def _handle(self, options: dict[str, Any]) -> None:
        if options["action"] == "import":
            self._import(options["file"], group_name=options["group"])
            return
        user = _user(options["username"])
        if not options["groups"] and not options["whole_fleet"]:
            raise CommandError("Name one or more vehicle groups, or give --whole-fleet.")
        groups = _groups(options["groups"])
        if options["action"] == "grant":
            self._grant(user, groups, whole_fleet=options["whole_fleet"])
        else:
            self._revoke(user, groups, whole_fleet=options["whole_fleet"])

    def _import(self, file: str, *, group_name: str | None) -> None:
        group = _groups([group_name])[0] if group_name else None
        data = _read(file)
        try:
            report = vehicle_groups_import_bytes(data, group=group)
        except VehicleGroupImportError as exc:
            raise CommandError(f"{file}: {exc}") from exc
        self._report(report)

    def _report(self, report: ImportReport) -> None:
        if report.groups_created:
            self.stdout.write(
                f"Groups created: {len(report.groups_created)} ({', '.join(report.groups_created)})"
            )
        else:
            self.stdout.write("Groups created: 0")
        self.stdout.write(f"Plates added: {report.plates_added}")
        self.stdout.write(f"Plates already in their group: {report.already_present}")
        if report.duplicates:
            self.stdout.write(f"Lines repeating an earlier one: {report.duplicates}")
        self.stdout.write(f"Lines refused: {len(report.refused)}")
        for refused in report.refused:
            self.stdout.write(f"  line {refused.number}: {refused.text!r}: {refused.reason}")
        if report.unknown is None:
            self.stdout.write("Plates not in the fleet's vehicle list: not checked (no list)")
        else:
            self.stdout.write(
                f"Plates not in the fleet's vehicle list (added all the same): "
                f"{len(report.unknown)}"
            )
            for number, plate in report.unknown[:_UNKNOWN_LISTED]:
                self.stdout.write(f"  line {number}: {plate}")
            if len(report.unknown) > _UNKNOWN_LISTED:
                self.stdout.write(f"  … and {len(report.unknown) - _UNKNOWN_LISTED} more")
        style = self.style.WARNING if report.refused else self.style.SUCCESS
        self.stdout.write(style("Imported." if not report.refused else "Imported the other lines."))

    def _grant(self, user: User, groups: list[VehicleGroup], *, whole_fleet: bool) -> None:
        added = {
            group.pk
            for group in vehicle_group_grant(user=user, groups=groups, whole_fleet=whole_fleet)
        }
        for group in groups:
            done = "now in" if group.pk in added else "already in"
            self.stdout.write(f"{user.get_username()} is {done} {group.name}.")
        if whole_fleet:
            self.stdout.write(f"{user.get_username()} sees the whole fleet.")

    def _revoke(self, user: User, groups: list[VehicleGroup], *, whole_fleet: bool) -> None:
        revocation = vehicle_group_revoke(user=user, groups=groups, whole_fleet=whole_fleet)
        removed = {group.pk for group in revocation.removed}
        username = user.get_username()
        for group in groups:
            if group.pk in removed:
                self.stdout.write(f"{username} is no longer in {group.name} by hand.")
            else:
                self.stdout.write(f"{username} was not in {group.name} by hand.")
            if providers := revocation.still_given.get(group.name):
                self.stdout.write(
                    self.style.WARNING(
                        f"{username} stays in {group.name} through the groups of the identity "
                        f"provider {', '.join(providers)}: change them there, or the group's "
                        "mapping in the admin."
                    )
                )
        if whole_fleet:
            done = "no longer has" if revocation.whole_fleet_removed else "did not have"
            self.stdout.write(f"{username} {done} the permission to see the whole fleet.")
            if revocation.still_whole_fleet:
                self.stdout.write(
                    self.style.WARNING(
                        f"{username} still sees the whole fleet: a superuser, or through a "
                        "group of users that has the permission."
                    )
                )


def _user(username: str) -> User:
    try:
        user: User = get_user_model().objects.get_by_natural_key(username)
    except get_user_model().DoesNotExist as exc:
        raise CommandError(f"There is no user named {username!r}.") from exc
    return user


def _groups(names: list[str]) -> list[VehicleGroup]:
    try:
        return vehicle_groups_named(names)
    except VehicleGroupsUnknown as exc:
        raise CommandError(f"{exc} Create it in the admin (Vehicle groups) first.") from exc


def _read(file: str) -> bytes:
    """The file's bytes, at most one more than an import reads (to tell it is too large)."""
    try:
        if file == "-":
            return sys.stdin.buffer.read(MAX_CHARACTERS + 1)
        with Path(file).open("rb") as opened:
            return opened.read(MAX_CHARACTERS + 1)
    except OSError as exc:
        raise CommandError(f"Cannot read {file}: {exc.strerror or exc}") from exc
