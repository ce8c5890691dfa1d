"""`manage.py driver_licences --older-than DAYS --as USERNAME`: have the worker look up the
licence of every driver with a CPF last looked up more than DAYS days ago, or never
(`fleet.services.driver_licences.driver_licences_batch_start`), as USERNAME's lookups:
their daily limit, their history. Prints how many drivers are due now."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError, CommandParser

from fleet.services.driver_licences import driver_licences_batch_start, driver_licences_count


class Command(BaseCommand):
    help = "Look up again, in the worker, the licences of the drivers not looked up for DAYS days."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--older-than",
            type=int,
            required=True,
            metavar="DAYS",
            help="drivers whose licence was last looked up more than DAYS days ago, or never",
        )
        parser.add_argument(
            "--as",
            dest="username",
            required=True,
            metavar="USERNAME",
            help="the user the lookups are made for (their daily limit, their history)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        days = options["older_than"]
        if days < 0:
            raise CommandError("--older-than takes a number of days, 0 or more")
        user = User.objects.filter(username=options["username"], is_active=True).first()
        if user is None:
            raise CommandError(f"no active user {options['username']!r}")
        before = driver_licences_batch_start(user=user, older_than_days=days)
        due = driver_licences_count(before=before)
        self.stdout.write(
            f"{due} driver(s) with a CPF not looked up since {before:%Y-%m-%d %H:%M} UTC: the "
            f"worker looks them up as {user.get_username()}, one batch lookup at a time."
        )
