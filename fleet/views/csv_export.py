"""CSV downloads of the portal's lists: streamed, and as the reader's spreadsheet opens them."""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterable, Iterator, Sequence
from decimal import Decimal

from django.http import StreamingHttpResponse
from django.utils import formats, timezone, translation

# Text a spreadsheet would take for a formula (OWASP: CSV injection). Records come
# from webhooks and the API, whose text the portal does not control. Spreadsheets
# skip leading blanks and line breaks before they look for these, so a cell is
# judged by its first character that is not one.
_FORMULA_STARTS = ("=", "+", "-", "@")
# OWASP names these two as dangerous first characters in their own right.
_CONTROL_STARTS = ("\t", "\r")


# Rows written to the response together: one write to the socket for each, not each row.
LINES_SENT_TOGETHER = 500


class _Echo:
    """A file-like object whose write returns the line, for streaming csv.writer."""

    def write(self, value: str) -> str:
        return value


def csv_download[T](
    *,
    name: str,
    header: Sequence[str],
    records: Iterable[T],
    row: Callable[[T], Sequence[object]],
) -> StreamingHttpResponse:
    """`records` as CSV rows (`row` makes each), streamed in the active language.

    Excel in Brazilian Portuguese splits columns on semicolons, and needs the BOM
    to read UTF-8 accents; English users get the comma they expect. The rows are
    made while the response streams, after the view has returned: in the request's
    language and time zone all the same. A `row` gives numbers as numbers
    (`Decimal`, `float`, `int`): they are written in the language's format and
    never mistaken for a formula; text is written as `spreadsheet_text` says.
    """
    language = translation.get_language()
    zone = timezone.get_current_timezone()
    writer = csv.writer(_Echo(), delimiter=";" if (language or "").startswith("pt") else ",")

    def lines() -> Iterator[str]:
        with translation.override(language), timezone.override(zone):
            separator = str(formats.get_format("DECIMAL_SEPARATOR"))
            batch = ["\ufeff" + writer.writerow(header)]
            for record in records:
                batch.append(writer.writerow([_cell(value, separator) for value in row(record)]))
                if len(batch) == LINES_SENT_TOGETHER:
                    yield "".join(batch)
                    batch.clear()
            yield "".join(batch)

    response = StreamingHttpResponse(lines(), content_type="text/csv; charset=utf-8")
    stamp = timezone.localtime().strftime("%Y%m%d-%H%M")
    response["Content-Disposition"] = f'attachment; filename="{name}-{stamp}.csv"'
    return response


def spreadsheet_text(value: str) -> str:
    """`value` as a spreadsheet shows it and never runs it (OWASP's CSV injection advice).

    Text that starts with a formula character, also after leading spaces, tabs
    or line breaks (`" =1+1"`, `"\\n-2+3"`), or with a tab or a carriage return,
    gets a single quote in front: the spreadsheet shows the cell as text, the
    rest of it as written.
    """
    if value.startswith(_CONTROL_STARTS) or value.lstrip().startswith(_FORMULA_STARTS):
        return f"'{value}"
    return value


def _cell(value: object, separator: str) -> object:
    if isinstance(value, str):
        # Most text starts with neither a formula's character nor a blank: as it is.
        if not value or (value[0] not in _FORMULA_STARTS and not value[0].isspace()):
            return value
        return spreadsheet_text(value)
    # A number is no formula, a negative one included (-12,50 stays a number); the
    # reader's spreadsheet wants its decimal separator (Excel in pt-BR: a comma), and
    # no grouping (`number_format`'s, a tenth of its time at a million rows).
    if isinstance(value, Decimal | float):
        shown = format(value, "f") if isinstance(value, Decimal) else repr(value)
        return shown.replace(".", separator)
    return value
