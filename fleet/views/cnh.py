"""Driver licence (CNH) lookups: the forms and history, a lookup's progress and results.

No view waits for the Fleet API: a lookup is stored and queued for the
background worker, and its page polls (htmx) until it is done or failed;
the final fragment has no trigger, so polling stops. A lookup is only ever
shown to its owner and to staff who administer its owner (all staff who see the
whole fleet); anyone else gets the same 404 as for a lookup that does not exist.

CPFs whose outcome is unknown (the fleet service got the lookup and never
answered, its answer could not be read, or the worker died during the call:
it may have been done and charged) are looked up again only when the manager
ticks that a second charge is accepted (`accept_charge`). A lookup its worker
left running is ended so when its page is opened after its lease
(`cnh_lookup_recover`; the worker's sweep does it too), never queued again.
"""

from __future__ import annotations

from uuid import UUID

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils import formats, timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from fleet.forms_cnh import CnhBatchForm, CnhLookupForm
from fleet.models import CnhItemStatus, CpfDisclosurePlace
from fleet.services.cnh import cnh_lookup_create, cnh_lookup_recover, cnh_lookup_retry_failed
from fleet.services.cnh_privacy import (
    CnhDailyLimitReached,
    cnh_daily_allowance,
    cpf_disclosure_record,
    cpf_full_allowed,
)
from fleet.services.cnh_results import (
    CnhLookupNotFound,
    cnh_lookup_get,
    cnh_lookup_history,
    cnh_lookup_rows,
)
from fleet.views import AuthenticatedRequest, Polling, is_fragment_request

# A lookup usually finishes in seconds: ask soon, then less and less often.
POLLING = Polling(first_ms=1_000, max_ms=10_000)


@require_GET
@login_required
def cnh_lookups(request: AuthenticatedRequest) -> HttpResponse:
    """The two forms (one CPF, a list) and the user's lookups, newest first."""
    return _index(request, single=CnhLookupForm(), batch=CnhBatchForm())


@require_POST
@login_required
def cnh_lookup_single(request: AuthenticatedRequest) -> HttpResponse:
    form = CnhLookupForm(request.POST)
    if not form.is_valid():
        return _index(request, single=form, batch=CnhBatchForm(), status=400)
    try:
        lookup = cnh_lookup_create(
            owner=request.user,
            cpfs=[form.cleaned_data["cpf"]],
            batch=False,
            purpose=form.cleaned_data["purpose"],
            purpose_detail=form.cleaned_data["purpose_detail"],
        )
    except CnhDailyLimitReached as reached:
        form.add_error(None, limit_message(reached))
        return _index(request, single=form, batch=CnhBatchForm(), status=429)
    return redirect(lookup)


@require_POST
@login_required
def cnh_lookup_batch(request: AuthenticatedRequest) -> HttpResponse:
    form = CnhBatchForm(request.POST, request.FILES)
    if not form.is_valid():
        return _index(request, single=CnhLookupForm(), batch=form, status=400)
    read = form.read
    try:
        lookup = cnh_lookup_create(
            owner=request.user,
            cpfs=read.cpfs,
            batch=True,
            purpose=form.cleaned_data["purpose"],
            purpose_detail=form.cleaned_data["purpose_detail"],
        )
    except CnhDailyLimitReached as reached:
        form.add_error(None, limit_message(reached))
        return _index(request, single=CnhLookupForm(), batch=form, status=429)
    if read.invalid:
        messages.warning(
            request,
            ngettext(
                "%(count)d invalid line was left out.",
                "%(count)d invalid lines were left out.",
                len(read.invalid),
            )
            % {"count": len(read.invalid)},
        )
    if read.repeated:
        messages.info(
            request,
            ngettext(
                "%(count)d repeated CPF is looked up once.",
                "%(count)d repeated CPFs are looked up once.",
                read.repeated,
            )
            % {"count": read.repeated},
        )
    return redirect(lookup)


@require_GET
@login_required
@never_cache
def cnh_lookup(request: AuthenticatedRequest, lookup_id: UUID) -> HttpResponse:
    """A lookup's progress and results; htmx polls its `lookup` fragment until it is final.

    CPFs are shown in full only to users allowed to see them, and each such
    page or fragment is recorded (`CpfDisclosure`); everyone else sees them masked.
    """
    try:
        lookup = cnh_lookup_get(user=request.user, public_id=lookup_id)
    except CnhLookupNotFound:
        return _not_found(request)
    cnh_lookup_recover(lookup=lookup)
    delay_ms = POLLING.delay(request.GET.get("poll"))
    rows = cnh_lookup_rows(lookup=lookup)
    show_full = cpf_full_allowed(user=request.user)
    if show_full:
        cpf_disclosure_record(
            user=request.user, lookup=lookup, place=CpfDisclosurePlace.PAGE, count=len(rows)
        )
    context = {
        "show_full_cpfs": show_full,
        "not_found": False,
        "lookup": lookup,
        "rows": rows,
        "failed_count": sum(row.status == CnhItemStatus.ERROR for row in rows),
        "unknown_count": sum(row.status == CnhItemStatus.UNKNOWN for row in rows),
        "max_attempts": settings.FLEET_CNH_MAX_ATTEMPTS,
        # The wait before the fragment asks again (None: it does not), and the one after.
        "poll_ms": None if lookup.is_final else delay_ms,
        "next_poll_ms": POLLING.after(delay_ms),
    }
    if is_fragment_request(request):
        return render(request, "fleet/cnh_lookup.html#lookup", context)
    return render(request, "fleet/cnh_lookup.html", context)


@require_POST
@login_required
def cnh_lookup_retry(request: AuthenticatedRequest, lookup_id: UUID) -> HttpResponse:
    """Queue the lookup's failed CPFs again, all together.

    Those whose outcome is unknown go too only when the form's `accept_charge`
    box is ticked: they may already have been charged once.
    """
    try:
        lookup = cnh_lookup_get(user=request.user, public_id=lookup_id)
    except CnhLookupNotFound:
        return _not_found(request)
    accepted = request.POST.get("accept_charge") == "on"
    if count := cnh_lookup_retry_failed(lookup=lookup, include_unknown=accepted):
        messages.success(
            request,
            ngettext(
                "%(count)d CPF is being looked up again.",
                "%(count)d CPFs are being looked up again.",
                count,
            )
            % {"count": count},
        )
    elif lookup.is_final and lookup.items.filter(status=CnhItemStatus.UNKNOWN).exists():
        messages.warning(
            request,
            _(
                "Nothing was sent. To look up again a CPF whose outcome is unknown, "
                "confirm that you accept that it may be charged a second time."
            ),
        )
    else:
        messages.info(request, _("There is nothing to look up again in this lookup."))
    return redirect(lookup)


def _index(
    request: AuthenticatedRequest,
    *,
    single: CnhLookupForm,
    batch: CnhBatchForm,
    status: int = 200,
) -> HttpResponse:
    context = {
        "single_form": single,
        "batch_form": batch,
        "history": cnh_lookup_history(user=request.user, page=request.GET.get("page")),
        "batch_limit": settings.FLEET_CNH_BATCH_LIMIT,
        "allowance": cnh_daily_allowance(user=request.user),
        "retention_days": settings.FLEET_CNH_RETENTION_DAYS,
    }
    return render(request, "fleet/cnh.html", context, status=status)


def limit_message(reached: CnhDailyLimitReached) -> str:
    """What the user is told when a lookup would pass the daily limit, and when it renews."""
    allowance = reached.allowance
    renews = formats.date_format(timezone.localtime(allowance.renews_at), "DATETIME_FORMAT")
    if not allowance.remaining:
        return _(
            "You have looked up %(limit)d CPFs today, the daily limit. Nothing was sent. "
            "You can look up more from %(renews)s."
        ) % {"limit": allowance.limit, "renews": renews}
    return ngettext(
        "This lookup has %(asked)d CPFs, but you can look up only %(remaining)d more CPF "
        "today (the daily limit is %(limit)d). Nothing was sent. The limit renews at "
        "%(renews)s.",
        "This lookup has %(asked)d CPFs, but you can look up only %(remaining)d more CPFs "
        "today (the daily limit is %(limit)d). Nothing was sent. The limit renews at "
        "%(renews)s.",
        allowance.remaining,
    ) % {
        "asked": reached.asked,
        "remaining": allowance.remaining,
        "limit": allowance.limit,
        "renews": renews,
    }


def _not_found(request: AuthenticatedRequest) -> HttpResponse:
    return render(request, "fleet/cnh_lookup.html", {"not_found": True}, status=404)
