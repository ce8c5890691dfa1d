"""The alerts page in a user's profile, and the one-click unsubscribe of the e-mails."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods, require_POST

from alerts.forms import AlertPreferencesForm, WebhookSubscriptionForm
from alerts.outbound import WebhookAddressRefused
from alerts.services.emails import UnsubscribeLinkRefused, masked_address, unsubscribe_user_find
from alerts.services.pauses import alert_pause_to_tell
from alerts.services.preferences import (
    alert_preferences_get,
    alert_preferences_save,
    email_unsubscribe,
)
from alerts.services.subscriptions import (
    WebhookSubscriptionRefused,
    webhook_subscription_create,
    webhook_subscription_delete,
    webhook_subscriptions_of,
)
from fleet.views import AuthenticatedRequest


@require_http_methods(["GET", "POST"])
@login_required
def preferences(request: AuthenticatedRequest) -> HttpResponse:
    """Which events, how, for which vehicles; and the user's webhook subscriptions."""
    current = alert_preferences_get(user=request.user)
    form = AlertPreferencesForm(request.POST or None, instance=current)
    if request.method == "POST" and form.is_valid():
        alert_preferences_save(user=request.user, **form.cleaned_data)
        messages.success(request, _("Your alert preferences are saved."))
        return redirect("alerts:preferences")
    return _page(request, form=form, webhook_form=WebhookSubscriptionForm())


@require_POST
@login_required
def webhook_create(request: AuthenticatedRequest) -> HttpResponse:
    """A new subscription; its secret is on the answer, and never again."""
    form = WebhookSubscriptionForm(request.POST)
    secret = ""
    retry_after: int | None = None
    if form.is_valid():
        try:
            _subscription, secret = webhook_subscription_create(
                user=request.user,
                url=form.cleaned_data["url"],
                description=form.cleaned_data["description"],
            )
        except WebhookAddressRefused as refused:
            form.add_error("url", str(refused))
        except WebhookSubscriptionRefused as refused:
            form.add_error(None, str(refused))
            retry_after = refused.retry_after
        else:
            form = WebhookSubscriptionForm()
    preferences_form = AlertPreferencesForm(instance=alert_preferences_get(user=request.user))
    response = _page(
        request,
        form=preferences_form,
        webhook_form=form,
        secret=secret,
        status=200 if secret else 400 if retry_after is None else 429,
    )
    if retry_after is not None:
        response.headers["Retry-After"] = str(retry_after)
    return response


@require_POST
@login_required
def webhook_delete(request: AuthenticatedRequest, subscription_id: int) -> HttpResponse:
    if webhook_subscription_delete(user=request.user, subscription_id=subscription_id):
        messages.success(request, _("The webhook subscription is removed."))
    return redirect("alerts:preferences")


# RFC 8058: a mail client POSTs `List-Unsubscribe=One-Click` without a session or a
# CSRF token; the signed token in the address is the proof.
@csrf_exempt
@require_http_methods(["GET", "POST"])
def unsubscribe(request: HttpRequest, token: str) -> HttpResponse:
    """GET: a page that asks to confirm (a link scanner must not unsubscribe anyone);
    POST: no more alert e-mails for the user the link was sent to."""
    try:
        user = unsubscribe_user_find(token=token)
    except UnsubscribeLinkRefused as refused:
        problem: dict[str, Any] = {
            "problem": refused.problem,
            "days": settings.ALERTS_UNSUBSCRIBE_DAYS,
        }
        status = 404 if refused.problem == UnsubscribeLinkRefused.INVALID else 410
        return render(request, "alerts/unsubscribe.html", problem, status=status)
    context: dict[str, Any] = {"email": masked_address(user.email)}
    if request.method == "POST":
        email_unsubscribe(user=user)
        context["done"] = True
    return render(request, "alerts/unsubscribe.html", context)


def _page(
    request: AuthenticatedRequest,
    *,
    form: AlertPreferencesForm,
    webhook_form: WebhookSubscriptionForm,
    secret: str = "",
    status: int = 200,
) -> HttpResponse:
    context: dict[str, Any] = {
        "form": form,
        "webhook_form": webhook_form,
        "subscriptions": webhook_subscriptions_of(user=request.user),
        "secret": secret,
        "pause": alert_pause_to_tell(user=request.user),
    }
    return render(request, "alerts/preferences.html", context, status=status)
