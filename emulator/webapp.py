"""The vendor's web application: single-use login links and the app pages.

`POST /key/generator` mints an accessKey for a web-app user; the first
`GET /app/login?accessKey=K` spends it and opens a session (a cookie); a
reused, unknown or expired key gets the expired-link page (spec 2.3, 4.2).
"""

from __future__ import annotations

import hmac
import secrets
import threading
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from http.cookies import CookieError, SimpleCookie
from typing import TYPE_CHECKING
from urllib.parse import parse_qs

from emulator.messages import HTML, Call, Request, Response
from emulator.pages import app_page, expired_page, not_found_page
from emulator.routing import Route, Router

if TYPE_CHECKING:
    from emulator.state import Emulator

ACCESS_KEY_LIFETIME = timedelta(minutes=10)
SESSION_COOKIE = "fleet_app_session"
PASSWORD = "demo-password"  # noqa: S105 (the documented demo password)


@dataclass(frozen=True, slots=True)
class WebUser:
    email: str
    name: str


USERS = {
    user.email: user
    for user in (
        WebUser("manager@example.com", "Marina Costa, gestora de frota"),
        WebUser("driver@example.com", "João Pereira, motorista"),
    )
}


@dataclass(frozen=True, slots=True)
class _AccessKey:
    user: WebUser
    expires_at: datetime


class WebApp:
    """Unspent access keys and open sessions."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._keys: dict[str, _AccessKey] = {}
        self._sessions: dict[str, WebUser] = {}

    def reset(self) -> None:
        with self._lock:
            self._keys.clear()
            self._sessions.clear()

    @staticmethod
    def check_login(email: str, password: str) -> WebUser | None:
        user = USERS.get(email.lower())
        password_ok = hmac.compare_digest(password.encode("utf-8"), PASSWORD.encode("utf-8"))
        return user if user and password_ok else None

    def mint_access_key(self, user: WebUser, now: datetime) -> str:
        key = str(uuid.uuid4())
        with self._lock:
            self._keys[key] = _AccessKey(user, now + ACCESS_KEY_LIFETIME)
        return key

    def redeem(self, key: str, now: datetime) -> tuple[WebUser, str] | None:
        """Spend the key: its user and a new session id, or None if it is no good."""
        with self._lock:
            access = self._keys.pop(key, None)
            if access is None or now >= access.expires_at:
                return None
            session = secrets.token_urlsafe(24)
            self._sessions[session] = access.user
        return access.user, session

    def session_user(self, session: str) -> WebUser | None:
        with self._lock:
            return self._sessions.get(session)


def login(emulator: Emulator, call: Call) -> Response:
    key = parse_qs(call.request.query).get("accessKey", [""])[0]
    redeemed = emulator.webapp.redeem(key, emulator.clock.now())
    if redeemed is None:
        return _page(401, expired_page())
    user, session = redeemed
    response = _page(200, app_page(email=user.email, name=user.name, fleet=emulator.fleet))
    # Lax is enough: the portal and the app share a site in every set-up we run.
    response.headers.append(
        ("Set-Cookie", f"{SESSION_COOKIE}={session}; Path=/app; HttpOnly; SameSite=Lax")
    )
    return response


def home(emulator: Emulator, call: Call) -> Response:
    user = emulator.webapp.session_user(_session_cookie(call.request))
    if user is None:
        return _page(401, expired_page())
    return _page(200, app_page(email=user.email, name=user.name, fleet=emulator.fleet))


ROUTES = Router(
    [
        Route("GET", "/app/login", login),
        Route("GET", "/app/", home),
        Route("GET", "/app", home),
    ]
)


def handle(emulator: Emulator, request: Request) -> Response:
    match = ROUTES.resolve(request.method, request.path)
    if match is None:
        return _page(404, not_found_page())
    if match.handler is None:
        response = _page(405, not_found_page())
        response.headers.append(("Allow", ", ".join(match.allowed)))
        return response
    return match.handler(emulator, Call(request, match.params))


def _page(status: int, html: str) -> Response:
    # No X-Frame-Options: the portal embeds these pages. No caching, and no
    # Referer, because the login URL carries a key.
    return Response(
        status,
        html.encode("utf-8"),
        HTML,
        [("Cache-Control", "no-store"), ("Referrer-Policy", "no-referrer")],
    )


def _session_cookie(request: Request) -> str:
    try:
        cookies = SimpleCookie(request.header("Cookie") or "")
    except CookieError:
        return ""
    morsel = cookies.get(SESSION_COOKIE)
    return morsel.value if morsel else ""
