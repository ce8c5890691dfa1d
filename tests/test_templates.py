"""The templates' own text: what would reach a page by mistake."""

from __future__ import annotations

from tests.conftest import ROOT

TEMPLATE_FOLDERS = [ROOT / "templates", *ROOT.glob("*/templates")]


def test_no_comment_spans_lines_where_django_would_print_it():
    """`{# … #}` is a comment on one line only: over two, Django prints it in the page."""
    printed = [
        f"{path.relative_to(ROOT)}:{number}"
        for folder in TEMPLATE_FOLDERS
        for path in folder.rglob("*.*")
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if "{#" in line and "#}" not in line.split("{#", 1)[1]
    ]

    assert printed == []
