"""Template filters of the fine and notification pages."""

from __future__ import annotations

from datetime import datetime
from urllib.parse import urlsplit

from django import template
from django.urls import reverse

from fleet import plates

register = template.Library()


@register.filter
def https_url(value: object) -> str:
    """`value` if it is an https URL with a host, else "": only those become links.

    Links come from the fleet platform's payloads; anything else (http,
    `javascript:`, a relative path) is shown as text, never followed.
    """
    if not isinstance(value, str):
        return ""
    try:
        parts = urlsplit(value)
    except ValueError:
        return ""
    return value if parts.scheme == "https" and parts.hostname else ""


@register.filter
def iso_datetime(value: object) -> datetime | str:
    """An ISO 8601 text as a datetime (for the `date` filter); a datetime as it is (a
    fine's `occurred_at`); anything else as it was."""
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str) or not value:
        return ""
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return value


@register.filter
def plate(value: object) -> str:
    """A plate from a payload as the vehicle pages show plates (ABC-1234, ABC1D23)."""
    return plates.display_if_plate(str(value or ""))


@register.filter
def vehicle_url(value: object) -> str:
    """The page of the vehicle a payload's plate names; "" when it is not a plate."""
    text = str(value or "")
    return reverse("fleet:vehicle", args=[plates.normalize(text)]) if plates.is_valid(text) else ""
