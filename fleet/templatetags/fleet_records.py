"""Template filters of the fine and notification pages."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from urllib.parse import urlsplit

from django import template
from django.urls import reverse

from fleet import plates
from fleet.api.values import parse_moment
from fleet.models import BASIS_MARKS, DriverBasis, WebhookRecord
from portal.lib import formatting

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
def moment(value: datetime | str | None, sent: str = "") -> str:
    """A time as `formatting.moment` shows it
    (`{{ fine.occurred_at|moment:fine.occurred_at_text }}`); a text is a time the portal
    stored as ISO 8601 (a record's history of `treated`)."""
    return formatting.moment(parse_moment(value) if isinstance(value, str) else value, sent=sent)


@register.filter
def amount(value: Decimal | None, sent: str = "") -> str:
    """An amount as `formatting.amount` shows it (`{{ fine.amount|amount:fine.amount_text }}`)."""
    return formatting.amount(value, sent=sent)


@register.filter
def plate(value: object) -> str:
    """A plate from a payload as the vehicle pages show plates (ABC-1234, ABC1D23)."""
    return plates.display_if_plate(str(value or ""))


@register.filter
def plate_as_issued(record: WebhookRecord) -> str:
    """The plate a record was issued to, as shown, when it is the other format of its
    vehicle's registration (`ABC-1234` for `ABC1C34`); "" when it is the same."""
    issued = plates.normalize(record.plate)
    if not record.registration or issued == record.registration:
        return ""
    return plates.display(issued)


@register.filter
def vehicle_url(value: object) -> str:
    """The page of the vehicle a payload's plate names; "" when it is not a plate."""
    text = str(value or "")
    return reverse("fleet:vehicle", args=[plates.normalize(text)]) if plates.is_valid(text) else ""


@register.filter
def basis_mark(value: object) -> str:
    """How a driver is known (`DriverBasis`' value), as a short mark: "probable"."""
    return _basis_marked(value)[0]


@register.filter
def basis_explained(value: object) -> str:
    """What the mark of how a driver is known means (`BASIS_MARKS`), for its hover."""
    return _basis_marked(value)[1]


def _basis_marked(value: object) -> tuple[str, str]:
    if value not in DriverBasis.values or value not in BASIS_MARKS:
        return "", ""
    mark, meaning = BASIS_MARKS[DriverBasis(value)]
    return str(mark), str(meaning)


@register.filter
def counted_as(value: object) -> object:
    """The number a label's plural is chosen by where the count is shown apart from it
    ("0" above "fines"): zero takes the plural, as people say it; Portuguese's rule
    (n > 1) would take the singular, "0 multa"."""
    return 2 if value == 0 else value
