"""CSV downloads of the portal's lists: streamed, and as the reader's spreadsheet opens them."""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterable, Iterator, Sequence

from django.http import StreamingHttpResponse
from django.utils import timezone, translation

# Text a spreadsheet would take for a formula (OWASP: CSV injection). Records come
# from webhooks and the API, whose text the portal does not control.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


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
    language and time zone all the same.
    """
    language = translation.get_language()
    zone = timezone.get_current_timezone()
    writer = csv.writer(_Echo(), delimiter=";" if (language or "").startswith("pt") else ",")

    def lines() -> Iterator[str]:
        with translation.override(language), timezone.override(zone):
            yield "\ufeff" + writer.writerow(header)
            for record in records:
                yield writer.writerow([_cell(value) for value in row(record)])

    response = StreamingHttpResponse(lines(), content_type="text/csv; charset=utf-8")
    stamp = timezone.localtime().strftime("%Y%m%d-%H%M")
    response["Content-Disposition"] = f'attachment; filename="{name}-{stamp}.csv"'
    return response


def _cell(value: object) -> object:
    if isinstance(value, str) and value.startswith(_FORMULA_STARTS):
        return f"'{value}"  # shown as written, never run
    return value
