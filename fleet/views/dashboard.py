"""The dashboard: the page a fleet manager lands on, with the counts to act on and the
money at stake (untreated R$, by month, by vehicle, by driver, lately received).

The counts refresh by themselves (htmx polls the `counts` fragment every
FLEET_COUNTS_POLL_SECONDS, and again when the window regains focus).
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.utils.safestring import mark_safe
from django.utils.translation import get_language
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from fleet.services.dashboard import fine_figures, fine_figures_html, record_counts
from fleet.services.scopes import scope_of
from fleet.services.vehicles import vehicles_ungrouped
from fleet.views import AuthenticatedRequest, is_fragment_request


@require_GET
@login_required
@vary_on_headers("HX-Request")
def dashboard(request: AuthenticatedRequest) -> HttpResponse:
    scope = scope_of(request.user)
    figures = fine_figures(scope=scope)
    context: dict[str, object] = {
        "counts": record_counts(scope=scope, figures=figures),
        "poll_seconds": settings.FLEET_COUNTS_POLL_SECONDS,
        "scope": scope,
    }
    partial = is_fragment_request(request)
    if not partial:  # the figures about money are not polled: they are read once a visit
        money = fine_figures_html(figures, language=get_language())
        context["money_html"] = mark_safe(money)  # noqa: S308 - the template's own output
        if scope.whole_fleet and request.user.is_staff:
            context["ungrouped"] = vehicles_ungrouped()
    template = "fleet/dashboard.html#counts" if partial else "fleet/dashboard.html"
    return render(request, template, context)
