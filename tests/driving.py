"""Who was driving, for the tests: both clocks moved together (the portal's, stopped by
time-machine, and the emulator's, through its control surface), the vehicle list
refreshed as the refresh button does, and a hand-over of the emulator's schedule with no
other of its vehicle near it."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.conftest import Emulator

HOUR = timedelta(hours=1)
MINUTE = timedelta(minutes=1)
WEBHOOK = "/webhooks/fleet/dev-webhook-token/"


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Clocks:
    """The portal's clock and the emulator's, moved together."""

    def __init__(self, time_machine: Any, emulator: Emulator) -> None:
        self.time_machine, self.emulator = time_machine, emulator

    def at(self, moment: datetime) -> None:
        self.time_machine.move_to(moment, tick=False)
        self.emulator.control("POST", "clock", set=iso(moment))

    def observe(self, moment: datetime) -> None:
        """At `moment`, the vehicle list refreshed (and taken into the history)."""
        from fleet.services.vehicle_cache import current_snapshot

        self.at(moment)
        current_snapshot(force=True)


def lone_handover(
    emulator: Emulator, *, start: datetime | None = None
) -> tuple[str, datetime, int, int]:
    """A hand-over of the emulator's schedule in the two days from `start` (default: in six
    hours) with no other of its vehicle within three hours either side: (plate, when,
    from, to)."""
    if start is None:
        start = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) + 6 * HOUR
    listed = emulator.handovers(iso(start), iso(start + 2 * 24 * HOUR))
    by_plate: dict[str, list[datetime]] = {}
    for handover in listed:
        by_plate.setdefault(handover["plate"], []).append(parse(handover["at"]))
    for handover in listed:
        at = parse(handover["at"])
        if all(abs(other - at) > 3 * HOUR for other in by_plate[handover["plate"]] if other != at):
            return handover["plate"], at, handover["from"], handover["to"]
    raise AssertionError("the schedule has no lone hand-over in two days")


def parse(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def fine_event(number: int, plate: str, occurred: datetime | None, amount: str = "195.23") -> str:
    """A fine's webhook body, committed at `occurred` (None: no moment, as the spec
    promises none)."""
    frame: dict[str, Any] = {"id": number, "carPlate": plate, "amount": amount, "treated": False}
    if occurred is not None:
        frame["occurredAt"] = iso(occurred)
    return json.dumps({"frame": frame, "linkFrame": None, "link": None})


def deliver(client: Any, number: int, plate: str, occurred: datetime | None, **options: Any) -> Any:
    """The fine through the receiver and processing; the stored fine."""
    from fleet.models import Fine
    from fleet.webhooks.processing import deliveries_process_received

    body = fine_event(number, plate, occurred, **options)
    response = client.post(WEBHOOK, data=body, content_type="application/json")
    assert response.status_code == 202, response.content
    deliveries_process_received()
    return Fine.objects.get(key=f"id:{number}")
