"""What the portal keeps in a signed-in session, and when a session ends.

A session ends SESSION_IDLE_MINUTES after the person's last request and
SESSION_MAX_HOURS after sign-in. Requests a page makes by itself (htmx polls,
marked with the `X-Background-Refresh` header) do not count as activity: a
dashboard left open on a screen does not keep a session alive.
"""

from __future__ import annotations

import enum
import time
from typing import Any

from django.conf import settings
from django.http import HttpRequest

STARTED = "signin.started"
SEEN = "signin.seen"
PROVIDER = "signin.provider"
PROVIDER_ORIGIN = "signin.provider_origin"
ID_TOKEN = "signin.id_token"  # noqa: S105 (a session key's name)
BACKGROUND_HEADER = "X-Background-Refresh"
# Seconds between two writes of the last activity: not a session save per request.
_TOUCH_EVERY = 60


class Expiry(enum.StrEnum):
    IDLE = "idle"
    MAXIMUM = "maximum"


def session_start(sender: Any, request: HttpRequest, user: Any, **kwargs: Any) -> None:
    """`user_logged_in` receiver: the clock of both limits starts now."""
    now = time.time()
    request.session[STARTED] = now
    request.session[SEEN] = now


def session_record(sender: Any, request: HttpRequest, user: Any, **kwargs: Any) -> None:
    """`user_logged_in` receiver: the session is recorded as `user`'s (allauth's
    `UserSession`), whoever signed them in (a provider, the local form, a test), so that
    `sessions_end` finds theirs without reading anyone else's."""
    from allauth.usersessions.models import UserSession

    from portal.lib.addresses import client_address

    if not request.session.session_key:
        request.session.save()
    longest = UserSession._meta.get_field("user_agent").max_length or 200
    UserSession.objects.update_or_create(
        session_key=request.session.session_key,
        defaults={
            "user": user,
            "ip": client_address(request) or "0.0.0.0",  # noqa: S104 (an address unknown)
            "user_agent": request.META.get("HTTP_USER_AGENT", "")[:longest],
        },
    )


def sessions_end(*, user: Any) -> int:
    """End `user`'s sessions, and theirs only, whatever the session engine; how many.
    Their sessions are those recorded at their sign-ins (`session_record`)."""
    from allauth.usersessions.models import UserSession

    ended = 0
    for session in UserSession.objects.filter(user=user):
        session.end()  # the engine's store forgets it, and the record goes
        ended += 1
    return ended


def session_expiry(request: HttpRequest) -> Expiry | None:
    """Whether the signed-in session of `request` is over, and why."""
    now = time.time()
    started = request.session.get(STARTED)
    seen = request.session.get(SEEN)
    if started is None or seen is None:  # a session from before these limits
        session_start(None, request, request.user)
        return None
    if now - started > settings.SESSION_MAX_HOURS * 3600:
        return Expiry.MAXIMUM
    if now - seen > settings.SESSION_IDLE_MINUTES * 60:
        return Expiry.IDLE
    return None


def session_touch(request: HttpRequest) -> None:
    """Count `request` as activity, unless the page made it by itself."""
    if request.headers.get(BACKGROUND_HEADER):
        return
    now = time.time()
    if now - request.session.get(SEEN, 0) >= _TOUCH_EVERY:
        request.session[SEEN] = now


def remember_id_token(request: HttpRequest, raw_id_token: str) -> None:
    """Keep the provider's ID token for the sign-out there (`id_token_hint`)."""
    request.session[ID_TOKEN] = raw_id_token


def remember_provider(request: HttpRequest, provider_id: str, origin: str) -> None:
    """The provider this session came through, and its origin (signin.middleware)."""
    request.session[PROVIDER] = provider_id
    request.session[PROVIDER_ORIGIN] = origin


def forget_id_token(request: HttpRequest) -> None:
    request.session.pop(ID_TOKEN, None)


def signed_in_provider(request: HttpRequest) -> tuple[str | None, str | None]:
    """The provider this session signed in through and its ID token, if any."""
    return request.session.get(PROVIDER), request.session.get(ID_TOKEN)
