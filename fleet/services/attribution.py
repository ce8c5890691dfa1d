"""The attribution of fines to their drivers: the driver id a fine's vehicle has in the
vehicle list, written to the fines that have none (the worker's task after fines
arrive, `fleet.tasks.fine_drivers_attribute_run`), with the dashboard's tallies by
driver in the same transaction."""

from __future__ import annotations

from dataclasses import replace

from django.db import transaction

from fleet.models import Fine
from fleet.services.dashboard import fine_figures_prepare
from fleet.services.tallies import FINE_FIELDS, FineState, fine_tallies_apply
from fleet.services.vehicles import vehicle_drivers

# Fines attributed to their drivers in one transaction.
ATTRIBUTION_CHUNK = 500


def fine_drivers_attribute() -> int:
    """Give the fines without a driver the driver their vehicle has in the vehicle list
    (fetched if need be); how many got one. A chunk of fines to a transaction: read
    under their locks, one UPDATE per driver, the dashboard's tallies by driver with
    them; then the dashboard's figures prepared."""
    registrations = set(
        Fine.objects.filter(driver_id__isnull=True)
        .exclude(registration="")
        .values_list("registration", flat=True)
        .distinct()
    )
    drivers = vehicle_drivers(registrations=registrations) if registrations else None
    if not drivers:
        return 0
    attributed, last = 0, ""
    while True:
        with transaction.atomic():
            # In key order, as processing locks them: neither waits for the other in a circle.
            fines = list(
                Fine.objects.select_for_update()
                .filter(driver_id__isnull=True, registration__in=list(drivers), key__gt=last)
                .order_by("key")
                .only("key", *FINE_FIELDS)[:ATTRIBUTION_CHUNK]
            )
            by_driver: dict[int, list[int]] = {}
            for fine in fines:
                by_driver.setdefault(drivers[fine.registration], []).append(fine.pk)
            for driver, pks in by_driver.items():
                Fine.objects.filter(pk__in=pks).update(driver_id=driver)
            fine_tallies_apply(
                (
                    FineState.of(fine),
                    replace(FineState.of(fine), driver_id=drivers[fine.registration]),
                )
                for fine in fines
            )
        attributed += len(fines)
        if len(fines) < ATTRIBUTION_CHUNK:
            break
        last = fines[-1].key
    if attributed:
        fine_figures_prepare()
    return attributed
