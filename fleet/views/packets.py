"""The indication packet as a download: a fine's (`/fines/<id>/packet.pdf`), and one for
the fines ticked in the queue (`/fines/indications/packet.pdf`). It carries a CPF: never
stored by a browser or a proxy, and a fine the user does not see is not found."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.utils.cache import patch_cache_control
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from fleet.models import Fine
from fleet.services.fines import fine_get
from fleet.services.packets import PACKET_LIMIT, PacketTooLarge, fine_packet, packet_filename
from fleet.services.scopes import scope_of
from fleet.views import AuthenticatedRequest


@require_GET
@login_required
def fine_packet_download(request: AuthenticatedRequest, fine_id: int) -> HttpResponse:
    """The fine's indication packet: one page, in Portuguese."""
    record = fine_get(scope=scope_of(request.user), fine_id=fine_id)
    if record is None:
        raise Http404
    return _pdf(fine_packet(user=request.user, fines=[record]), packet_filename([record]))


@require_POST
@login_required
def queue_packet_download(request: AuthenticatedRequest) -> HttpResponse:
    """The packet of the fines ticked in the queue (`fine`, each an id), in the queue's
    order. Any id the user does not see makes it not found: nothing is left out silently."""
    typed = request.POST.getlist("fine")
    if not typed:
        messages.error(request, _("Tick the fines whose indication packet you want."))
        return redirect("fleet:indications")
    if len(typed) > PACKET_LIMIT:
        return _too_large(request, len(typed))
    try:
        ids = sorted({int(value) for value in typed})
    except ValueError:
        raise Http404 from None
    scope = scope_of(request.user)
    found = scope.records(Fine.objects.filter(pk__in=ids)).order_by("indication_due", "pk")
    fines = list(found)
    if len(fines) != len(ids):
        raise Http404
    try:
        pdf = fine_packet(user=request.user, fines=fines)
    except PacketTooLarge as large:
        return _too_large(request, large.count)
    return _pdf(pdf, packet_filename(fines))


def _too_large(request: AuthenticatedRequest, count: int) -> HttpResponse:
    context = {"count": count, "limit": PACKET_LIMIT}
    return render(request, "fleet/packet_refused.html", context, status=400)


def _pdf(content: bytes, filename: str) -> HttpResponse:
    response = HttpResponse(content, content_type="application/pdf")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    patch_cache_control(response, private=True, no_store=True)
    return response
