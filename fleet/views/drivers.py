"""A driver's page: their licence (when the portal knows their CPF), the vehicles the
vehicle list gives them, their periods with each vehicle (the history), and the fines
attributed to them (`Fine.driver_id`), with totals; and its two forms, the driver's CPF
and looking their licence up again."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from fleet import cpf
from fleet.forms_cnh import DriverCpfForm
from fleet.models import CpfDisclosurePlace, Driver
from fleet.services.cnh_privacy import (
    CnhDailyLimitReached,
    cpf_disclosure_record,
    cpf_full_allowed,
)
from fleet.services.dashboard import fine_totals
from fleet.services.driver_cpfs import driver_cpf, driver_cpf_allowed, driver_cpf_set
from fleet.services.driver_history import driver_periods
from fleet.services.driver_licences import (
    driver_licence,
    driver_licence_lookup,
    driver_licence_pending,
)
from fleet.services.drivers import driver_names
from fleet.services.fines import PER_PAGE, fine_filtered
from fleet.services.scopes import VehicleScope, driver_seen, scope_of
from fleet.services.vehicles import FleetDataUnavailable, VehicleRow, driver_vehicles
from fleet.views import AuthenticatedRequest
from fleet.views.cnh import limit_message
from portal.lib.encryption import UndecryptableSecret


@require_GET
@login_required
def driver_detail(request: AuthenticatedRequest, driver_id: int) -> HttpResponse:
    """The driver's licence, vehicles and fines among those the user sees: a driver the
    user does not see (`driver_seen`, or a vehicle of theirs now) is not found; in the
    whole fleet, an id the portal has never known (no name, period or fine) either. Their
    CPF is masked, in full only for a user allowed to see full CPFs (recorded:
    `CpfDisclosure`)."""
    scope = scope_of(request.user)
    vehicles = _vehicles_if_seen(scope, driver_id)
    return _driver_page(request, scope, driver_id, vehicles=vehicles)


@require_POST
@login_required
def driver_licence_refresh(request: AuthenticatedRequest, driver_id: int) -> HttpResponse:
    """Look the driver's licence up again (the user's lookup, in their daily limit)."""
    _vehicles_if_seen(scope_of(request.user), driver_id)
    driver = Driver.objects.filter(driver_id=driver_id).first()
    if driver is None or not driver.cpf_digest:
        messages.error(request, _("This driver has no CPF: there is no licence to look up."))
        return redirect("fleet:driver", driver_id)
    try:
        driver_licence_lookup(driver=driver, user=request.user)
    except CnhDailyLimitReached as reached:
        messages.error(request, limit_message(reached))
    except UndecryptableSecret:
        messages.error(
            request,
            _("This driver's CPF cannot be read (an encryption key is missing): enter it again."),
        )
    else:
        messages.success(
            request,
            _(
                "The licence is being looked up. Its answer shows here once it arrives, "
                "usually within a minute: reload the page."
            ),
        )
    return redirect("fleet:driver", driver_id)


@require_POST
@login_required
def driver_cpf_change(request: AuthenticatedRequest, driver_id: int) -> HttpResponse:
    """Enter, change or remove the driver's CPF (administrators and users with
    `fleet.change_driver_cpf`)."""
    scope = scope_of(request.user)
    vehicles = _vehicles_if_seen(scope, driver_id)
    if not driver_cpf_allowed(user=request.user):
        raise PermissionDenied
    driver = Driver.objects.filter(driver_id=driver_id).first()
    if driver is None:
        raise Http404
    form = DriverCpfForm(request.POST)
    if not form.is_valid():
        return _driver_page(request, scope, driver_id, vehicles=vehicles, form=form, status=400)
    if driver_cpf_set(driver=driver, value=form.cleaned_data["cpf"]):
        if form.cleaned_data["cpf"]:
            messages.success(request, _("The driver's CPF was saved. Look up their licence."))
        else:
            messages.success(request, _("The driver's CPF was removed, with their licence."))
    return redirect("fleet:driver", driver_id)


def _vehicles_if_seen(scope: VehicleScope, driver_id: int) -> list[VehicleRow] | None:
    """The driver's vehicles (None when the list cannot be read); `Http404` for a driver
    the scope does not see."""
    vehicles: list[VehicleRow] | None
    try:
        vehicles = driver_vehicles(driver_id=driver_id, scope=scope)
    except FleetDataUnavailable:
        vehicles = None  # the page says the list could not be read
    if not vehicles and not driver_seen(scope, driver_id):
        raise Http404
    return vehicles


def _driver_page(
    request: AuthenticatedRequest,
    scope: VehicleScope,
    driver_id: int,
    *,
    vehicles: list[VehicleRow] | None,
    form: DriverCpfForm | None = None,
    status: int = 200,
) -> HttpResponse:
    fines = fine_filtered(scope=scope, driver=driver_id)
    totals = fine_totals(fines)
    periods = driver_periods(driver_id, scope=scope, fines=fines)
    driver = Driver.objects.filter(driver_id=driver_id).select_related("licence__lookup").first()
    may_enter_cpf = driver is not None and driver_cpf_allowed(user=request.user)
    context = {
        "driver_id": driver_id,
        "driver": driver,
        "name": driver_names([driver_id]).get(driver_id, ""),
        "cpf_shown": _cpf_shown(request, driver),
        "licence": driver_licence(driver) if driver is not None else None,
        "pending": driver_licence_pending(driver=driver, user=request.user)
        if driver is not None and driver.cpf_encrypted
        else None,
        "cpf_form": (form or DriverCpfForm()) if may_enter_cpf else None,
        "vehicles": vehicles,
        "periods": periods,
        "fines": list(fines[:PER_PAGE]),
        "totals": totals,
        "untreated": fine_totals(fines.filter(treated=False)),
    }
    return render(request, "fleet/driver.html", context, status=status)


def _cpf_shown(request: AuthenticatedRequest, driver: Driver | None) -> str:
    """The driver's CPF as this user may see it: masked, or in full (recorded)."""
    if driver is None or not driver.cpf_encrypted:
        return ""
    try:
        digits = driver_cpf(driver)
    except UndecryptableSecret:  # a key removed too early: the admin's rotation says which
        return cpf.mask("")
    if not cpf_full_allowed(user=request.user):
        return cpf.mask(digits)
    cpf_disclosure_record(
        user=request.user, driver=driver, place=CpfDisclosurePlace.DRIVER, count=1
    )
    return cpf.display(digits)
