"""An indication's receipt: the proof it was sent (a post office receipt, the authority
site's confirmation), a PDF, PNG or JPEG. What a file is, is read from its content: its
first bytes, then its parser (pypdf, Pillow); never its name nor the type the browser
declared. Refused past `FLEET_INDICATION_RECEIPT_MAX_BYTES`, by its size, before it is
read. Kept with its indication (`IndicationReceipt`), found again only through a fine the
user sees."""

from __future__ import annotations

import hashlib
import io
import logging
import re
import unicodedata
import warnings
from dataclasses import dataclass
from pathlib import PurePosixPath, PureWindowsPath

from django.conf import settings
from django.contrib.auth.models import User
from django.core.files.uploadedfile import UploadedFile
from django.template.defaultfilters import filesizeformat
from django.utils.translation import gettext as _
from PIL import Image
from pypdf import PdfReader

from fleet.models import DriverIndication, IndicationReceipt, ReceiptType
from fleet.services.fines import fine_get
from fleet.services.scopes import VehicleScope

logger = logging.getLogger(__name__)

PDF_MAGIC = b"%PDF-"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
JPEG_MAGIC = b"\xff\xd8\xff"
EXTENSIONS = {ReceiptType.PDF: ".pdf", ReceiptType.PNG: ".png", ReceiptType.JPEG: ".jpg"}
NAME_LENGTH = 100


class ReceiptRefused(Exception):
    """The file is not a receipt the portal keeps; `message` says why, to the person."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True, slots=True)
class CheckedReceipt:
    """A receipt whose content was checked: what it is, its bytes, a safe name."""

    name: str
    content_type: ReceiptType
    content: bytes

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.content).hexdigest()


def receipt_max_bytes() -> int:
    return int(settings.FLEET_INDICATION_RECEIPT_MAX_BYTES)


def receipt_check(upload: UploadedFile[bytes]) -> CheckedReceipt:
    """`upload` as a receipt: its size within the limit, its content a PDF pypdf opens or
    a PNG or JPEG Pillow verifies; else `ReceiptRefused`."""
    limit = receipt_max_bytes()
    if upload.size is None or upload.size > limit:
        raise ReceiptRefused(
            _("The receipt is larger than %(limit)s: send a smaller file (a PDF, PNG or JPEG).")
            % {"limit": _size_shown(limit)}
        )
    upload.seek(0)
    content = upload.read(limit + 1)
    if len(content) > limit:  # its declared size was wrong
        raise ReceiptRefused(
            _("The receipt is larger than %(limit)s: send a smaller file (a PDF, PNG or JPEG).")
            % {"limit": _size_shown(limit)}
        )
    content_type = _content_type(content)
    if content_type is None:
        raise ReceiptRefused(
            _("The receipt must be a PDF, PNG or JPEG file; this one is not, whatever its name.")
        )
    return CheckedReceipt(
        name=receipt_name(upload.name or "", content_type),
        content_type=content_type,
        content=content,
    )


def receipt_name(name: str, content_type: ReceiptType) -> str:
    """A name safe in a header and on any disk: the last part of what the browser sent,
    in ASCII letters, digits, dots, dashes and underscores, with the extension of what
    the file is."""
    base = PureWindowsPath(PurePosixPath(name).name).name
    ascii_name = unicodedata.normalize("NFKD", base).encode("ascii", "ignore").decode()
    stem = ascii_name.rsplit(".", 1)[0] if "." in ascii_name else ascii_name
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", stem).strip("._-")[:NAME_LENGTH] or "receipt"
    return stem + EXTENSIONS[content_type]


def receipt_keep(
    *, indication: DriverIndication, receipt: CheckedReceipt, user: User
) -> IndicationReceipt:
    """Keep `receipt` with `indication`, as `user` uploaded it (in the caller's
    transaction: the indication and its receipt are recorded together, or neither)."""
    return IndicationReceipt.objects.create(
        indication=indication,
        name=receipt.name,
        content_type=receipt.content_type,
        size=len(receipt.content),
        sha256=receipt.sha256,
        content=receipt.content,
        uploaded_by=user,
    )


def receipt_get(
    *, scope: VehicleScope, fine_id: int, indication_id: int
) -> IndicationReceipt | None:
    """The receipt of `fine_id`'s indication `indication_id`, when `scope` sees the fine
    and the indication is that fine's; else None."""
    fine = fine_get(scope=scope, fine_id=fine_id)
    if fine is None:
        return None
    return IndicationReceipt.objects.filter(
        indication_id=indication_id, indication__fine_id=fine.pk
    ).first()


def _content_type(content: bytes) -> ReceiptType | None:
    """What `content` is, by its first bytes and its parser; None for anything else."""
    if content.startswith(PDF_MAGIC):
        return ReceiptType.PDF if _pdf_opens(content) else None
    if content.startswith(PNG_MAGIC):
        return ReceiptType.PNG if _image_verifies(content, "PNG") else None
    if content.startswith(JPEG_MAGIC):
        return ReceiptType.JPEG if _image_verifies(content, "JPEG") else None
    return None


def _pdf_opens(content: bytes) -> bool:
    # A damaged or hostile file may fail anywhere in the parser, with any exception.
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return len(PdfReader(io.BytesIO(content)).pages) > 0
    except Exception:
        logger.info("receipt refused: a PDF that does not open")
        return False


def _image_verifies(content: bytes, image_format: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(content)) as image:
                if image.format != image_format:
                    return False
                image.verify()
    except Exception:
        logger.info("receipt refused: an image that does not verify")
        return False
    return True


def _size_shown(size: int) -> str:
    return str(filesizeformat(size))
