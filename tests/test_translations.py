"""The Portuguese catalogue is complete, and the compiled one matches it."""

from __future__ import annotations

import gettext
import json

from tests.conftest import ROOT

CATALOGUE = ROOT / "locale" / "pt_BR" / "LC_MESSAGES"


def entries() -> dict[tuple[str | None, str], tuple[str, bool]]:
    """(msgctxt, msgid) -> (msgstr, fuzzy) for every singular entry of django.po."""
    found = {}
    for block in (CATALOGUE / "django.po").read_text().split("\n\n"):
        lines = block.splitlines()
        starts = [i for i, line in enumerate(lines) if line.startswith(("msgid ", "msgstr "))]
        if len(starts) != 2:
            continue
        i, j = starts

        def text(part: list[str]) -> str:
            return "".join(json.loads(line) for line in part if line.strip())

        msgid = text([lines[i][6:], *lines[i + 1 : j]])
        context = next(
            (json.loads(line[8:]) for line in lines if line.startswith("msgctxt ")), None
        )
        if msgid:
            fuzzy = any(line.startswith("#,") and "fuzzy" in line for line in lines)
            found[context, msgid] = (text([lines[j][7:], *lines[j + 1 :]]), fuzzy)
    return found


def test_every_message_is_translated_and_none_is_a_fuzzy_guess():
    catalogue = entries()

    assert len(catalogue) > 100
    assert [msgid for msgid, (msgstr, _) in catalogue.items() if not msgstr] == []
    assert [msgid for msgid, (_, fuzzy) in catalogue.items() if fuzzy] == []


def test_the_compiled_catalogue_is_up_to_date():
    with (CATALOGUE / "django.mo").open("rb") as compiled:
        translations = gettext.GNUTranslations(compiled)

    stale = [
        msgid
        for (context, msgid), (msgstr, _) in entries().items()
        if (translations.pgettext(context, msgid) if context else translations.gettext(msgid))
        != msgstr
    ]
    assert stale == [], "run `manage.py compilemessages`"
