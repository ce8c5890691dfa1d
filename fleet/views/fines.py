"""Fines and notifications received by webhook: lists with filters, untreated first,
and their CSV exports."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from fleet import display, plates
from fleet.forms import FineFilterForm, NotificationFilterForm
from fleet.models import Fine, Notification
from fleet.services.fines import (
    fine_export,
    fine_search,
    notification_export,
    notification_search,
)
from fleet.views import AuthenticatedRequest, is_fragment_request
from fleet.views.csv_export import csv_download


@require_GET
@login_required
@vary_on_headers("HX-Request")
def fine_list(request: AuthenticatedRequest) -> HttpResponse:
    form = FineFilterForm(request.GET)
    filters = form.filters()
    page = fine_search(**filters)
    return _render(request, "fleet/fines.html", "fleet:fines_export", filters, form, page)


@require_GET
@login_required
@vary_on_headers("HX-Request")
def notification_list(request: AuthenticatedRequest) -> HttpResponse:
    form = NotificationFilterForm(request.GET)
    filters = form.filters()
    page = notification_search(**filters)
    return _render(
        request, "fleet/notifications.html", "fleet:notifications_export", filters, form, page
    )


@require_GET
@login_required
def fine_detail(request: AuthenticatedRequest, fine_id: int) -> HttpResponse:
    """One fine: what an alert links to."""
    return render(request, "fleet/fine.html", {"record": get_object_or_404(Fine, pk=fine_id)})


@require_GET
@login_required
def notification_detail(request: AuthenticatedRequest, notification_id: int) -> HttpResponse:
    """One notification: what an alert links to."""
    record = get_object_or_404(Notification, pk=notification_id)
    return render(request, "fleet/notification.html", {"record": record})


@require_GET
@login_required
def fine_list_export(request: AuthenticatedRequest) -> StreamingHttpResponse:
    """The fines the filters select, every page of them, as CSV."""
    filters = _export_filters(FineFilterForm(request.GET))
    handling = _handling()

    def row(fine: Fine) -> list[object]:
        return [
            plates.display_if_plate(fine.plate),
            fine.description,
            fine.reference,
            display.payload_moment(fine.occurred_at),
            display.amount(fine.amount),
            handling[fine.treated],
            fine.link_frame,
            fine.link,
            display.moment(fine.received_at),
            display.moment(fine.updated_at),
            fine.external_id,
        ]

    header = [
        _("Plate"),
        _("Infraction"),
        _("Notice"),
        _("Committed on"),
        _("Amount (R$)"),
        _("Handling"),
        _("Official document"),
        _("Payment slip"),
        _("Received"),
        _("Updated"),
        _("Id in the fleet platform"),
    ]
    return csv_download(name="fines", header=header, records=fine_export(**filters), row=row)


@require_GET
@login_required
def notification_list_export(request: AuthenticatedRequest) -> StreamingHttpResponse:
    """The notifications the filters select, every page of them, as CSV."""
    filters = _export_filters(NotificationFilterForm(request.GET))
    handling = _handling()
    header = [_("Plate"), _("Title"), _("Message"), _("Handling")]
    header += [_("Received"), _("Updated"), _("Id in the fleet platform")]
    return csv_download(
        name="notifications",
        header=header,
        records=notification_export(**filters),
        row=lambda notification: [
            plates.display_if_plate(notification.plate),
            notification.title,
            notification.message,
            handling[notification.treated],
            display.moment(notification.received_at),
            display.moment(notification.updated_at),
            notification.external_id,
        ],
    )


def _export_filters(form: FineFilterForm | NotificationFilterForm) -> dict[str, Any]:
    """The list's filters, without its page: an export has every page."""
    filters = form.filters()
    filters.pop("page")
    return filters


def _handling() -> dict[bool, str]:
    return {True: _("Treated"), False: _("Untreated")}


def _render(
    request: AuthenticatedRequest,
    template: str,
    export_view: str,
    filters: dict[str, object],
    form: FineFilterForm | NotificationFilterForm,
    page: object,
) -> HttpResponse:
    links = {"query_string": _query_string(filters), "export_url": reverse(export_view)}
    context = {"filters": filters, "form": form, "page": page, **links}
    if not is_fragment_request(request):
        return render(request, template, context)
    # htmx swaps only the results, and the export link in the page's head (out of band).
    results = render_to_string(f"{template}#results", context, request)
    export_link = render_to_string("fleet/_record_parts.html#export_link", links | {"oob": True})
    return HttpResponse(results + export_link)


def _query_string(filters: dict[str, object]) -> str:
    """The filters as a query string, defaults left out, for links that keep them."""
    yes_no = {True: "1", False: "0"}
    params = {
        name: yes_no[value] if isinstance(value, bool) else value
        for name, value in filters.items()
        if name != "page" and (isinstance(value, bool) or (isinstance(value, str) and value))
    }
    return urlencode(params)
