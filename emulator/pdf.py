"""A minimal, valid one-page PDF written by hand (no library needed).

Enough for a browser or a PDF reader to open the "CRLV-e" the emulator
serves: a catalog, one page, a standard font and a text stream, with a
correct cross-reference table.
"""

from __future__ import annotations

from collections.abc import Sequence


def text_pdf(title: str, lines: Sequence[str]) -> bytes:
    """A one-page A4 PDF showing `title` and then `lines` of text."""
    content = bytearray(b"BT\n/F1 20 Tf\n56 780 Td\n")
    content += b"(" + _pdf_string(title) + b") Tj\n/F1 11 Tf\n0 -32 Td\n"
    for line in lines:
        content += b"(" + _pdf_string(line) + b") Tj\n0 -16 Td\n"
    content += b"ET"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842]"
        b" /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
        b"<< /Length %d >>\nstream\n" % len(content) + bytes(content) + b"\nendstream",
    ]
    # The second line's high bytes tell tools the file is binary.
    document = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(document))
        document += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref_at = len(document)
    document += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        document += b"%010d 00000 n \n" % offset
    document += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref_at,
    )
    return bytes(document)


def _pdf_string(text: str) -> bytes:
    """`text` as the inside of a PDF literal string in WinAnsi (Latin-1) encoding."""
    raw = text.encode("cp1252", errors="replace")
    return raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)")
