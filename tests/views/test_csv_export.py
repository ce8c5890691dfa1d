"""The CSV writer of the exports on its own: what a spreadsheet would run is written as text."""

from __future__ import annotations

import csv
import io
from decimal import Decimal

import pytest
from django.utils import translation

from fleet.views.csv_export import LINES_SENT_TOGETHER, csv_download, spreadsheet_text


def exported(*values: object, language: str = "pt-br") -> list[str]:
    """`values` as one row of an export in `language`, read back as a spreadsheet would."""
    with translation.override(language):
        response = csv_download(name="t", header=["v"] * len(values), records=[values], row=list)
        text = response.getvalue().decode("utf-8")
    delimiter = ";" if language.startswith("pt") else ","
    _header, row = csv.reader(io.StringIO(text.removeprefix("\ufeff")), delimiter=delimiter)
    return row


@pytest.mark.parametrize("formula", ["=1+1", "+1", "-2+3", "@SUM(A1)"])
@pytest.mark.parametrize("blanks", ["", " ", "   ", "\t", "\n", "\r", "\r\n", " \t\n"])
def test_text_that_starts_a_formula_after_any_leading_blanks_gets_a_quote(formula, blanks):
    value = blanks + formula

    assert spreadsheet_text(value) == f"'{value}"
    assert exported(value) == [f"'{value}"]


@pytest.mark.parametrize("value", ["\tTexto", "\rTexto"])
def test_a_leading_tab_or_carriage_return_gets_a_quote(value):
    # OWASP names both as dangerous first characters whatever follows.
    assert exported(value) == [f"'{value}"]


@pytest.mark.parametrize(
    "value", ["Multa = R$ 10", "E-010", "ana@example.com", "\nSegunda linha", " texto", ""]
)
def test_other_text_is_written_as_it_is(value):
    assert exported(value) == [value]


def test_numbers_stay_numbers_negative_ones_too_in_the_readers_format():
    numbers = (Decimal("-12.50"), -12.5, -3, Decimal("1293.50"))

    assert exported(*numbers) == ["-12,50", "-12,5", "-3", "1293,50"]
    assert exported(*numbers, language="en") == ["-12.50", "-12.5", "-3", "1293.50"]


def test_rows_are_sent_together_a_bounded_number_at_a_time():
    """A million rows are a few thousand writes to the socket, not a million; each part
    ends with a whole row, and together they are every row in order."""
    records = [(f"Multa {number}", number) for number in range(2 * LINES_SENT_TOGETHER + 1)]
    with translation.override("pt-br"):
        response = csv_download(name="t", header=["v", "n"], records=records, row=list)
        parts = [bytes(part).decode("utf-8") for part in response.streaming_content]

    assert [part.count("\r\n") for part in parts] == [LINES_SENT_TOGETHER] * 2 + [2]
    rows = list(csv.reader(io.StringIO("".join(parts).removeprefix("\ufeff")), delimiter=";"))
    assert rows == [["v", "n"], *([text, str(number)] for text, number in records)]
