"""The fines still to indicate (`/fines/indications/`): the queue, by deadline, and its CSV."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, QueryDict, StreamingHttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from fleet import plates
from fleet.forms_indications import IndicationQueueForm
from fleet.models import DeadlineBasis, DriverBasis, Fine
from fleet.services.driver_licences import driver_licences_of
from fleet.services.indications import (
    FINE_INDICATION_PERMISSION,
    QueueCursor,
    fine_deadlines,
    indication_queue,
    indication_queue_export,
    nic_amount,
)
from fleet.services.scopes import scope_of
from fleet.views import AuthenticatedRequest
from fleet.views.csv_export import csv_download
from fleet.views.rows import rows_rendered
from portal.lib import formatting


@require_GET
@login_required
@vary_on_headers("HX-Request")
def indication_queue_page(request: AuthenticatedRequest) -> HttpResponse:
    """The fines of the user's vehicles still to indicate, the overdue first, then by the
    days left; a page at a time (a keyset: `after`)."""
    scope = scope_of(request.user)
    form = IndicationQueueForm(request.GET, scope=scope)
    filters = form.filters()
    after = QueueCursor.parse(request.GET.get("after", ""))
    page = indication_queue(scope=scope, after=after, **filters)
    query = QueryDict(mutable=True)
    for name in ("group", "plate", "driver", "within"):
        if value := request.GET.get(name, ""):
            query[name] = value
    fines = [fine for fine, _deadlines in page.rows]
    # The licences of the page's drivers, in one query: a row warns of one not valid.
    licences = driver_licences_of(fine.driver_id for fine in fines)
    named = [licences.get(fine.driver_id) if fine.driver_id else None for fine in fines]
    contexts = [
        {"deadlines": deadlines, "licence": licence}
        for (_fine, deadlines), licence in zip(page.rows, named, strict=True)
    ]
    keys = [licence.key if licence is not None else "" for licence in named]
    context = {
        "form": form,
        "page": page,
        "rows": rows_rendered(
            "fleet/indications.html#queue_row", fines, contexts=contexts, keys=keys
        ),
        "query_string": query.urlencode(),
        "first_page": after is None,
        "may_indicate": request.user.has_perm(FINE_INDICATION_PERMISSION),
    }
    return render(request, "fleet/indications.html", context)


@require_GET
@login_required
def indication_queue_csv(request: AuthenticatedRequest) -> StreamingHttpResponse:
    """The whole queue the filters select, as CSV."""
    scope = scope_of(request.user)
    filters = IndicationQueueForm(request.GET, scope=scope).filters()
    today = timezone.localdate()
    day, days_written = formatting.spreadsheet_days()
    known = {value: str(label) for value, label in DeadlineBasis.choices}
    driver_known = {value: str(label) for value, label in DriverBasis.choices}

    def row(fine: Fine) -> list[object]:
        deadlines = fine_deadlines(fine, today=today)
        nic = nic_amount(fine.amount)
        return [
            plates.display_if_plate(fine.plate),
            fine.description,
            fine.reference,
            day(fine.indication_due),
            known.get(fine.indication_due_basis or "", ""),
            deadlines.days_left if deadlines.days_left is not None else "",
            fine.driver_id if fine.driver_id is not None else "",
            fine.driver_name,
            driver_known.get(fine.driver_basis, ""),
            fine.amount if fine.amount is not None else fine.amount_text,
            nic if nic is not None else "",
        ]

    header = [
        _("Plate"),
        _("Infraction"),
        _("Notice"),
        _("Indicate the driver by") + days_written,
        _("How the indication deadline is known"),
        _("Days left"),
        _("Driver id"),
        _("Driver"),
        _("How the driver is known"),
        _("Amount (R$)"),
        _("NIC if not indicated (R$)"),
    ]
    return csv_download(
        name="fines-to-indicate",
        header=header,
        records=indication_queue_export(scope=scope, today=today, **filters),
        row=row,
    )
