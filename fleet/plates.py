"""Brazilian licence plates: the old `ABC1234` and the Mercosul `ABC1D23` formats.

People type plates with hyphens, spaces and any case (`abc-1234`, `ABC 1D23`);
the API may hold them either way. Everything the portal compares, looks up or
puts in a URL goes through `normalize` first.
"""

from __future__ import annotations

import re

_OLD = re.compile(r"[A-Z]{3}[0-9]{4}")
_MERCOSUL = re.compile(r"[A-Z]{3}[0-9][A-Z][0-9]{2}")
_SEPARATORS = str.maketrans("", "", "- .\u00a0")


def normalize(text: str) -> str:
    """Upper case without hyphens, dots or spaces: `abc-1234` → `ABC1234`."""
    return text.translate(_SEPARATORS).upper()


def is_valid(text: str) -> bool:
    """Whether `text` is a plate in either format, once normalized."""
    plate = normalize(text)
    return bool(_OLD.fullmatch(plate) or _MERCOSUL.fullmatch(plate))


def display(text: str) -> str:
    """How Brazilians write a plate: `ABC-1234` (old) or `ABC1D23` (Mercosul)."""
    plate = normalize(text)
    if _OLD.fullmatch(plate):
        return f"{plate[:3]}-{plate[3:]}"
    return plate


def display_if_plate(text: str) -> str:
    """`display` for a plate; any other text as it is (a payload's plate is not checked)."""
    return display(text) if is_valid(text) else text


def registration(text: str) -> str:
    """The vehicle's plate in the Mercosul format, whichever format `text` is in.

    A vehicle keeps its registration when its old plate is replaced by a
    Mercosul one: the fifth character, a digit, becomes the letter in its
    place (0 → A, 1 → B, … 9 → J), so `ABC-1234` is now `ABC1C34`. Fines and
    notifications issued before and after the change match the same vehicle
    through this form. Not a plate: normalized, as it is.
    """
    plate = normalize(text)
    if _OLD.fullmatch(plate):
        return f"{plate[:4]}{chr(ord('A') + int(plate[4]))}{plate[5:]}"
    return plate


def old_plate(text: str) -> str | None:
    """The old plate a Mercosul plate may have replaced (`ABC1C34` → `ABC1234`), normalized;
    None when `text` is not a Mercosul plate whose fifth letter stands for a digit (A to J)."""
    plate = normalize(text)
    if _MERCOSUL.fullmatch(plate) and "A" <= plate[4] <= "J":
        return f"{plate[:4]}{ord(plate[4]) - ord('A')}{plate[5:]}"
    return None


def other_spelling(text: str) -> str | None:
    """The same vehicle's plate in the other format, normalized: the Mercosul plate of an
    old one (`ABC1234` → `ABC1C34`), the old plate a Mercosul one may have replaced
    (`ABC1C34` → `ABC1234`); None for anything else (a Mercosul plate with no old form,
    a part of a plate). A search by either finds the vehicle under the other."""
    plate = normalize(text)
    if _OLD.fullmatch(plate):
        return registration(plate)
    return old_plate(plate)
