"""What `bench.vehicles_scoped` runs inside the portal's own Django processes (`portal_call`,
the portal's settings): the vehicle groups and the users, and the scoped fines' sum.
"""

from __future__ import annotations

import json
import os
from decimal import Decimal
from pathlib import Path
from typing import Any

WHOLE, SCOPED, SUPERUSER = "whole-fleet manager", "scoped manager", "superuser"
# The whole-fleet manager is the one `portal_prepare` makes (`fleet.view_whole_fleet`).
USERNAMES = {WHOLE: "bench-manager", SCOPED: "bench-scoped", SUPERUSER: "bench-superuser"}


def scoped_setup() -> dict[str, Any]:
    """Files the plates of BENCH_PLATES into BENCH_GROUPS groups of BENCH_GROUP_SIZE, as an
    operator's `plate,group` file through the portal's import, and makes the users
    (passwords in BENCH_PASSWORDS, JSON by username)."""
    from django.contrib.auth import get_user_model

    from fleet import plates
    from fleet.models import VehicleGroup, VehicleGroupPlate
    from fleet.services.vehicle_groups import vehicle_group_grant, vehicle_groups_import

    listed = Path(os.environ["BENCH_PLATES"]).read_text().split()
    registrations = list(dict.fromkeys(map(plates.registration, listed)))
    count, size = int(os.environ["BENCH_GROUPS"]), int(os.environ["BENCH_GROUP_SIZE"])
    names = [f"Bench group {number + 1:03d}" for number in range(count)]
    report = vehicle_groups_import(
        f"{registration},{name}"
        for number, name in enumerate(names)
        for registration in registrations[number * size : (number + 1) * size]
    )
    assert not report.refused, report.refused
    passwords = json.loads(os.environ["BENCH_PASSWORDS"])
    users = get_user_model().objects
    # The whole-fleet manager is `portal_prepare`'s, with the permission already.
    for username in (USERNAMES[SCOPED], USERNAMES[SUPERUSER]):
        users.filter(username=username).delete()
    scoped = users.create_user(username=USERNAMES[SCOPED], password=passwords[SCOPED])
    users.create_superuser(username=USERNAMES[SUPERUSER], password=passwords[SUPERUSER])
    first = VehicleGroup.objects.get(name=names[0])
    vehicle_group_grant(user=scoped, groups=[first])
    return {
        "group": first.name,
        "in_group": first.plates.count(),
        "grouped": VehicleGroupPlate.objects.count(),
    }


def scoped_untreated() -> list[str | int]:
    """The count and R$ (as text) of the untreated fines of the scoped manager's vehicles."""
    from django.db.models import Count, Sum

    from fleet.models import Fine, VehicleGroupPlate

    registrations = VehicleGroupPlate.objects.filter(
        group__members__user__username=USERNAMES[SCOPED]
    ).values("registration")
    found = Fine.objects.filter(treated=False, registration__in=registrations).aggregate(
        count=Count("pk"), amount=Sum("amount", default=Decimal(0))
    )
    return [found["count"], str(found["amount"].quantize(Decimal("0.01")))]
