"""A driver's page: the vehicles the vehicle list gives them, their periods with each
vehicle (the history), and the fines attributed to them (`Fine.driver_id`), with totals."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from fleet.services.dashboard import fine_totals
from fleet.services.driver_history import driver_periods
from fleet.services.drivers import driver_names
from fleet.services.fines import PER_PAGE, fine_filtered
from fleet.services.scopes import driver_seen, scope_of
from fleet.services.vehicles import FleetDataUnavailable, VehicleRow, driver_vehicles
from fleet.views import AuthenticatedRequest


@require_GET
@login_required
def driver_detail(request: AuthenticatedRequest, driver_id: int) -> HttpResponse:
    """The driver's vehicles and fines among those the user sees: a driver the user does
    not see (`driver_seen`, or a vehicle of theirs now) is not found; in the whole fleet,
    an id the portal has never known (no name, period or fine) either."""
    scope = scope_of(request.user)
    vehicles: list[VehicleRow] | None
    try:
        vehicles = driver_vehicles(driver_id=driver_id, scope=scope)
    except FleetDataUnavailable:
        vehicles = None  # the page says the list could not be read
    if not vehicles and not driver_seen(scope, driver_id):
        raise Http404
    fines = fine_filtered(scope=scope, driver=driver_id)
    totals = fine_totals(fines)
    periods = driver_periods(driver_id, scope=scope, fines=fines)
    context = {
        "driver_id": driver_id,
        "name": driver_names([driver_id]).get(driver_id, ""),
        "vehicles": vehicles,
        "periods": periods,
        "fines": list(fines[:PER_PAGE]),
        "totals": totals,
        "untreated": fine_totals(fines.filter(treated=False)),
    }
    return render(request, "fleet/driver.html", context)
