"""The vehicle list: search, filter, sort, pages and CSV export of the cached fleet."""

from __future__ import annotations

import contextlib
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, HttpResponseBase, QueryDict
from django.shortcuts import redirect
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from fleet.forms import FilterChip, VehicleFilterForm
from fleet.services.drivers import driver_names, driver_names_version
from fleet.services.scopes import VehicleScope, scope_groups, scope_of
from fleet.services.vehicles import (
    FleetDataUnavailable,
    vehicle_export,
    vehicle_search,
    vehicles_named,
    vehicles_refresh,
)
from fleet.views import AuthenticatedRequest, address_shown, is_fragment_request
from fleet.views.csv_export import csv_download
from portal.lib.caches import KeptHTML

# The results of a filter, for each part of the fleet seen: kept per version of the fleet.
_results = KeptHTML("vehicles.results", size=256)
# The page around them (header, filter form): kept per user, for any version.
_pages = KeptHTML("vehicles.page", size=256)
# The filters applied above the results, as chips: what the chips say is all they show.
_applied_shown = KeptHTML("vehicles.chips", size=256, for_everyone=True)


@require_GET
@login_required
@vary_on_headers("HX-Request")
def vehicle_list(request: AuthenticatedRequest) -> HttpResponse:
    query = request.META.get("QUERY_STRING", "")
    filters = _filters(query)
    scope = scope_of(request.user)
    unavailable: FleetDataUnavailable | None = None
    try:
        result = vehicle_search(**filters, scope=scope)
    except FleetDataUnavailable as error:
        result, unavailable = None, error

    # The filters applied, as chips, and whether any could not apply: none without a query
    # (the list as most open it). A group's chip names it as it is now.
    group_named = tuple(_group_named(scope, filters["group"]).items())
    chips, refused = _applied(request.path, query, group_named) if query else ((), False)

    def context() -> dict[str, Any]:
        return {
            "scope": scope,
            "group_choices": scope_groups(scope),
            "form": VehicleFilterForm(request.GET),
            "filters": filters,
            "query_string": VehicleFilterForm.query_string(filters),
            # For the sort links.
            "sort_query": VehicleFilterForm.query_string({**filters, "sort": "plate"}),
            "result": result,
            # The drivers' names of the page's rows (kept with the results, by their version).
            "names": driver_names([row.driver_id for row in result.rows if row.driver_id])
            if result
            else {},
            "chips": chips,
            "unavailable": unavailable,
        }

    path = request.get_full_path()
    # Only fresh results are kept: stale ones say how long to wait, or offer a refresh.
    parts: tuple[object, ...] = ()
    if result is not None and not result.freshness.stale:
        parts = (result.version, result.part, path, driver_names_version())
    results = _results.render(
        request, "fleet/vehicles.html#results", context, scope=scope, parts=parts, keep=bool(parts)
    )
    # The filters applied, above the results (a group's name as it is now), and any
    # that could not apply, with why: as on the other lists.
    if query:
        results = (
            _applied_shown.render(
                request,
                "fleet/_record_parts.html#filter_errors",
                lambda: {"chips": chips, "form": VehicleFilterForm(request.GET)},
                # What the chips say is all they show; a refused filter is rendered each time.
                parts=(chips, request.path),
                keep=not refused,
            )
            + results
        )
    if is_fragment_request(request):  # htmx swaps only the results, and the export link
        export_link = render_to_string(
            "fleet/vehicles.html#export_link",
            {"query_string": VehicleFilterForm.query_string(filters), "oob": True},
        )
        export_link += render_to_string(
            "fleet/_list_parts.html#filters_count", {"chips": chips, "oob": True}
        )
        # The address bar shows what was read from the request, filters as applied.
        shown = result.page if result is not None else 1
        address = VehicleFilterForm.address(request.path, filters, page=shown)
        return address_shown(request, HttpResponse(results + export_link), address)
    user = request.user
    page = _pages.render(
        request,
        "fleet/vehicles.html",
        context,
        scope=scope,
        parts=(
            user.pk,
            user.get_username(),
            user.get_full_name(),
            user.is_staff,
            scope.group_names,  # in the header
            path,
        ),
        holes={"results": results},
    )
    return HttpResponse(page, status=503 if result is None else 200)


def _group_named(scope: VehicleScope, group: str) -> dict[str, str]:
    """The name a group filter's chip shows for `group` (an id, or "none"; "": no filter)."""
    if not group:
        return {}
    if group == "none":
        return {group: _("In no group")}
    return {str(id_): name for id_, name in scope_groups(scope) if str(id_) == group}


def _applied(
    path: str, query_string: str, group_named: tuple[tuple[str, str], ...]
) -> tuple[tuple[FilterChip, ...], bool]:
    """The chips of a query string's filters, a group's named as `group_named` says, and
    whether any filter could not apply."""
    form = VehicleFilterForm(QueryDict(query_string))
    chips = form.chips(path, _filters(query_string), names={"group": dict(group_named)})
    return tuple(chips), bool(form.errors)


def _filters(query_string: str) -> dict[str, Any]:
    """The filters of a query string, as the form reads them."""
    return VehicleFilterForm(QueryDict(query_string)).filters()


@require_GET
@login_required
def vehicle_list_export(request: AuthenticatedRequest) -> HttpResponseBase:
    """The current filter as CSV, streamed: a 50,000-row fleet never sits in memory twice."""
    filters = VehicleFilterForm.every_page(VehicleFilterForm(request.GET).filters())
    try:
        rows, _freshness = vehicle_export(**filters, scope=scope_of(request.user))
    except FleetDataUnavailable:
        return redirect(f"{reverse('fleet:vehicles')}?{VehicleFilterForm.query_string(filters)}")
    active, inactive = _("Active"), _("Inactive")
    return csv_download(
        name="vehicles",
        header=[
            _("Plate"),
            _("Model"),
            _("Status"),
            _("Driver ID"),
            _("Driver"),
            _("Vehicle ID"),
        ],
        records=vehicles_named(rows),
        row=lambda named: [
            named[0].plate_display,
            named[0].model,
            active if named[0].active else inactive,
            "" if named[0].driver_id is None else named[0].driver_id,
            named[1],
            named[0].id,
        ],
    )


@require_POST
@login_required
def vehicle_list_refresh(request: AuthenticatedRequest) -> HttpResponse:
    """The "refresh" button of stale data: fetch now, unless the API asked us to wait."""
    with contextlib.suppress(FleetDataUnavailable):  # the list page explains what is wrong
        vehicles_refresh()
    back = request.POST.get("query_string", "")
    return redirect(f"{reverse('fleet:vehicles')}?{back}" if back else reverse("fleet:vehicles"))
