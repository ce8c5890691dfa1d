"""The embedded fleet application: iframe, deep link, and the manager's fleet login.

A key is minted as late as possible: never for `/app/` itself (a page the
browser may prefetch or restore from its back-forward cache) but for the
htmx request that fills in the iframe when the page is really shown, or for
the deep link the user clicked. Every response that carries a key is
`no-store`.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import Resolver404, resolve, reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods

from fleet.forms import FleetAccountForm
from fleet.models import FleetAccount, MintPurpose
from fleet.services.scopes import scope_of, scope_sees
from fleet.services.sso import MintFailed, access_key_mint, fleet_account_link, fleet_app_url
from fleet.views import AuthenticatedRequest, with_failure_status


def _is_prefetch(request: HttpRequest) -> bool:
    purpose = request.headers.get("Sec-Purpose", "") or request.headers.get("Purpose", "")
    return "prefetch" in purpose.lower()


@require_GET
@login_required
@never_cache
def app(request: AuthenticatedRequest) -> HttpResponse:
    """The page around the iframe; the iframe itself comes from `app_frame`."""
    return render(request, "fleet/app.html", {"login_origin": settings.FLEET_LOGIN_ORIGIN})


@require_GET
@login_required
@never_cache
def app_frame(request: AuthenticatedRequest) -> HttpResponse:
    """The iframe, with a key minted for this one load (htmx fragment of `app`)."""
    if not request.htmx or _is_prefetch(request):
        # A direct visit or a prefetch must not spend a key: show the page instead.
        return redirect("fleet:app")
    try:
        key = access_key_mint(user=request.user, purpose=MintPurpose.EMBED)
    except MintFailed as failure:
        # 200: htmx only swaps successful answers in, and this is content to show.
        return render(request, "fleet/app.html#failure", {"failure": failure})
    return render(request, "fleet/app.html#frame", {"app_url": fleet_app_url(access_key=key)})


@require_http_methods(["GET", "POST"])
@login_required
@never_cache
def app_open(request: AuthenticatedRequest) -> HttpResponse:
    """The authenticated deep link: mint, then send the browser into the fleet app.

    A key is minted for a POST (the portal's own buttons; CSRF-checked, Origin
    included) or for a GET the browser says came from a page of the portal
    (`Sec-Fetch-Site: same-origin`). Any other GET gets a page with a button
    that posts, and no key: one from another site, one without the header (an
    older browser, a script) and one with `Sec-Fetch-Site: none`. `none` is a
    typed or bookmarked address, but also a link opened from an e-mail or chat
    application, which another person may have sent: a bookmark costs one click,
    a stranger's link gets no key. Prefetches mint nothing either.
    """
    back = _next_or(request, "")
    if not _in_scope(request, back):
        raise Http404  # as for the page itself: nothing says the vehicle exists
    from_the_portal = request.headers.get("Sec-Fetch-Site") == "same-origin"
    if request.method == "GET" and (not from_the_portal or _is_prefetch(request)):
        return render(request, "fleet/app_open.html", {"back": back, "confirm": True})
    try:
        key = access_key_mint(user=request.user, purpose=MintPurpose.DEEP_LINK)
    except MintFailed as failure:
        response = render(request, "fleet/app_open.html", {"back": back, "failure": failure})
        return with_failure_status(response, failure.outcome, retry_after=failure.retry_after)
    return HttpResponseRedirect(fleet_app_url(access_key=key))


@require_http_methods(["GET", "POST"])
@login_required
@never_cache
def fleet_account(request: AuthenticatedRequest) -> HttpResponse:
    """Where a manager links or updates their own fleet login."""
    account = FleetAccount.objects.filter(user=request.user).first()
    form = FleetAccountForm(
        request.POST or None, initial={"email": account.email if account else ""}
    )
    if request.method == "POST" and form.is_valid():
        try:
            fleet_account_link(
                user=request.user,
                email=form.cleaned_data["email"],
                password=form.cleaned_data["password"],
            )
        except MintFailed as failure:
            form.add_failure(failure)
        else:
            messages.success(request, _("Your fleet login is linked."))
            return redirect(_next_or(request, reverse("fleet:app")))
    return render(request, "fleet/fleet_account.html", {"form": form, "account": account})


def _in_scope(request: AuthenticatedRequest, back: str) -> bool:
    """Whether the vehicle or record the deep link is for (its `plate`, or the page it
    comes from and returns to) is one the user sees."""
    scope = scope_of(request.user)
    if scope.whole_fleet:
        return True
    plate = request.POST.get("plate") or request.GET.get("plate") or ""
    if plate and not scope_sees(scope, "fleet:vehicle", {"plate": plate}):
        return False
    try:
        match = resolve(urlsplit(back).path) if back else None
    except Resolver404:
        return True  # not a page about a vehicle
    return match is None or scope_sees(scope, match.view_name, match.kwargs)


def _next_or(request: HttpRequest, default: str) -> str:
    """The `next` parameter when it is a page of this site, else `default`."""
    target = request.POST.get("next") or request.GET.get("next") or ""
    if url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return default
