"""A fine's page, and what a person changes on it: who was driving, its deadlines typed
from the paper notice, whether it needs an indication, the indication itself and the
authority's answer; each change audited, each refused (404) on a fine the user does not
see, whether or not they may change it."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from fleet.forms_indications import (
    FineAnswerForm,
    FineDeadlineForm,
    FineDriverForm,
    FineIndicateForm,
    FineIndicationNeedForm,
)
from fleet.models import (
    Fine,
    IndicationChannel,
    IndicationField,
)
from fleet.services.attribution import (
    FINE_DRIVER_PERMISSION,
    fine_driver_candidates,
    fine_driver_correct,
    fine_driver_corrections,
    fine_driver_story,
)
from fleet.services.driver_licences import driver_licences_of
from fleet.services.drivers import driver_label
from fleet.services.fines import (
    fine_get,
)
from fleet.services.indications import (
    FINE_INDICATION_PERMISSION,
    ChangedMeanwhile,
    fine_deadline_type,
    fine_deadlines,
    fine_indication_answer,
    fine_indication_as_seen,
    fine_indication_changes,
    fine_indication_need_set,
    fine_indications,
    fine_notifications,
    seen_value,
)
from fleet.services.indications import (
    fine_indicate as fine_indicate_record,
)
from fleet.services.platform_indications import (
    IndicationNotSent,
    indication_claimed,
    indication_send,
)
from fleet.services.scopes import VehicleScope, scope_of
from fleet.views import AuthenticatedRequest


@require_GET
@login_required
def fine_detail(request: AuthenticatedRequest, fine_id: int) -> HttpResponse:
    """One fine: what an alert links to; one outside the user's vehicles is not found."""
    record = fine_get(scope=scope_of(request.user), fine_id=fine_id)
    if record is None:
        raise Http404
    return _fine_page(request, record)


@require_POST
@login_required
def fine_driver_set(request: AuthenticatedRequest, fine_id: int) -> HttpResponse:
    """Who was driving, set by hand (audited): with the permission, on a fine the user
    sees (else not found, whether or not they may)."""
    record = _fine_to_change(request, fine_id, FINE_DRIVER_PERMISSION)
    form = FineDriverForm(request.POST, scope=scope_of(request.user))
    if not form.is_valid():
        return _fine_page(request, record, form, status=400)
    fine_driver_correct(
        fine_id=record.pk,
        driver_id=form.cleaned_data["driver_id"],
        reason=form.cleaned_data["reason"],
        user=request.user,
    )
    messages.success(request, _("Driver set. The change is recorded with your reason."))
    return redirect(record.get_absolute_url())


@require_POST
@login_required
def fine_deadline_set(request: AuthenticatedRequest, fine_id: int) -> HttpResponse:
    """A deadline typed from the paper notice (audited): with the permission, on a fine
    the user sees (else not found, whether or not they may)."""
    record = _fine_to_change(request, fine_id, FINE_INDICATION_PERMISSION)
    form = FineDeadlineForm(request.POST)
    if not form.is_valid():
        return _fine_page(request, record, deadline_form=form, status=400)
    field = form.cleaned_data["field"]
    try:
        fine_deadline_type(
            fine_id=record.pk,
            field=field,
            day=form.cleaned_data["day"],
            seen=form.cleaned_data["seen"],
            reason=form.cleaned_data["reason"],
            user=request.user,
        )
    except ChangedMeanwhile as changed:
        return _changed_meanwhile(request, record, changed)
    saved = {
        IndicationField.INDICATION_DUE: _("Indication deadline saved, as typed from the notice."),
        IndicationField.PAYMENT_DUE: _("Payment due date saved, as typed from the notice."),
    }
    messages.success(request, saved[field])
    return redirect(record.get_absolute_url())


@require_POST
@login_required
def fine_indication_need(request: AuthenticatedRequest, fine_id: int) -> HttpResponse:
    """Whether the fine needs an indication, set by hand with a reason (audited)."""
    record = _fine_to_change(request, fine_id, FINE_INDICATION_PERMISSION)
    form = FineIndicationNeedForm(request.POST)
    if not form.is_valid():
        return _fine_page(request, record, need_form=form, status=400)
    needed = form.cleaned_data["needed"]
    try:
        fine_indication_need_set(
            fine_id=record.pk,
            needed=needed,
            seen=form.cleaned_data["seen"],
            reason=form.cleaned_data["reason"],
            user=request.user,
        )
    except ChangedMeanwhile as changed:
        return _changed_meanwhile(request, record, changed)
    if needed:
        messages.success(request, _("The fine needs its driver indicated again."))
    else:
        messages.success(request, _("Marked as needing no indication, with your reason."))
    return redirect(record.get_absolute_url())


@require_POST
@login_required
def fine_indicate(request: AuthenticatedRequest, fine_id: int) -> HttpResponse:
    """The fine's driver as indicated to the authority (audited): who, how, when, and the
    proof it was sent if any (a receipt refused: nothing recorded, 400)."""
    record = _fine_to_change(request, fine_id, FINE_INDICATION_PERMISSION)
    form = FineIndicateForm(request.POST, request.FILES, scope=scope_of(request.user))
    if not form.is_valid():
        return _fine_page(request, record, indicate_form=form, status=400)
    channel = IndicationChannel(form.cleaned_data["channel"])
    if channel != IndicationChannel.PLATFORM:
        return _indication_recorded(request, record, form, channel)
    # Sent first, by one person at a time and only as their page showed the fine: a
    # failure leaves the fine to indicate, the platform's reason shown.
    try:
        fine_indication_as_seen(record, form.cleaned_data["seen"])
        with indication_claimed(record.pk):
            sent = indication_send(
                fine=record, driver_id=form.cleaned_data["driver"], on=form.cleaned_data["on"]
            )
            answer = f"{sent.indication_id} ({sent.status})"
            return _indication_recorded(request, record, form, channel, answer=answer)
    except ChangedMeanwhile as changed:
        return _changed_meanwhile(request, record, changed)
    except IndicationNotSent as error:
        form.add_error(None, error.message)
        statuses = {"off": 400, "incomplete": 400, "refused": 400, "busy": 409}
        return _fine_page(request, record, indicate_form=form, status=statuses.get(error.kind, 502))


def _indication_recorded(
    request: AuthenticatedRequest,
    record: Fine,
    form: FineIndicateForm,
    channel: IndicationChannel,
    *,
    answer: str = "",
) -> HttpResponse:
    try:
        fine_indicate_record(
            fine_id=record.pk,
            driver_id=form.cleaned_data["driver"],
            channel=channel,
            on=form.cleaned_data["on"],
            seen=form.cleaned_data["seen"],
            user=request.user,
            answer=answer,
            receipt=form.cleaned_data["receipt"],
        )
    except ChangedMeanwhile as changed:
        return _changed_meanwhile(request, record, changed)
    messages.success(request, _("Indication recorded: the fine leaves the queue."))
    return redirect(record.get_absolute_url())


@require_POST
@login_required
def fine_indication_answered(request: AuthenticatedRequest, fine_id: int) -> HttpResponse:
    """The authority's answer to the fine's indication: accepted, or refused and why."""
    record = _fine_to_change(request, fine_id, FINE_INDICATION_PERMISSION)
    form = FineAnswerForm(request.POST)
    if not form.is_valid():
        return _fine_page(request, record, answer_form=form, status=400)
    accepted = form.cleaned_data["accepted"]
    try:
        fine_indication_answer(
            fine_id=record.pk,
            accepted=accepted,
            reason=form.cleaned_data["reason"],
            seen=form.cleaned_data["seen"],
            user=request.user,
        )
    except ChangedMeanwhile as changed:
        return _changed_meanwhile(request, record, changed)
    if accepted:
        messages.success(request, _("The authority accepted the indication."))
    else:
        messages.success(request, _("Refused: the fine is back in the queue, to indicate again."))
    return redirect(record.get_absolute_url())


def _indicate_form(record: Fine, scope: VehicleScope) -> FineIndicateForm:
    """The indication's form, its driver the fine's as attributed (a person checks it)."""
    driver = driver_label(record.driver_id, scope) if record.driver_id is not None else ""
    initial = {"driver": driver, "on": timezone.localdate(), "channel": IndicationChannel.POST}
    return FineIndicateForm(initial=initial, scope=scope)


def _fine_to_change(request: AuthenticatedRequest, fine_id: int, permission: str) -> Fine:
    """The fine a change is asked for: not found unless the user sees it (whether or not
    they may change it), then refused without `permission`."""
    record = fine_get(scope=scope_of(request.user), fine_id=fine_id)
    if record is None:
        raise Http404
    if not request.user.has_perm(permission):
        raise PermissionDenied
    return record


def _changed_meanwhile(
    request: AuthenticatedRequest, record: Fine, changed: ChangedMeanwhile
) -> HttpResponse:
    """The page again, with what is now saved: someone changed it since the user's page."""
    if changed.by:
        text = _(
            "%(name)s changed it meanwhile: this is what is saved now. Nothing of yours was saved."
        )
        messages.error(request, text % {"name": changed.by})
    else:
        messages.error(
            request,
            _("It changed meanwhile: this is what is saved now. Nothing of yours was saved."),
        )
    fresh = fine_get(scope=scope_of(request.user), fine_id=record.pk) or record
    return _fine_page(request, fresh, status=409)


def _fine_page(
    request: AuthenticatedRequest,
    record: Fine,
    form: FineDriverForm | None = None,
    *,
    deadline_form: FineDeadlineForm | None = None,
    need_form: FineIndicationNeedForm | None = None,
    indicate_form: FineIndicateForm | None = None,
    answer_form: FineAnswerForm | None = None,
    status: int = 200,
) -> HttpResponse:
    scope = scope_of(request.user)
    seen = {
        "indication_due": seen_value(record.indication_due, record.indication_due_basis or ""),
        "payment_due": seen_value(record.payment_due, record.payment_due_basis or ""),
        "indication": seen_value(record.indication, record.indication_basis or ""),
    }
    may_set_driver = request.user.has_perm(FINE_DRIVER_PERMISSION)
    story = fine_driver_story(record)
    context = {
        "record": record,
        "driver": story,
        "licence": driver_licences_of([record.driver_id]).get(record.driver_id)
        if record.driver_id is not None
        else None,
        "driver_form": (form or FineDriverForm(scope=scope)) if may_set_driver else None,
        "driver_candidates": fine_driver_candidates(record, story) if may_set_driver else [],
        "driver_corrections": fine_driver_corrections(record),
        "deadlines": fine_deadlines(record),
        "may_indicate": request.user.has_perm(FINE_INDICATION_PERMISSION),
        "deadline_form": deadline_form,
        "need_form": need_form,
        "seen": seen,
        # Each deadline's form: the field, its label, the value the page shows.
        "deadline_fields": [
            (
                IndicationField.INDICATION_DUE.value,
                _("Indicate the driver by"),
                seen["indication_due"],
            ),
            (IndicationField.PAYMENT_DUE.value, _("Payment due"), seen["payment_due"]),
        ],
        "indication_changes": fine_indication_changes(record),
        "notifications": fine_notifications(scope=scope, fine=record),
        "indications": fine_indications(record),
        "indicate_form": indicate_form or _indicate_form(record, scope),
        "answer_form": answer_form,
        "channels": IndicationChannel.choices,
    }
    return render(request, "fleet/fine.html", context, status=status)
