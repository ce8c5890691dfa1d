"""The drivers the portal can name: those with a `Driver` record (a name typed in the
admin, or given to the demo fleet's drivers) and those fines are attributed to."""

from __future__ import annotations

from collections.abc import Mapping

from fleet.models import Driver, Fine
from fleet.services.scopes import WHOLE_FLEET, VehicleScope


def fine_drivers(*, scope: VehicleScope = WHOLE_FLEET) -> list[tuple[int, str]]:
    """Every driver with a name or with a fine attributed to them, as (driver id, the name
    the portal knows or ""): the named by name, then the others by id. Outside the whole
    fleet, only the drivers of the fines `scope` sees."""
    attributed = list(
        scope.records(Fine.objects.filter(driver_id__isnull=False))
        .order_by("driver_id")
        .values_list("driver_id", flat=True)
        .distinct()
    )
    named = Driver.objects.all()
    if not scope.whole_fleet:
        named = named.filter(driver_id__in=[d for d in attributed if d is not None])
    names = dict(named.values_list("driver_id", "name"))
    ids = {*names, *(driver_id for driver_id in attributed if driver_id is not None)}
    drivers = [(driver_id, names.get(driver_id, "")) for driver_id in ids]
    return sorted(drivers, key=lambda driver: (not driver[1], driver[1].casefold(), driver[0]))


def driver_names_add(*, names: Mapping[int, str]) -> int:
    """Give these drivers these names, each only if the driver has none yet (a name
    typed in the admin stays); how many were named."""
    named = set(Driver.objects.filter(driver_id__in=names).values_list("driver_id", flat=True))
    missing = [Driver(driver_id=id_, name=name) for id_, name in names.items() if id_ not in named]
    # Ignoring conflicts: a driver named meanwhile, by someone else, keeps that name.
    Driver.objects.bulk_create(missing, ignore_conflicts=True)
    return len(missing)


def driver_names(driver_ids: list[int]) -> dict[int, str]:
    """The names the portal knows for these drivers (`Driver`, typed in the admin)."""
    return dict(Driver.objects.filter(driver_id__in=driver_ids).values_list("driver_id", "name"))
