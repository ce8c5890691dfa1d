"""Local checks of API credentials for the mistakes spec section 5.3 lists.

Used at start-up (settings), by `manage.py fleet_doctor` and by `FleetClient`.
Every message names the problem and never the value, so it can be printed or
logged.
"""

from __future__ import annotations

import base64
import binascii
import re

_BASE64 = re.compile(r"[A-Za-z0-9+/]+={0,2}")
_HEX = re.compile(r"[0-9a-fA-F]+")
_QUOTES = "\"'`\u2018\u2019\u201c\u201d"
_LINE_BREAKS = "\r\n\t\v\f"


def credential_problems(value: str, *, secret: bool = False) -> list[str]:
    """What is wrong with a credential value, as phrases without the value.

    `secret=True` adds the base64 check, which only makes sense for the
    secret key (the server expects it exactly as the panel shows it).
    """
    stripped = value.strip()
    if stripped == "":
        return ["is empty"] if value == "" else ["is only whitespace"]
    problems = []
    if value != stripped:
        problems.append(
            "has whitespace or a newline at the start or end (copy it again without them)"
        )
    # A line break at the ends is already reported above; one inside is a
    # different copy-paste accident (a wrapped line) and worth its own words.
    if any(c in stripped for c in _LINE_BREAKS):
        problems.append("contains a newline or a tab")
    if stripped[0] in _QUOTES or stripped[-1] in _QUOTES:
        problems.append("is wrapped in quotes (remove them)")
    if secret and looks_base64(stripped):
        problems.append(
            "looks base64-encoded; use the secret key exactly as the fleet panel shows it"
        )
    return problems


def looks_base64(value: str) -> bool:
    """True for a value that is almost certainly base64 rather than a plain key.

    A hex string is valid base64 too, so only values that use base64's own
    marks (`+`, `/`, `=` padding) and decode cleanly count.
    """
    if len(value) < 16 or len(value) % 4 or _HEX.fullmatch(value):
        return False
    if not _BASE64.fullmatch(value) or not any(c in value for c in "+/="):
        return False
    try:
        base64.b64decode(value, validate=True)
    except binascii.Error:
        return False
    return True
