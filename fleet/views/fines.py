"""Fines and notifications received by webhook: lists with filters, untreated first."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from fleet.forms import FineFilterForm, NotificationFilterForm
from fleet.services.fines import fine_search, notification_search
from fleet.views import AuthenticatedRequest, is_fragment_request


@require_GET
@login_required
@vary_on_headers("HX-Request")
def fine_list(request: AuthenticatedRequest) -> HttpResponse:
    form = FineFilterForm(request.GET)
    filters = form.filters()
    page = fine_search(**filters)
    return _render(request, "fleet/fines.html", filters, form=form, page=page)


@require_GET
@login_required
@vary_on_headers("HX-Request")
def notification_list(request: AuthenticatedRequest) -> HttpResponse:
    form = NotificationFilterForm(request.GET)
    filters = form.filters()
    page = notification_search(**filters)
    return _render(request, "fleet/notifications.html", filters, form=form, page=page)


def _render(
    request: AuthenticatedRequest, template: str, filters: dict[str, object], **context: object
) -> HttpResponse:
    context |= {"filters": filters, "query_string": _query_string(filters)}
    # htmx swaps only the results.
    partial = is_fragment_request(request)
    return render(request, f"{template}#results" if partial else template, context)


def _query_string(filters: dict[str, object]) -> str:
    """The filters as a query string, defaults left out, for links that keep them."""
    yes_no = {True: "1", False: "0"}
    params = {
        name: yes_no[value] if isinstance(value, bool) else value
        for name, value in filters.items()
        if name != "page" and (isinstance(value, bool) or (isinstance(value, str) and value))
    }
    return urlencode(params)
