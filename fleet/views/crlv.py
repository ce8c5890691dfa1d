"""e-CRLV pages: a vehicle with its documents, a request's status, and downloads.

A status page polls with htmx while the request is not final: the fragment
carries its own next delay (half as long again each time, from 2 s up to
15 s), so a forgotten tab costs the shared rate limit little, and a final
fragment simply has no trigger. Downloads ask the API for a link minted now and redirect to it: a
page never holds a PDF link that may have expired.
"""

from __future__ import annotations

import math

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from fleet import plates
from fleet.services.crlv import (
    CrlvProblem,
    CrlvRequest,
    CrlvUnavailable,
    Outcome,
    VehicleCrlv,
    crlv_download_url,
    crlv_request_get,
    vehicle_crlv_download_url,
    vehicle_crlv_get,
)
from fleet.services.driver_history import vehicle_periods
from fleet.services.drivers import driver_names
from fleet.services.fines import vehicle_records
from fleet.services.scopes import scope_of
from fleet.services.vehicles import FleetDataUnavailable, vehicle_get, vehicle_outside
from fleet.views import AuthenticatedRequest, Polling, is_fragment_request, with_failure_status
from portal.lib import formatting

POLLING = Polling(first_ms=2_000, max_ms=15_000)
# When a 429 comes without Retry-After, wait this long before asking again.
DEFAULT_RETRY_AFTER_S = 30


@require_GET
@login_required
@never_cache
def vehicle(request: AuthenticatedRequest, plate: str) -> HttpResponse:
    """The vehicle's fields and its e-CRLV view (htmx: the e-CRLV part only)."""
    if not plates.is_valid(plate):
        return _vehicle_not_found(request, plate, invalid=True)
    if (canonical := plates.normalize(plate)) != plate:
        return redirect("fleet:vehicle", plate=canonical)
    try:
        crlv = vehicle_crlv_get(plate=plate, scope=scope_of(request.user))
    except CrlvUnavailable as failure:
        if failure.outcome is Outcome.NOT_FOUND:
            if (listed := _listed_plate(request, plate)) not in (None, plate):
                return redirect("fleet:vehicle", plate=listed)
            return _vehicle_not_found(request, plate, invalid=False)
        return _vehicle_page(request, plate, failure=failure)
    return _vehicle_page(request, plate, crlv=crlv)


def _listed_plate(request: AuthenticatedRequest, plate: str) -> str | None:
    """The plate the vehicle list names the vehicle `plate` designates by (its old plate,
    for a registration in the Mercosul form, as fines and the dashboard name it)."""
    try:
        vehicle = vehicle_get(plate=plate, scope=scope_of(request.user))
    except FleetDataUnavailable:
        return None
    return None if vehicle is None else plates.normalize(vehicle.plate)


@require_GET
@login_required
@never_cache
def vehicle_crlv_download(request: AuthenticatedRequest, plate: str) -> HttpResponse:
    """The vehicle's latest e-CRLV: a PDF link minted now, by redirect."""
    if not plates.is_valid(plate):
        return _vehicle_not_found(request, plate, invalid=True)
    try:
        url = vehicle_crlv_download_url(plate=plate, scope=scope_of(request.user))
    except CrlvUnavailable as failure:
        if failure.outcome is Outcome.NOT_FOUND:
            return _vehicle_not_found(request, plate, invalid=False)
        if failure.outcome is CrlvProblem.NOT_READY:
            messages.warning(request, _("This vehicle has no issued e-CRLV to download yet."))
            return redirect("fleet:vehicle", plate=plates.normalize(plate))
        return _vehicle_page(request, plates.normalize(plate), failure=failure)
    return HttpResponseRedirect(url)


@require_GET
@login_required
@never_cache
def crlv_request(request: AuthenticatedRequest, request_id: str) -> HttpResponse:
    """A request's status; htmx polls its `status` fragment until it is final."""
    delay_ms = POLLING.delay(request.GET.get("poll"))
    try:
        crlv = crlv_request_get(request_id=request_id, scope=scope_of(request.user))
    except CrlvUnavailable as failure:
        if failure.outcome in (CrlvProblem.INVALID, Outcome.NOT_FOUND):
            return _request_not_found(request, failure)
        return _request_page(request, request_id, failure=failure, delay_ms=delay_ms)
    return _request_page(request, request_id, crlv=crlv, delay_ms=delay_ms)


@require_GET
@login_required
@never_cache
def crlv_request_download(request: AuthenticatedRequest, request_id: str) -> HttpResponse:
    """The request's PDF: a link minted now, by redirect; back to the status if not ready."""
    try:
        url = crlv_download_url(request_id=request_id, scope=scope_of(request.user))
    except CrlvUnavailable as failure:
        if failure.outcome in (CrlvProblem.INVALID, Outcome.NOT_FOUND):
            return _request_not_found(request, failure)
        if failure.outcome is CrlvProblem.NOT_READY:
            messages.warning(
                request, _("The e-CRLV is not issued yet: there is nothing to download.")
            )
            return redirect("fleet:crlv_request", request_id=request_id)
        return _request_page(request, request_id, failure=failure, delay_ms=POLLING.first_ms)
    return HttpResponseRedirect(url)


# --- Rendering --------------------------------------------------------------------


def _vehicle_page(
    request: AuthenticatedRequest,
    plate: str,
    *,
    crlv: VehicleCrlv | None = None,
    failure: CrlvUnavailable | None = None,
) -> HttpResponse:
    wait_s = _wait_s(failure)
    context: dict[str, object] = {
        "plate": plate,
        "plate_display": plates.display(plate),
        "crlv": crlv,
        "failure": failure,
        "wait_s": wait_s,
        # Only a rate limit is worth waiting out by itself; other failures get a link.
        "retry_ms": wait_s * 1000 if wait_s else None,
    }
    if is_fragment_request(request):
        return render(request, "fleet/vehicle.html#crlv", context)
    scope = scope_of(request.user)
    try:
        context["vehicle"] = vehicle = vehicle_get(plate=plate, scope=scope)
    except FleetDataUnavailable:
        context["vehicle_unavailable"] = True
    else:
        if vehicle is not None and (driver_id := vehicle.driver_id) is not None:
            name = driver_names([driver_id]).get(driver_id, "")
            context["driver_label"] = formatting.driver(driver_id, name)
    context["records"] = vehicle_records(plate, scope=scope)
    context["periods"] = vehicle_periods(plate)
    return _with_failure_status(render(request, "fleet/vehicle.html", context), failure)


def _request_page(
    request: AuthenticatedRequest,
    request_id: str,
    *,
    delay_ms: int,
    crlv: CrlvRequest | None = None,
    failure: CrlvUnavailable | None = None,
) -> HttpResponse:
    if failure is not None:
        poll_ms = _retry_ms(failure, delay_ms)
    else:
        poll_ms = None if crlv is None or crlv.status.is_final else delay_ms
    # The plate is not promised by the spec and comes from the API: linked only when it is one.
    plate = crlv.plate if crlv is not None and crlv.plate and plates.is_valid(crlv.plate) else None
    context: dict[str, object] = {
        "request_id": request_id,
        "crlv": crlv,
        "plate": plate and plates.normalize(plate),
        "plate_display": plate and plates.display(plate),
        "failure": failure,
        "wait_s": _wait_s(failure),
        # The wait before this fragment asks again (None: it does not), and the one after.
        "poll_ms": poll_ms,
        "next_poll_ms": POLLING.after(delay_ms),
    }
    if is_fragment_request(request):
        return render(request, "fleet/crlv_request.html#status", context)
    return _with_failure_status(render(request, "fleet/crlv_request.html", context), failure)


def _with_failure_status(response: HttpResponse, failure: CrlvUnavailable | None) -> HttpResponse:
    if failure is None:
        return response
    return with_failure_status(response, failure.outcome, retry_after=failure.retry_after)


def _vehicle_not_found(request: AuthenticatedRequest, plate: str, *, invalid: bool) -> HttpResponse:
    context = {
        "not_found": True,
        "invalid": invalid,
        # The fleet has it, in groups the person is not in: said so, not "no such vehicle".
        "outside": not invalid and vehicle_outside(plate=plate, scope=scope_of(request.user)),
        "plate": plate,
        "plate_display": plates.display(plate),
    }
    return render(request, "fleet/vehicle.html", context, status=404)


def _request_not_found(request: AuthenticatedRequest, failure: CrlvUnavailable) -> HttpResponse:
    context = {"not_found": True, "invalid": failure.outcome is CrlvProblem.INVALID}
    return render(request, "fleet/crlv_request.html", context, status=404)


def _wait_s(failure: CrlvUnavailable | None) -> int | None:
    """The whole seconds the API asked us to wait after a rate limit."""
    if failure is None or failure.outcome is not Outcome.RATE_LIMITED:
        return None
    return math.ceil(failure.retry_after or DEFAULT_RETRY_AFTER_S)


def _retry_ms(failure: CrlvUnavailable, delay_ms: int) -> int | None:
    """When to ask again by itself after `failure` (None: waiting would not help)."""
    if wait_s := _wait_s(failure):
        return wait_s * 1000
    if failure.outcome is Outcome.UNAVAILABLE:
        return max(delay_ms, math.ceil(failure.retry_after or 0) * 1000)
    return None
