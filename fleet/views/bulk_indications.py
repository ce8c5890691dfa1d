"""Indicating the drivers of several fines at once, from the queue: the fines ticked, each
with its driver (the attributed one filled in, a guess said so, for a person to check), one
way and one day for all; a review page first, then each fine recorded on its own
(`fine_indicate`: audited, two people at once one wins). A fine the user does not see makes
the whole request not found; without the permission, it is refused."""

from __future__ import annotations

from typing import Final

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_POST

from fleet.forms_indications import BulkIndicateForm
from fleet.models import Fine, IndicationChannel
from fleet.services.drivers import driver_label, fines_named
from fleet.services.indications import (
    FINE_INDICATION_PERMISSION,
    ChangedMeanwhile,
    fine_deadlines,
    fine_indicate,
    seen_value,
)
from fleet.services.scopes import VehicleScope, scope_of
from fleet.views import AuthenticatedRequest

# Fines one review page takes: two pages of the queue.
BULK_LIMIT: Final = 100


@require_POST
@login_required
def queue_indicate(request: AuthenticatedRequest) -> HttpResponse:
    """The fines ticked in the queue (`fine`): their review page, then (`confirm`) each
    recorded as indicated; back to the queue, saying how many and which were not."""
    typed = request.POST.getlist("fine")
    if not typed:
        messages.error(request, _("Tick the fines whose driver you indicated."))
        return redirect("fleet:indications")
    if len(typed) > BULK_LIMIT:
        text = _("At most %(limit)d fines at once: tick fewer.") % {"limit": BULK_LIMIT}
        messages.error(request, text)
        return redirect("fleet:indications")
    try:
        ids = sorted({int(value) for value in typed})
    except ValueError:
        raise Http404 from None
    scope = scope_of(request.user)
    fines = list(scope.records(Fine.objects.filter(pk__in=ids)).order_by("indication_due", "pk"))
    if len(fines) != len(ids):
        raise Http404
    if not request.user.has_perm(FINE_INDICATION_PERMISSION):
        raise PermissionDenied
    fines_named(fines)
    if "confirm" not in request.POST:
        form = BulkIndicateForm(initial=_initial(fines, scope), scope=scope, fine_ids=ids)
        return _review(request, fines, form)
    form = BulkIndicateForm(request.POST, scope=scope, fine_ids=ids)
    if not form.is_valid():
        return _review(request, fines, form, status=400)
    recorded, changed = 0, []
    for fine in fines:
        try:
            fine_indicate(
                fine_id=fine.pk,
                driver_id=form.driver_of(fine.pk),
                channel=IndicationChannel(form.cleaned_data["channel"]),
                on=form.cleaned_data["on"],
                seen=form.seen_of(fine.pk),
                user=request.user,
            )
        except ChangedMeanwhile:
            changed.append(fine.reference or fine.external_id)
        else:
            recorded += 1
    if recorded:
        text = ngettext(
            "%(count)d indication recorded: its fine leaves the queue.",
            "%(count)d indications recorded: their fines leave the queue.",
            recorded,
        )
        messages.success(request, text % {"count": recorded})
    if changed:
        text = _("Changed meanwhile, not recorded (see each fine's page): %(notices)s")
        messages.error(request, text % {"notices": ", ".join(changed)})
    return redirect("fleet:indications")


def _initial(fines: list[Fine], scope: VehicleScope) -> dict[str, object]:
    """Each fine's driver as attributed (a person checks it), what the page shows of it,
    and today."""
    initial: dict[str, object] = {"on": timezone.localdate(), "channel": IndicationChannel.POST}
    labels = {
        driver_id: driver_label(driver_id, scope)
        for driver_id in {fine.driver_id for fine in fines if fine.driver_id is not None}
    }
    for fine in fines:
        initial[f"driver-{fine.pk}"] = labels.get(fine.driver_id, "") if fine.driver_id else ""
        initial[f"seen-{fine.pk}"] = seen_value(fine.indication, fine.indication_basis or "")
    return initial


def _review(
    request: AuthenticatedRequest, fines: list[Fine], form: BulkIndicateForm, *, status: int = 200
) -> HttpResponse:
    rows = [
        (fine, fine_deadlines(fine), form[f"driver-{fine.pk}"], form[f"seen-{fine.pk}"])
        for fine in fines
    ]
    return render(
        request, "fleet/indications_bulk.html", {"rows": rows, "form": form}, status=status
    )
