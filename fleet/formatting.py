"""Values as a person reads them, in the active language and time zone: pages (through the
`fleet_records` filters), CSV exports, alert e-mails, the admin's names of records.

Typed values only: what a payload says is read once, by `fleet.webhooks.payloads`, and
stored. `sent` is a payload's text as sent, shown as it is when it could not be read
(the column is then null).
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from django.utils import formats, timezone
from django.utils.translation import gettext


def moment(value: datetime | None, *, sent: str = "") -> str:
    """A moment in local time and the language's short format (`24/11/2026 14:36`);
    without one, `sent`."""
    if value is None:
        return sent
    if timezone.is_aware(value):
        value = timezone.localtime(value)
    return formats.date_format(value, "SHORT_DATETIME_FORMAT")


def amount(value: Decimal | None, *, sent: str = "") -> str:
    """An amount in R$ in the language's format (`R$ 1.293,47`); without one, `sent`."""
    if value is None:
        return sent
    return f"R$ {formats.number_format(value, 2, use_l10n=True, force_grouping=True)}"


def driver(driver_id: int, name: str = "") -> str:
    """A driver as the pages name them: the name the portal knows, else `Driver 154`."""
    return name or gettext("Driver %(id)s") % {"id": driver_id}
