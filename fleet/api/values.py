"""The one reader of an amount, a time and a day sent by the fleet platform.

The spec shows neither a fine's payload (section 6: "not shown") nor a date of
the API, so the usual spellings are read and anything else is no value at all
(None): the caller keeps the text as sent and shows it as such.

- an amount in R$ (`parse_amount`): `1293.47`, `1.293,47` as a Brazilian writes
  it, `1,293.47`, with or without `R$`, negative, or a JSON number;
- a time (`parse_moment`): ISO 8601 with or without an offset, Unix seconds or
  milliseconds (a JSON number or a text of digits), `dd/mm/yyyy` with or
  without `hh:mm[:ss]`; a day (`parse_day`): any of those, the day as it is written
  (a licence's expiry, `2031-05-01` or `2031-05-01T00:00:00-03:00`, is the 1st).

An ISO time that names no offset is UTC: the spec says nothing of time zones, the
platform's own times (`updatedAt`, the emulator's) are UTC, and fines have been
stored so since their dates became a column. A `dd/mm/yyyy` time is written as a
Brazilian writes it, by hand or by an authority's system: it is Brasília time, so
that `20/11/2026` stays the 20th on every page (as UTC it would read 19/11 21:00).

Pure functions: no database, no settings. `fleet.webhooks.payloads` reads a
payload's members with them, the Fleet API client (`fleet.api.resources`) the
API's dates; pages, exports, e-mails and outgoing webhooks show what they read.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, tzinfo
from decimal import Decimal, InvalidOperation
from typing import Final
from zoneinfo import ZoneInfo

# Digits of `Fine.amount`, two of them decimals: up to R$ 9,999,999,999.99.
AMOUNT_DIGITS: Final = 12
# What a time without an offset is taken to be in (see the module's docstring).
NAIVE_ZONE: Final[tzinfo] = UTC
BRAZILIAN_ZONE: Final[tzinfo] = ZoneInfo("America/Sao_Paulo")

_CENT: Final = Decimal("0.01")
_LARGEST: Final = Decimal(10) ** (AMOUNT_DIGITS - 2)
# A sign, then `R$` or not, then the number (a sign may also follow `R$`).
_AMOUNT: Final = re.compile(
    r"(?P<before>[-+]?)\s*(?:R\$)?\s*(?P<after>[-+]?)\s*(?P<number>[\d.,]+)", re.IGNORECASE
)
# One separator: the decimal one, whichever it is (`293.47`, `293,47`). Both: the last
# is the decimal one and the other groups thousands (`1.293,47`, `1,293.47`).
_PLAIN: Final = re.compile(r"\d+(?:[.,]\d*)?|[.,]\d+")
_GROUPED_BRAZILIAN: Final = re.compile(r"\d{1,3}(?:\.\d{3})+,\d*")
_GROUPED_ENGLISH: Final = re.compile(r"\d{1,3}(?:,\d{3})+\.\d*")

_EPOCH: Final = re.compile(r"-?\d+(?:\.\d+)?")
# Above this a number of seconds would be past the year 5000: it counts milliseconds.
_MILLISECONDS_FROM: Final = 100_000_000_000
_BRAZILIAN_MOMENT: Final = ("%d/%m/%Y %H:%M:%S", "%d/%m/%Y %H:%M", "%d/%m/%Y")


def parse_amount(value: object) -> Decimal | None:
    """An amount in R$ with two decimals; None when `value` is none, or not a number
    that fits `Fine.amount` (AMOUNT_DIGITS)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number = _decimal(str(value))
    elif isinstance(value, str):
        number = _decimal_text(value)
    else:
        return None
    if number is None or not number.is_finite():
        return None
    try:
        cents = number.quantize(_CENT)
    except InvalidOperation:  # more digits than a Decimal holds (`1e40`)
        return None
    return cents if abs(cents) < _LARGEST else None


def parse_moment(value: object) -> datetime | None:
    """An aware time (NAIVE_ZONE when it names no offset); None when `value` is none of
    the spellings this module reads."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return _epoch(value)
    if not isinstance(value, str) or not (text := value.strip()):
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        if _EPOCH.fullmatch(text):
            return _epoch(float(text))
        return _brazilian(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=NAIVE_ZONE)


def parse_day(value: object) -> date | None:
    """A calendar day: `parse_moment`'s, in the offset the text names (the day as
    written); None when `value` is no time this module reads."""
    moment = parse_moment(value)
    return moment.date() if moment is not None else None


def _brazilian(text: str) -> datetime | None:
    for pattern in _BRAZILIAN_MOMENT:
        try:
            moment = datetime.strptime(text, pattern)  # noqa: DTZ007 - the zone below
        except ValueError:
            continue
        return moment.replace(tzinfo=BRAZILIAN_ZONE)
    return None


def _decimal_text(text: str) -> Decimal | None:
    found = _AMOUNT.fullmatch(text.strip().replace("\u00a0", " ").replace("\u202f", " "))
    if found is None or (found["before"] and found["after"]):
        return None
    number = found["number"]
    if _GROUPED_BRAZILIAN.fullmatch(number):
        number = number.replace(".", "").replace(",", ".")
    elif _GROUPED_ENGLISH.fullmatch(number):
        number = number.replace(",", "")
    elif _PLAIN.fullmatch(number):
        number = number.replace(",", ".")
    else:
        return None
    return _decimal((found["before"] or found["after"]) + number)


def _decimal(text: str) -> Decimal | None:
    try:
        return Decimal(text)
    except InvalidOperation:
        return None


def _epoch(number: float) -> datetime | None:
    seconds = number / 1000 if abs(number) >= _MILLISECONDS_FROM else number
    try:
        return datetime.fromtimestamp(seconds, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None
