"""The glossary (docs/glossary.md) is the portal's vocabulary: no English source string
uses a word it rules out in English, no translation a word it rules out in Portuguese."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GLOSSARY = ROOT / "docs" / "glossary.md"
CATALOGUE = ROOT / "locale" / "pt_BR" / "LC_MESSAGES" / "django.po"


def ruled_out() -> tuple[list[str], list[str]]:
    """The words the glossary's table rules out: (in English, in Portuguese)."""
    english: list[str] = []
    portuguese: list[str] = []
    for line in GLOSSARY.read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 5 or cells[0] in ("English", "") or set(cells[0]) <= {"-"}:
            continue
        english += [word.strip() for word in cells[2].split(",") if word.strip()]
        portuguese += [word.strip() for word in cells[3].split(",") if word.strip()]
    return english, portuguese


def entries(text: str) -> list[tuple[str, str]]:
    """(keyword, text) of each msgid, msgid_plural, msgstr and msgstr[n] of a .po file,
    its continued lines joined; comments and obsolete entries left out."""
    found: list[tuple[str, str]] = []
    for line in text.splitlines():
        if line.startswith('"') and found:
            keyword, value = found[-1]
            found[-1] = (keyword, value + ast.literal_eval(line))
        elif match := re.match(r"^(msgid_plural|msgid|msgstr(?:\[\d+\])?) (\".*\")$", line):
            found.append((match[1].split("[")[0], ast.literal_eval(match[2])))
    return found


def uses(texts: list[str], words: list[str]) -> list[tuple[str, str]]:
    """(word, text) for each text that holds one of `words`, as a whole word."""
    return [
        (word, text)
        for word in words
        for text in texts
        if re.search(rf"(?<!\w){re.escape(word)}(?!\w)", text, re.IGNORECASE)
    ]


def test_the_glossary_rules_words_out_in_both_languages():
    english, portuguese = ruled_out()
    assert "motorist" in english
    assert "motorista" in portuguese
    assert "carteira de motorista" in portuguese


def test_no_string_uses_a_word_the_glossary_rules_out():
    english, portuguese = ruled_out()
    found = entries(CATALOGUE.read_text())
    sources = [text for keyword, text in found if keyword in ("msgid", "msgid_plural") and text]
    translations = [text for keyword, text in found if keyword == "msgstr" and text]
    assert len(sources) > 1000
    assert len(translations) > 1000

    assert uses(sources, english) == []
    assert uses(translations, portuguese) == []


@pytest.mark.parametrize(
    ("po", "caught"),
    [
        ('msgid "Driver ID"\nmsgstr "ID do motorista"\n', [("motorista", "ID do motorista")]),
        (
            'msgid ""\n"Check your "\n"motorists"\nmsgstr ""\n',
            [],  # a plural of a ruled-out word is its own word: list it if it is out
        ),
        (
            'msgid "Driver ID"\nmsgstr ""\n"ID do "\n"Motorista"\n',
            [("motorista", "ID do Motorista")],
        ),
        ('msgid "Drivers"\nmsgstr "Condutores"\n', []),
    ],
)
def test_the_check_reads_continued_lines_and_any_case(po, caught):
    translations = [text for keyword, text in entries(po) if keyword == "msgstr"]
    assert uses(translations, ruled_out()[1]) == caught
