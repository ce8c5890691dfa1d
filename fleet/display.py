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


def amount(text: str) -> str:
    """A payload's amount with two decimals in the language's format (`293,47`), for
    spreadsheets (no thousands separator); any other text as it is."""
    try:
        value = Decimal(text)
    except InvalidOperation:
        return text
    if not value.is_finite():
        return text
    return formats.number_format(value, decimal_pos=2, use_l10n=True, force_grouping=False)
