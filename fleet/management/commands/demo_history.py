"""`manage.py demo_history`: a demo's past days of who had each vehicle, with fines on both
sides of its hand-overs and one driver set by hand, for `make run` (`run_dev`).

The history is written as the refreshes would have written it, by the same function
(`history_observe`): the emulator's clock (its control surface) is set to each hour of the
past days in turn and its vehicle list read and taken in, then set back to now (before
anything else reads the list: a history only grows forward). With `--fines-to`, once
the portal answers, the emulator sends made-up fines of those days to its receiver;
they are processed here, and the first uncertain one is given a driver by the demo
fleet manager, with a reason. Each part is done once: a portal with a history, or with
fines, is left as it is.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import requests
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.urls import reverse

from fleet.models import DriverBasis, DriverObservation, Fine
from fleet.services.attribution import fine_driver_correct
from fleet.services.connection import fleet_cache_scope, fleet_client
from fleet.services.driver_history import history_observe
from fleet.services.vehicle_index import Snapshot
from fleet.webhooks.processing import deliveries_process_received

_TIMEOUT = 60.0


class Command(BaseCommand):
    help = "Write a demo history of who had each vehicle, with fines around its hand-overs."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--hours", type=int, default=72, help="how far back (default 72)")
        parser.add_argument(
            "--fines-to", metavar="URL", help="the portal's address: send it the demo fines"
        )
        parser.add_argument("--webhooks", type=int, default=300, help="webhooks sent (default 300)")

    def handle(self, *args: Any, **options: Any) -> None:
        if settings.FLEET_ENVIRONMENT != "emulator":
            raise CommandError("the demo history is made with the emulator only")
        control = f"{settings.FLEET_BASE_URL}/_emulator"
        if options["fines_to"]:
            self._fines(
                control, options["fines_to"], hours=options["hours"], count=options["webhooks"]
            )
        elif DriverObservation.objects.exists():
            self.stdout.write("Demo history: the portal has a history already.")
        else:
            self._history(control, hours=options["hours"])

    def _history(self, control: str, *, hours: int) -> None:
        start = datetime.now(UTC).replace(minute=30, second=0, microsecond=0)
        start -= timedelta(hours=hours)
        client, previous, taken = fleet_client(), None, 0
        try:
            for hour in range(hours):
                moment = start + timedelta(hours=hour)
                _control("POST", f"{control}/clock", {"set": moment.isoformat()})
                snapshot = Snapshot.from_columns(
                    client.list_vehicle_columns(),
                    scope=fleet_cache_scope(),
                    version=f"demo-{hour}",
                    fetched_at=moment.timestamp(),
                )
                if history_observe(snapshot, previous=previous) is not None:
                    taken += 1
                previous = snapshot
        finally:
            _control("POST", f"{control}/clock", {"set": datetime.now(UTC).isoformat()})
        self.stdout.write(f"Demo history: {taken} hourly refreshes of the past days taken in.")

    def _fines(self, control: str, portal: str, *, hours: int, count: int) -> None:
        if Fine.objects.exists():
            self.stdout.write("Demo fines: the portal has fines already.")
            return
        token = settings.FLEET_WEBHOOK_TOKENS[0]
        url = portal.rstrip("/") + reverse("fleet:webhook", args=[token])
        body = {"url": url, "count": count, "seed": 42, "within_hours": hours}
        sent = _control("POST", f"{control}/webhooks", body)
        deliveries_process_received()
        uncertain = Fine.objects.filter(driver_basis=DriverBasis.UNCERTAIN).count()
        corrected = self._correct_one()
        self.stdout.write(
            f"Demo fines: {sent.get('answered', 0)} webhooks of the past days sent, "
            f"{uncertain} fine(s) whose vehicle changed hands around then"
            f"{', one of them given its driver by hand' if corrected else ''}."
        )

    def _correct_one(self) -> bool:
        """The demo fleet manager picks the later candidate of the first uncertain fine."""
        fine = Fine.objects.filter(driver_basis=DriverBasis.UNCERTAIN).order_by("pk").first()
        manager = get_user_model().objects.filter(username="manager").first()
        if fine is None or manager is None or fine.driver_span is None:
            return False
        chosen = fine.driver_span.driver_id or fine.driver_span.previous_driver_id
        if chosen is None:
            return False
        fine_driver_correct(
            fine_id=fine.pk,
            driver_id=chosen,
            reason="Veículo emprestado ao colega nesse dia (demo)",
            user=manager,
        )
        return True


def _control(method: str, url: str, body: dict[str, Any]) -> dict[str, Any]:
    try:
        response = requests.request(method, url, json=body, timeout=_TIMEOUT)
        response.raise_for_status()
    except requests.RequestException as error:
        raise CommandError(f"the emulator's control surface did not answer: {error}") from None
    found: dict[str, Any] = response.json()
    return found
