"""An indication's receipt, downloaded from the fine's page: only by those who see the
fine (else not found), as an attachment of the type its content was found to be, which a
browser may neither sniff into another nor run (a sandbox with no scripts)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_GET

from fleet.services.receipts import receipt_get
from fleet.services.scopes import scope_of
from fleet.views import AuthenticatedRequest


@require_GET
@login_required
def fine_indication_receipt(
    request: AuthenticatedRequest, fine_id: int, indication_id: int
) -> HttpResponse:
    """The receipt of one of the fine's indications, as it was uploaded."""
    receipt = receipt_get(
        scope=scope_of(request.user), fine_id=fine_id, indication_id=indication_id
    )
    if receipt is None:
        raise Http404
    response = HttpResponse(bytes(receipt.content), content_type=receipt.content_type)
    response["Content-Disposition"] = content_disposition_header(
        as_attachment=True, filename=receipt.name
    )
    response["X-Content-Type-Options"] = "nosniff"
    response["Cache-Control"] = "private, no-store"
    # Kept by the CSP middleware, which adds its policy only where a view set none.
    response["Content-Security-Policy"] = "sandbox; default-src 'none'"
    return response
