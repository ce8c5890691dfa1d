"""The token a request presents in `Authorization: Bearer <token>` (SCIM's callers,
the metrics' scraper)."""

from __future__ import annotations

from django.http import HttpRequest


def bearer_token(request: HttpRequest) -> str:
    """The bearer token the request presents; "" without one (no header, another scheme,
    or nothing after the word)."""
    scheme, _, presented = request.headers.get("Authorization", "").partition(" ")
    return presented.strip() if scheme.lower() == "bearer" else ""
