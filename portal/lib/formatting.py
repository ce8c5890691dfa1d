"""Values as a person reads them, in the active language and time zone: pages (through the
`fleet_records` filters), CSV exports, alert e-mails, the admin's names of records.

Typed values only: what a payload says is read once, by `fleet.webhooks.payloads`, and
stored. `sent` is a payload's text as sent, shown as it is when it could not be read
(the column is then null).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime, time
from decimal import Decimal
from functools import lru_cache
from typing import Protocol

from django.utils import dateformat, formats, timezone, translation
from django.utils.translation import gettext


def moment(value: datetime | None, *, sent: str = "") -> str:
    """A moment in local time and the language's short format (`24/11/2026 14:36`);
    without one, `sent`."""
    return moments()(value, sent)


class Moments(Protocol):
    def __call__(self, value: datetime | None, sent: str = "") -> str: ...


def moments() -> Moments:
    """`moment` for many values, in the language and time zone active now, which it reads
    once (an export's three million moments)."""
    return _in_zone(_short_datetime(translation.get_language() or ""))


def spreadsheet_moments() -> tuple[Moments, str]:
    """`moments` for a CSV export, and what its header says of them. Excel in Brazilian
    Portuguese reads the Portuguese short format (`24/11/2026 14:36`) as a date; in any
    other language the cells are ISO 8601 (`2026-11-24 14:36`), which every spreadsheet
    reads, and the header says so (" (yyyy-mm-dd hh:mm)")."""
    if (translation.get_language() or "").startswith("pt"):
        return moments(), ""
    return _in_zone(lambda value: value.strftime("%Y-%m-%d %H:%M")), " (yyyy-mm-dd hh:mm)"


def spreadsheet_days() -> tuple[Callable[[date | None], str], str]:
    """Days for a CSV export, as `spreadsheet_moments` writes moments: `31/12/2026` for
    Excel in Brazilian Portuguese, else ISO 8601 and the header says so; "" for none."""
    if (translation.get_language() or "").startswith("pt"):
        return (lambda day: day.strftime("%d/%m/%Y") if day is not None else ""), ""
    return (lambda day: day.isoformat() if day is not None else ""), " (yyyy-mm-dd)"


def _in_zone(shown: Callable[[datetime], str]) -> Moments:
    """`shown` of each moment in the time zone active now (read once); without one, the
    text as sent."""
    zone = timezone.get_current_timezone()

    def moment(value: datetime | None, sent: str = "") -> str:
        if value is None:
            return sent
        return shown(value.astimezone(zone) if value.tzinfo is not None else value)

    return moment


# Django's format characters that `strftime` writes the same way (zero-padded numbers).
_STRFTIME = {"d": "%d", "m": "%m", "Y": "%Y", "y": "%y", "H": "%H", "i": "%M", "s": "%S"}
# Django's format characters that depend on the hour and minute alone ("2:30 p.m.", "noon"):
# written from a table of the day's 1,440 minutes, each as Django writes it.
_TIME_OF_DAY = frozenset("aAfgGhP")


@lru_cache(maxsize=32)
def _short_datetime(language: str) -> Callable[[datetime], str]:
    """The language's SHORT_DATETIME_FORMAT as a function: `strftime` for every character
    of the format that has a `strftime` twin (pt-BR's `d/m/Y H:i`), a table of the day's
    minutes for those that depend on the time of day alone (English's `P`, "2:30 p.m."),
    Django's `date_format` for any other. A CSV export of a million fines formats three
    million moments: Django's own takes ten times as long."""
    pattern = str(formats.get_format("SHORT_DATETIME_FORMAT", lang=language))
    parts: list[str | dict[tuple[int, int], str]] = [""]
    escaped = False
    for char in pattern:
        if char == "\\" and not escaped:
            escaped = True
            continue
        if escaped or not char.isalpha():
            text = "%%" if char == "%" else char
        elif char in _STRFTIME:
            text = _STRFTIME[char]
        elif char in _TIME_OF_DAY:
            parts += [_minutes(language, char), ""]
            continue
        else:
            return lambda value: dateformat.format(value, pattern)
        escaped = False
        last = parts[-1]
        assert isinstance(last, str)
        parts[-1] = last + text
    if len(parts) == 1:
        only = parts[0]
        assert isinstance(only, str)
        return lambda value: value.strftime(only)
    return lambda value: "".join(
        (value.strftime(part) if part else "")
        if isinstance(part, str)
        else part[value.hour, value.minute]
        for part in parts
    )


def _minutes(language: str, char: str) -> dict[tuple[int, int], str]:
    """Django's format character `char` for each minute of the day, in `language`."""
    with translation.override(language):
        return {
            (hour, minute): dateformat.format(time(hour, minute), char)
            for hour in range(24)
            for minute in range(60)
        }


def amount(value: Decimal | None, *, sent: str = "") -> str:
    """An amount in R$ in the language's format (`R$ 1.293,47`); without one, `sent`."""
    if value is None:
        return sent
    return f"R$ {formats.number_format(value, 2, use_l10n=True, force_grouping=True)}"


def driver(driver_id: int, name: str = "") -> str:
    """A driver as the pages name them: the name the portal knows, else `Driver 154`."""
    return name or gettext("Driver %(id)s") % {"id": driver_id}
