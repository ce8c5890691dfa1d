"""The worker's daily run of indication deadlines (`alerts.tasks.alerts_indications_daily`)
on `bench.scale`'s data set: `python -m bench.scale_reminders`, in a process with the
portal's environment (as `bench.scale_fill`).

In one transaction rolled back at the end (the kept data set is left as it was built, so
that every run finds the same work): a handful of people who chose the indication
deadlines' alerts (`PEOPLE`: the whole fleet; each of the three regions, as members of
its group; a list of plates of their own; one who turned them off), then the run as the
task calls it: `indication_reminders_create` (the deadlines near, and those missed in
the last days: missed is the clock's, nothing is marked). Its wall time and SQL
statements (counted by an execute wrapper: every statement, however many) are printed,
last, as one line of JSON. A part still running after `--limit` seconds is stopped (at
the end of the statement under way): its statements so far are reported, and
`"stopped": true`.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

import django

django.setup()

from django.contrib.auth.models import Permission, User  # noqa: E402
from django.db import connection, transaction  # noqa: E402

from alerts.models import AlertDelivery, AlertPreferences  # noqa: E402
from alerts.services.reminders import indication_reminders_create  # noqa: E402
from fleet.models import (  # noqa: E402
    WHOLE_FLEET_PERMISSION,
    Fine,
    VehicleGroup,
    VehicleGroupMember,
)
from fleet.services.scopes import scopes_changed  # noqa: E402

# (username, the region whose group they are a member of or None for the whole fleet,
# their own plates or None for all vehicles, reminders chosen, digest or at once)
PEOPLE: tuple[tuple[str, str | None, bool, bool, bool], ...] = (
    ("reminded-whole", None, False, True, False),
    ("reminded-sudeste", "Sudeste", False, True, False),
    ("reminded-sul", "Sul", False, True, True),
    ("reminded-nordeste", "Nordeste", False, True, False),
    ("reminded-plates", None, True, True, True),
    ("reminded-off", None, False, False, False),
)


class Rollback(Exception):
    """Raised to roll the run back once measured."""


class Stopped(Exception):
    """Raised in a part still running after the limit."""


def _stop(_signal: int, _frame: object) -> None:
    raise Stopped


class Counted:
    """Every SQL statement this connection runs, counted (an `execute_wrapper`)."""

    def __init__(self) -> None:
        self.statements = 0

    def __call__(
        self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any
    ) -> Any:
        self.statements += 1
        return execute(sql, params, many, context)


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scale_reminders")
    parser.add_argument("--limit", type=int, default=600, help="seconds a part may take")
    limit = parser.parse_args().limit
    signal.signal(signal.SIGALRM, _stop)
    found: dict[str, Any] = {}
    try:
        with transaction.atomic():
            found["people"] = _people()
            for name, part in (("reminders", indication_reminders_create),):
                counted = Counted()
                began = time.perf_counter()
                result: Any = None
                signal.alarm(limit)
                try:
                    with connection.execute_wrapper(counted), transaction.atomic():
                        result = part()
                except Stopped:
                    pass
                finally:
                    signal.alarm(0)
                found[name] = {
                    "seconds": time.perf_counter() - began,
                    "queries": counted.statements,
                    "result": result,
                    "stopped": result is None,
                }
                print(f"  {name}: {found[name]}", file=sys.stderr, flush=True)
            raise Rollback
    except Rollback:
        pass
    print(json.dumps(found))
    return 0


def _people() -> int:
    whole = Permission.objects.get(codename=WHOLE_FLEET_PERMISSION.split(".")[1])
    regions = {group.name: group for group in VehicleGroup.objects.all()}
    some = list(Fine.objects.order_by("pk").values_list("registration", flat=True)[:20])
    for username, region, own_plates, reminders, digest in PEOPLE:
        user = User.objects.create_user(username, email=f"{username}@bench.example")
        if region is None:
            user.user_permissions.add(whole)
        else:
            VehicleGroupMember.objects.create(group=regions[region], user=user)
        AlertPreferences.objects.create(
            user=user,
            indication_reminders=reminders,
            all_vehicles=not own_plates,
            plates=some if own_plates else [],
            delivery=AlertDelivery.DIGEST if digest else AlertDelivery.IMMEDIATE,
        )
    scopes_changed()
    return len(PEOPLE)


if __name__ == "__main__":
    sys.exit(main())
