"""Local checks of API credentials for the copy-paste mistakes spec section 5.3 lists.

Used at start-up (settings), by `manage.py fleet_doctor` and by `FleetClient`.
Every message names the problem and never the value, so it can be printed or
logged.

Only what is certainly a mistake is refused: an empty value, whitespace or a
newline, quotes around it. The panel may issue any other characters, and a
secret key that happens to look like base64 is a valid key: the spec forbids
a base64 *signature* (5.3), which the client never sends (it signs with the
hex digest), not such a key.
"""

from __future__ import annotations

_QUOTES = "\"'`\u2018\u2019\u201c\u201d"
_LINE_BREAKS = "\r\n\t\v\f"


def credential_problems(value: str) -> list[str]:
    """What is wrong with a credential value, as phrases without the value."""
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
    return problems
