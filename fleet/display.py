"""Values as a person reads them, in the active language and time zone, outside templates
(CSV exports, the admin's names of records)."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal, InvalidOperation

from django.utils import formats, timezone


def moment(value: datetime | None) -> str:
    """A moment in local time and the language's short format (`24/11/2026 14:36`)."""
    if value is None:
        return ""
    if timezone.is_aware(value):
        value = timezone.localtime(value)
    return formats.date_format(value, "SHORT_DATETIME_FORMAT")


def payload_moment(text: str) -> str:
    """A payload's ISO 8601 time as `moment` shows it; any other text as it is."""
    try:
        return moment(datetime.fromisoformat(text)) if text else ""
    except ValueError:
        return text


def amount(text: str) -> Decimal | str:
    """A payload's amount as a number with two decimals, for spreadsheets (the CSV
    export writes it in the language's format: `-293,47`); any other text as it is."""
    try:
        value = Decimal(text)
        # Too many digits for two decimals (`1e40`) raises too: kept as text.
        return value.quantize(Decimal("0.01")) if value.is_finite() else text
    except InvalidOperation:
        return text
