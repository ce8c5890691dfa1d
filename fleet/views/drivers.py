"""A driver's page: the vehicles the vehicle list gives them and the fines attributed to
them (`Fine.driver_id`), with totals."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from fleet.services.dashboard import fine_totals
from fleet.services.drivers import driver_names
from fleet.services.fines import PER_PAGE, fine_filtered
from fleet.services.vehicles import FleetDataUnavailable, VehicleRow, driver_vehicles
from fleet.views import AuthenticatedRequest


@require_GET
@login_required
def driver_detail(request: AuthenticatedRequest, driver_id: int) -> HttpResponse:
    vehicles: list[VehicleRow] | None
    try:
        vehicles = driver_vehicles(driver_id=driver_id)
    except FleetDataUnavailable:
        vehicles = None  # the page says the list could not be read
    fines = fine_filtered(driver=driver_id)
    context = {
        "driver_id": driver_id,
        "name": driver_names([driver_id]).get(driver_id, ""),
        "vehicles": vehicles,
        "fines": list(fines[:PER_PAGE]),
        "totals": fine_totals(fines),
        "untreated": fine_totals(fines.filter(treated=False)),
    }
    return render(request, "fleet/driver.html", context)
