"""`manage.py fine_tallies`: are the dashboard's tallies what the fines sum up to?"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from fleet.services.tallies import (
    fine_tallies_differences,
    fine_tallies_rebuild,
    group_tallies_catch_up,
    group_tallies_differences,
)

_LISTED = 20


class Command(BaseCommand):
    help = (
        "Compare the dashboard's tallies of fines with the sums computed from scratch over "
        "the fines, and list those that differ (exit status 1 if any); with --rebuild, "
        "recompute them all from the fines (counted in a snapshot: writers of fines never "
        "wait for it). Each vehicle group's tallies too."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--rebuild",
            action="store_true",
            help="Recompute every tally from the fines (after loading fines past the ORM).",
        )
        parser.add_argument(
            "--groups",
            action="store_true",
            help=(
                "Count the tallies of the vehicle groups whose plates changed since they were "
                "counted (what the worker does after such a change)."
            ),
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["groups"]:
            count = group_tallies_catch_up()
            self.stdout.write(self.style.SUCCESS(f"Counted the tallies of {count} groups."))
            return
        if options["rebuild"]:
            count = fine_tallies_rebuild()
            self.stdout.write(self.style.SUCCESS(f"Recomputed the tallies: {count} count fines."))
            return
        differences = {
            (dimension, key): sums for (dimension, key), sums in fine_tallies_differences().items()
        } | {
            (f"{dimension} (vehicle group {group})", key): sums
            for (group, dimension, key), sums in group_tallies_differences().items()
        }
        for (dimension, key), (stored, counted) in list(differences.items())[:_LISTED]:
            self.stdout.write(
                f"{dimension} {key or '-'}: stored {stored[0]} fines, {stored[1]} cents; "
                f"the fines sum up to {counted[0]} fines, {counted[1]} cents"
            )
        if differences:
            raise CommandError(
                f"{len(differences)} tallies differ from the fines: run "
                "`manage.py fine_tallies --rebuild`"
            )
        self.stdout.write(self.style.SUCCESS("The tallies are what the fines sum up to."))
