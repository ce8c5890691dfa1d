"""What a fine's payload says about the infraction itself, beyond the spec's fields: its
code (`infractionCode`, SENATRAN's enquadramento, `745-50`), the points it puts on the
driver's licence (`points`), its tier (`severity`: "leve", "média", "grave",
"gravíssima"), where it was committed (`city`, `state`: the UF) and who issued it
(`authority`). The platform sends these when it has them (the emulator in its full
mode); none is in the spec, so each may be missing, or of a shape the portal does not
expect: missing, it is "not sent"; malformed, it is shown as sent, never guessed.

Read from the payload when shown (as the infraction's `description` is): no filter or
sort reads them, so no column holds them. Pure functions: no database, no settings.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Any, Final

from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _
from django_stubs_ext import StrOrPromise

# Longest text kept of each (a payload's member may be of any length).
TEXT_LENGTH: Final = 120
MAX_POINTS: Final = 99  # CTB art. 259 gives 3 to 7 per infraction; more is a wrong value
# The 27 federative units: a `state` that is none of these is shown as sent.
UFS: Final = frozenset(
    {
        *("AC", "AL", "AP", "AM", "BA", "CE", "DF", "ES", "GO", "MA", "MT", "MS", "MG", "PA"),
        *("PB", "PR", "PE", "PI", "RJ", "RN", "RS", "RO", "RR", "SC", "SP", "SE", "TO"),
    }
)
# The four tiers of CTB art. 258, by their name without accents or case.
SEVERITIES: Final[dict[str, StrOrPromise]] = {
    "leve": _("minor"),
    "media": _("medium"),
    "grave": _("serious"),
    "gravissima": _("very serious"),
}


@dataclass(frozen=True, slots=True)
class FineFacts:
    """A fine's infraction facts as sent: "" (or None for `points`) when not sent."""

    code: str = ""
    points: int | None = None
    points_text: str = ""  # `points` as sent when it is not a whole number
    severity: str = ""  # as sent
    city: str = ""
    state: str = ""  # as sent: a UF (`UFS`) or not
    authority: str = ""

    @property
    def severity_shown(self) -> StrOrPromise:
        """The tier in the reader's language when it is one of the four, else as sent."""
        return SEVERITIES.get(folded(self.severity), self.severity)

    @property
    def place(self) -> str:
        """ "São Paulo/SP", "São Paulo", "SP" or ""."""
        return "/".join(part for part in (self.city, self.state) if part)

    @property
    def points_shown(self) -> str:
        """ "4 points", "points: quatro" (as sent), or ""."""
        if self.points == 0:
            return gettext("no points")
        if self.points is not None:
            return ngettext("%(count)d point", "%(count)d points", self.points) % {
                "count": self.points
            }
        return gettext("points: %(sent)s") % {"sent": self.points_text} if self.points_text else ""

    @property
    def any_sent(self) -> bool:
        return bool(self.shown())

    def shown(self) -> list[str]:
        """What was sent, in the reader's language, each a short text: for a list's line."""
        parts = [self.code, str(self.severity_shown), self.points_shown, self.place]
        return [part for part in [*parts, self.authority] if part]


def fine_facts(payload: object) -> FineFacts:
    """The facts `payload` (a fine's event object) carries (`FineFacts`)."""
    if not isinstance(payload, dict):
        return FineFacts()
    points, points_text = _points(payload.get("points"))
    state = _text(payload.get("state"))
    return FineFacts(
        code=_text(payload.get("infractionCode")),
        points=points,
        points_text=points_text,
        severity=_text(payload.get("severity")),
        city=_text(payload.get("city")),
        state=state.upper() if state.upper() in UFS else state,
        authority=_text(payload.get("authority")),
    )


def _text(value: Any) -> str:
    """A member that is text (or a number, as a code may be sent), in one line, bounded."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        return ""
    return " ".join(str(value).split())[:TEXT_LENGTH]


def _points(value: Any) -> tuple[int | None, str]:
    """(points, "") for a whole number from 0 to MAX_POINTS (or its digits as text);
    (None, the text as sent) for anything else sent; (None, "") when not sent."""
    text = _text(value) if not isinstance(value, float) else str(value)
    if isinstance(value, int) and not isinstance(value, bool):
        number: int | None = value
    elif isinstance(value, str) and text.isascii() and text.isdigit():
        number = int(text)
    else:
        number = None
    if number is not None and 0 <= number <= MAX_POINTS:
        return number, ""
    return None, text


def folded(text: str) -> str:
    """`text` without case or accents ("Indicação" and "INDICACAO" alike)."""
    decomposed = unicodedata.normalize("NFKD", text.strip().casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))
