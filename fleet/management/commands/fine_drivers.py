"""`manage.py fine_drivers --recompute [--since DATE]`: attribute the fines again from the
history of who had each vehicle (`fleet.services.attribution.fine_drivers_recompute`),
the drivers people set by hand kept; prints how many fines changed."""

from __future__ import annotations

from datetime import date, datetime, time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from fleet.services.attribution import fine_drivers_recompute


class Command(BaseCommand):
    help = "Attribute fines to who was driving again, from the history (corrections kept)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--recompute",
            action="store_true",
            help="attribute again every fine the history covers",
        )
        parser.add_argument(
            "--since", help="only the fines committed on or after this day (YYYY-MM-DD)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if not options["recompute"]:
            raise CommandError("say what to do: --recompute")
        since = None
        if options["since"]:
            try:
                day = date.fromisoformat(options["since"])
            except ValueError:
                raise CommandError("--since takes a day as YYYY-MM-DD") from None
            since = timezone.make_aware(datetime.combine(day, time()))
        changed = fine_drivers_recompute(since=since)
        self.stdout.write(f"{changed} fine(s) changed driver or how it is known.")
