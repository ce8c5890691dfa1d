"""A list people upload or paste: a CSV as a spreadsheet saves it, or plain text.

Excel in Brazil saves Windows-1252 and separates with semicolons; others save UTF-8
(with or without a byte order mark) and commas; a range pasted from a sheet has tabs.
The CNH batch's CPF column and the vehicle groups' plates are read through here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

DELIMITERS: Final = (",", ";", "\t")
ANY_DELIMITER: Final = re.compile("[,;\t]")


class NotText(ValueError):
    """The bytes hold a NUL: not text (a spreadsheet's own format, an image)."""


def spreadsheet_text(data: bytes) -> str:
    """The text of an uploaded list: UTF-8 (a byte order mark dropped), else Windows-1252.
    `NotText` when it is not text at all."""
    if b"\0" in data:
        raise NotText
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


def delimiter_of(line: str) -> str | None:
    """The delimiter a line is split by, the one it holds most of; None when it holds none.
    The first line that holds one decides for the whole list."""
    if not ANY_DELIMITER.search(line):
        return None
    return max(DELIMITERS, key=line.count)


def list_delimiter(lines: Iterable[str]) -> str:
    """The delimiter of a whole list: its first line's that holds one; commas without any."""
    return next((found for line in lines if (found := delimiter_of(line))), ",")
