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
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from fleet.services.dashboard import fine_figures
from fleet.services.fines import record_counts
from fleet.views import AuthenticatedRequest, is_fragment_request


@require_GET
@login_required
@vary_on_headers("HX-Request")
def dashboard(request: AuthenticatedRequest) -> HttpResponse:
    context: dict[str, object] = {
        "counts": record_counts(),
        "poll_seconds": settings.FLEET_COUNTS_POLL_SECONDS,
    }
    partial = is_fragment_request(request)
    if not partial:  # the figures about money are not polled: they are read once a visit
        context["figures"] = fine_figures()
    template = "fleet/dashboard.html#counts" if partial else "fleet/dashboard.html"
    return render(request, template, context)
