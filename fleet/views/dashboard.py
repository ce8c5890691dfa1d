"""The dashboard: the page a fleet manager lands on, with the counts to act on and the
money at stake (untreated R$, by month, by vehicle, by driver, lately received).

The counts refresh by themselves (htmx polls the `counts` fragment every
FLEET_COUNTS_POLL_SECONDS, and again when the window regains focus). A part of the
fleet seen for the first time has its figures counted by the worker: the page says so
and its figures' area asks for the page again every few seconds (a browser without
JavaScript reloads it) until they are ready.
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

from fleet.services.dashboard import fine_figures_html, fine_figures_shown, record_counts
from fleet.services.scopes import scope_of
from fleet.services.vehicles import vehicles_ungrouped
from fleet.views import AuthenticatedRequest, is_fragment_request

# While a part of the fleet's figures are first counted, its figures' area (this id) asks
# for the page again this often.
COUNTING_POLL_SECONDS = 3
FIGURES_ID = "dashboard-figures"


@require_GET
@login_required
@vary_on_headers("HX-Request", "HX-Target")
def dashboard(request: AuthenticatedRequest) -> HttpResponse:
    scope = scope_of(request.user)
    figures = fine_figures_shown(scope=scope)
    poll_seconds = settings.FLEET_COUNTS_POLL_SECONDS
    context: dict[str, object] = {
        "poll_seconds": poll_seconds,
        "scope": scope,
        "figures_id": FIGURES_ID,
    }
    # The figures' area polled while they are first counted wants the whole page's.
    partial = is_fragment_request(request) and request.htmx.target != FIGURES_ID
    if figures is None:  # a part of the fleet's, counted by the worker for the first time
        context["counting_poll_seconds"] = min(COUNTING_POLL_SECONDS, poll_seconds)
    else:
        context["counts"] = record_counts(scope=scope, figures=figures)
        if not partial:  # the figures about money are not polled: read once a visit
            money = fine_figures_html(figures, language=get_language())
            context["money_html"] = mark_safe(money)  # noqa: S308 - the template's own output
    if not partial and scope.whole_fleet and request.user.is_staff:
        context["ungrouped"] = vehicles_ungrouped()
    template = "fleet/dashboard.html#counts" if partial else "fleet/dashboard.html"
    return render(request, template, context)
