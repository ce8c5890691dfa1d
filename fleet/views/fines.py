"""Fines and notifications received by webhook: lists with filters, untreated first,
and their CSV exports."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Page
from django.http import Http404, HttpResponse, QueryDict, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from fleet import plates
from fleet.forms import FineFilterForm, NotificationFilterForm, SavedFineViewForm
from fleet.models import (
    BASIS_MARKS,
    DeadlineBasis,
    DriverBasis,
    Indication,
    WebhookRecord,
)
from fleet.services.drivers import drivers_find
from fleet.services.fine_exports import ExportedFine, facts_cells, fine_export
from fleet.services.fines import (
    fine_list_page,
    notification_export,
    notification_get,
    notification_search,
)
from fleet.services.indications import (
    notification_fine,
)
from fleet.services.saved_views import (
    saved_fine_view_delete,
    saved_fine_view_save,
    saved_fine_views,
)
from fleet.services.scopes import scope_of
from fleet.views import AuthenticatedRequest, address_shown, is_fragment_request
from fleet.views.csv_export import csv_download
from fleet.views.rows import rows_rendered
from portal.lib import formatting
from portal.lib.caches import KeptHTML


@require_GET
@login_required
@vary_on_headers("HX-Request")
def fine_list(request: AuthenticatedRequest) -> HttpResponse:
    scope = scope_of(request.user)
    form = FineFilterForm(request.GET, scope=scope)
    filters = form.filters()
    page, totals = fine_list_page(scope=scope, **filters)
    extra = {
        "totals": totals,
        "saved_views": saved_fine_views(user=request.user),
        "save_form": SavedFineViewForm(initial={"query": FineFilterForm.query_string(filters)}),
    }
    return _render(
        request, "fleet/fines.html", "fleet:fines_export", filters, form, page, extra=extra
    )


@require_GET
@login_required
def fine_driver_choices(request: AuthenticatedRequest) -> HttpResponse:
    """The drivers the fines list's driver field fits as it is typed (htmx): a few, those
    the user sees, each a button that chooses it."""
    text = " ".join(request.GET.get("driver", "")[:160].split())
    scope, shown = scope_of(request.user), FineFilterForm.CHOICES_SHOWN
    choices = drivers_find(text=text, scope=scope, limit=shown) if text else []
    context = {"choices": choices, "text": text}
    return render(request, "fleet/_record_parts.html#driver_choices", context)


@require_POST
@login_required
def fine_view_save(request: AuthenticatedRequest) -> HttpResponse:
    """Keep the fines list's current filters under a name, as one of the user's tabs."""
    form = SavedFineViewForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("Give the view a name of up to 60 characters."))
        return redirect(reverse("fleet:fines") + _safe_query(request.POST.get("query", "")))
    # Kept as the list's own form reads it: what a later visit will apply.
    scope = scope_of(request.user)
    query = FineFilterForm.query_string(
        FineFilterForm(QueryDict(form.cleaned_data["query"]), scope=scope).filters()
    )
    view = saved_fine_view_save(user=request.user, name=form.cleaned_data["name"], query=query)
    messages.success(request, _("View “%(name)s” saved.") % {"name": view.name})
    return redirect(view.get_absolute_url())


@require_POST
@login_required
def fine_view_delete(request: AuthenticatedRequest, view_id: int) -> HttpResponse:
    """Forget one of the user's saved views (another user's is not found)."""
    name = saved_fine_view_delete(user=request.user, view_id=view_id)
    if name is None:
        raise Http404
    messages.success(request, _("View “%(name)s” deleted.") % {"name": name})
    return redirect("fleet:fines")


@require_GET
@login_required
@vary_on_headers("HX-Request")
def notification_list(request: AuthenticatedRequest) -> HttpResponse:
    form = NotificationFilterForm(request.GET)
    filters = form.filters()
    page = notification_search(scope=scope_of(request.user), **filters)
    return _render(
        request, "fleet/notifications.html", "fleet:notifications_export", filters, form, page
    )


@require_GET
@login_required
def notification_detail(request: AuthenticatedRequest, notification_id: int) -> HttpResponse:
    """One notification: what an alert links to."""
    scope = scope_of(request.user)
    record = notification_get(scope=scope, notification_id=notification_id)
    if record is None:
        raise Http404
    context = {"record": record, "notified": notification_fine(scope=scope, notification=record)}
    return render(request, "fleet/notification.html", context)


@require_GET
@login_required
def fine_list_export(request: AuthenticatedRequest) -> StreamingHttpResponse:
    """The fines the filters select, every page of them, as CSV."""
    scope = scope_of(request.user)
    filters = _export_filters(FineFilterForm(request.GET, scope=scope))
    handling = _handling()
    known = _driver_known()
    moment, written = formatting.spreadsheet_moments()
    day, days_written = formatting.spreadsheet_days()
    indication = {value: str(label).capitalize() for value, label in Indication.choices}
    deadline_known = {value: str(label) for value, label in DeadlineBasis.choices}

    def named(driver_id: int | None, names: Mapping[int, str]) -> str:
        if driver_id is None:
            return ""
        name = names.get(driver_id, "")
        return f"{name} ({driver_id})" if name else str(driver_id)

    def row(fine: ExportedFine) -> list[object]:
        uncertain = fine.driver_basis == DriverBasis.UNCERTAIN
        candidates = [fine.span_previous_driver_id, fine.span_driver_id] if uncertain else []
        return [
            plates.display_if_plate(fine.plate),
            fine.description,
            fine.reference,
            moment(fine.occurred_at, fine.occurred_at_text),
            # A number cell, in the language's format (csv_export); else the text as sent.
            fine.amount if fine.amount is not None else fine.amount_text,
            handling[fine.treated],
            fine.link_frame,
            fine.link,
            moment(fine.received_at),
            moment(fine.updated_at),
            fine.external_id,
            fine.driver_id if fine.driver_id is not None else "",
            fine.names.get(fine.driver_id, "") if fine.driver_id is not None else "",
            known[fine.driver_basis],
            _(" or ").join(named(c, fine.names) or _("nobody") for c in candidates),
            moment(fine.window_start) if uncertain else "",
            moment(fine.window_end) if uncertain else "",
            *facts_cells(fine.facts),
            indication.get(fine.indication or "", ""),
            day(fine.indication_due),
            deadline_known.get(fine.indication_due_basis or "", ""),
            day(fine.payment_due),
            deadline_known.get(fine.payment_due_basis or "", ""),
        ]

    header = [
        _("Plate"),
        _("Infraction"),
        _("Notice"),
        _("Committed on") + written,
        _("Amount (R$)"),
        _("Handling"),
        _("Official document"),
        _("Payment slip"),
        _("Received") + written,
        _("Updated") + written,
        _("Id in the fleet platform"),
        _("Driver id"),
        _("Driver"),
        _("How the driver is known"),
        _("Candidates"),
        _("Changed hands after") + written,
        _("Changed hands before") + written,
        # The infraction's facts, when the platform sends them (`facts_cells`).
        _("Infraction code"),
        _("Severity"),
        _("Points on the licence"),
        _("City"),
        _("State (UF)"),
        _("Issuing authority"),
        # The deadlines, each with how it is known ("estimated: check the notice").
        _("Driver indication"),
        _("Indicate the driver by") + days_written,
        _("How the indication deadline is known"),
        _("Payment due") + days_written,
        _("How the payment due date is known"),
    ]
    return csv_download(
        name="fines", header=header, records=fine_export(scope=scope, **filters), row=row
    )


@require_GET
@login_required
def notification_list_export(request: AuthenticatedRequest) -> StreamingHttpResponse:
    """The notifications the filters select, every page of them, as CSV."""
    filters = _export_filters(NotificationFilterForm(request.GET))
    handling = _handling()
    moment, written = formatting.spreadsheet_moments()
    header = [_("Plate"), _("Title"), _("Message"), _("Handling")]
    header += [_("Received") + written, _("Updated") + written, _("Id in the fleet platform")]
    return csv_download(
        name="notifications",
        header=header,
        records=notification_export(scope=scope_of(request.user), **filters),
        row=lambda notification: [
            plates.display_if_plate(notification.plate),
            notification.title,
            notification.message,
            handling[notification.treated],
            moment(notification.received_at),
            moment(notification.updated_at),
            notification.external_id,
        ],
    )


def _export_filters(form: FineFilterForm | NotificationFilterForm) -> dict[str, Any]:
    """The list's filters, without its page: an export has every page."""
    return form.every_page(form.filters())


def _driver_known() -> dict[str, str]:
    """How a fine's driver is known, as an export writes it, by `DriverBasis`: its mark
    and what the mark means, as the pages say on hover (`BASIS_MARKS`)."""
    known = {str(basis.value): str(basis.label) for basis in DriverBasis}
    for basis, (mark, meaning) in BASIS_MARKS.items():
        known[str(basis.value)] = f"{str(mark).capitalize()}: {meaning}"
    return known


def _handling() -> dict[bool, str]:
    return {True: _("Treated"), False: _("Untreated")}


def _render(
    request: AuthenticatedRequest,
    template: str,
    export_view: str,
    filters: dict[str, object],
    form: FineFilterForm | NotificationFilterForm,
    page: Page[Any],
    *,
    extra: dict[str, object] | None = None,
) -> HttpResponse:
    links = {"query_string": form.query_string(filters), "export_url": reverse(export_view)}
    chips = form.chips(request.path, filters)
    rows = rows_rendered(f"{template}#row", cast(Sequence[WebhookRecord], page.object_list))
    context = {"filters": filters, "filtered": bool(chips), "form": form, "page": page, **links}
    context |= {
        "rows": rows,
        "chips": chips,
        "sort_query": form.query_string(filters | {"sort": ""}),
    }
    context |= extra or {}
    if not is_fragment_request(request):
        context["filters_html"] = _filters_rendered(request, form)
        return render(request, template, context)
    # htmx swaps only the results, and the export link in the page's head (out of band).
    results = render_to_string(f"{template}#results", context, request)
    export_link = render_to_string("fleet/_record_parts.html#export_link", links | {"oob": True})
    export_link += render_to_string(
        "fleet/_list_parts.html#filters_count", {"chips": chips, "oob": True}
    )
    # The address bar shows what was read from the request, filters as applied.
    address = form.address(request.path, filters, page=page.number)
    return address_shown(request, HttpResponse(results + export_link), address)


# The filter forms as rendered, by what they show (a dozen widgets, each a template): per
# viewer, since a driver's name that fits several offers the drivers the viewer sees.
_filter_forms = KeptHTML("fines.filter_form", size=512)


def _filters_rendered(
    request: AuthenticatedRequest, form: FineFilterForm | NotificationFilterForm
) -> SafeString:
    """The list's filter form (`_record_parts.html#filters`), rendered once per process
    for what it shows: the values as the form shows them (a driver chosen by name or id
    shows as the driver is named now, `FineFilterForm.filters`) and its errors, for the
    viewer, at its address."""
    values = tuple((field.name, str(field.value())) for field in form.visible_fields())
    errors = tuple((name, tuple(map(str, found))) for name, found in form.errors.items())
    return _filter_forms.render(
        request,
        "fleet/_record_parts.html#filters",
        lambda: {"form": form},
        scope=scope_of(request.user),
        parts=(type(form).__name__, request.path, values, errors),
    )


def _safe_query(query: str) -> str:
    """`?query` for a redirect to the list, with only what the list's form reads."""
    kept = FineFilterForm.query_string(FineFilterForm(QueryDict(query)).filters())
    return f"?{kept}" if kept else ""
