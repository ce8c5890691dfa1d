"""Values as a person reads them, in the active language and time zone: pages (through the
`fleet_records` filters), CSV exports, alert e-mails, the admin's names of records.

Typed values only: what a payload says is read once, by `fleet.webhooks.payloads`, and
stored. `sent` is a payload's text as sent, shown as it is when it could not be read
(the column is then null).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from decimal import Decimal
from functools import lru_cache
from typing import Protocol

from django.utils import dateformat, formats, timezone, translation
from django.utils.translation import gettext


def moment(value: datetime | None, *, sent: str = "") -> str:
    """A moment in local time and the language's short format (`24/11/2026 14:36`);
    without one, `sent`."""
    if value is None:
        return sent
    if timezone.is_aware(value):
        value = timezone.localtime(value)
    return _short_datetime(translation.get_language() or "")(value)


class Moments(Protocol):
    def __call__(self, value: datetime | None, sent: str = "") -> str: ...


def moments() -> Moments:
    """`moment` for many values, in the language and time zone active now, which it reads
    once (an export's three million moments)."""
    shown = _short_datetime(translation.get_language() or "")
    zone = timezone.get_current_timezone()

    def moment(value: datetime | None, sent: str = "") -> str:
        if value is None:
            return sent
        return shown(value.astimezone(zone) if value.tzinfo is not None else value)

    return moment


# Django's format characters that `strftime` writes the same way (zero-padded numbers).
_STRFTIME = {"d": "%d", "m": "%m", "Y": "%Y", "y": "%y", "H": "%H", "i": "%M", "s": "%S"}


@lru_cache(maxsize=32)
def _short_datetime(language: str) -> Callable[[datetime], str]:
    """The language's SHORT_DATETIME_FORMAT as a function: `strftime` when every character
    of the format has a `strftime` twin (pt-BR's `d/m/Y H:i`), Django's `date_format`
    otherwise (English's `P`, "2:30 p.m."). A CSV export of a million fines formats three
    million moments: `strftime` takes a tenth of the time."""
    pattern = str(formats.get_format("SHORT_DATETIME_FORMAT", lang=language))
    translated = []
    escaped = False
    for char in pattern:
        if char == "\\" and not escaped:
            escaped = True
        elif escaped or not char.isalpha():
            translated.append("%%" if char == "%" else char)
            escaped = False
        elif char in _STRFTIME:
            translated.append(_STRFTIME[char])
        else:
            return lambda value: dateformat.format(value, pattern)
    compiled = "".join(translated)
    return lambda value: value.strftime(compiled)


def amount(value: Decimal | None, *, sent: str = "") -> str:
    """An amount in R$ in the language's format (`R$ 1.293,47`); without one, `sent`."""
    if value is None:
        return sent
    return f"R$ {formats.number_format(value, 2, use_l10n=True, force_grouping=True)}"


def driver(driver_id: int, name: str = "") -> str:
    """A driver as the pages name them: the name the portal knows, else `Driver 154`."""
    return name or gettext("Driver %(id)s") % {"id": driver_id}
