"""`manage.py fleet_doctor`: is the portal's Fleet API configuration right?"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from fleet.services.doctor import configuration_diagnose


class Command(BaseCommand):
    help = (
        "Check the Fleet API credentials locally (the mistakes of spec section 5.3) "
        "and live (one v1 and one v2 call), and explain any failure."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--offline", action="store_true", help="Only the local checks; call nothing."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        findings = configuration_diagnose(live=not options["offline"])
        for finding in findings:
            mark = self.style.SUCCESS("ok  ") if finding.ok else self.style.ERROR("FAIL")
            self.stdout.write(f"{mark} {finding.check}: {finding.detail}")
        if not all(finding.ok for finding in findings):
            raise CommandError("the Fleet API configuration has problems (see above)")
        self.stdout.write(self.style.SUCCESS("The Fleet API configuration works."))
