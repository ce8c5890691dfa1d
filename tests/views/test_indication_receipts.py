"""An indication's receipt: a PDF, PNG or JPEG, known by its content (never its name nor
its declared type), within `FLEET_INDICATION_RECEIPT_MAX_BYTES`, kept with the
indication in the same transaction (a refused file: nothing recorded), and downloaded
back, as an attachment that cannot be sniffed nor run, only by those who see the fine."""

from __future__ import annotations

import hashlib
import io
from datetime import UTC, date, datetime

import pytest
import time_machine
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from PIL import Image
from pypdf import PdfWriter

from fleet.models import (
    DriverIndication,
    Fine,
    Indication,
    IndicationChannel,
    IndicationReceipt,
    ReceiptType,
)
from fleet.services.indications import fine_indicate, seen_value
from fleet.services.receipts import CheckedReceipt, receipt_name
from tests.views.test_fine_indicate import ENGLISH, a_fine, indicate
from tests.views.test_scope_walk import Side, sides

__all__ = ["sides"]  # the fixture

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def clock():
    with time_machine.travel(NOW, tick=False) as traveller:
        yield traveller


def a_pdf() -> bytes:
    writer = PdfWriter()
    writer.add_blank_page(width=200, height=200)
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def a_png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), "white").save(buffer, "PNG")
    return buffer.getvalue()


def upload(name: str, content: bytes, declared: str = "application/pdf") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content, content_type=declared)


def test_a_pdf_receipt_is_kept_and_downloaded_back_identical(client, indicating_client):
    fine = a_fine(client)
    pdf = a_pdf()

    response = indicate(indicating_client, fine, receipt=upload("Comprovante Correios.pdf", pdf))

    assert response.status_code == 302
    receipt = IndicationReceipt.objects.get()
    assert receipt.indication == DriverIndication.objects.get()
    assert (receipt.content_type, receipt.size) == ("application/pdf", len(pdf))
    assert receipt.sha256 == hashlib.sha256(pdf).hexdigest()
    assert receipt.name == "Comprovante_Correios.pdf"
    assert receipt.uploaded_by is not None
    assert receipt.uploaded_by.username == "marcos"
    page = indicating_client.get(fine.get_absolute_url(), headers=ENGLISH).text
    link = f"/fines/{fine.pk}/indications/{receipt.indication_id}/receipt"
    assert f'href="{link}"' in page
    assert "Receipt (PDF, " in page

    download = indicating_client.get(link)

    assert download.status_code == 200
    assert download.content == pdf
    assert download["Content-Type"] == "application/pdf"
    assert download["Content-Disposition"] == 'attachment; filename="Comprovante_Correios.pdf"'
    assert download["X-Content-Type-Options"] == "nosniff"
    assert {"private", "no-store"} <= {
        part.strip() for part in download["Cache-Control"].split(",")
    }
    assert download["Content-Security-Policy"].startswith("sandbox")


def test_a_png_is_kept_as_what_it_is_whatever_its_name_and_declared_type(client, indicating_client):
    fine = a_fine(client)
    png = a_png()

    response = indicate(indicating_client, fine, receipt=upload("foto.jpg", png, "image/jpeg"))

    assert response.status_code == 302
    receipt = IndicationReceipt.objects.get()
    assert (receipt.content_type, receipt.name) == ("image/png", "foto.png")
    download = indicating_client.get(
        f"/fines/{fine.pk}/indications/{receipt.indication_id}/receipt"
    )
    assert (download.content, download["Content-Type"]) == (png, "image/png")
    page = indicating_client.get(fine.get_absolute_url(), headers=ENGLISH).text
    assert "Receipt (PNG, " in page


def test_an_indication_without_a_receipt_is_recorded_and_links_none(client, indicating_client):
    fine = a_fine(client)

    assert indicate(indicating_client, fine).status_code == 302

    assert DriverIndication.objects.exists()
    assert not IndicationReceipt.objects.exists()
    assert 'data-testid="receipt-link"' not in indicating_client.get(fine.get_absolute_url()).text


NOT_A_RECEIPT = "The receipt must be a PDF, PNG or JPEG file"


@pytest.mark.parametrize(
    ("content", "error"),
    [
        (b"<html><script>alert(document.cookie)</script></html>", NOT_A_RECEIPT),
        (b"%PDF-1.7\n<script>alert(1)</script>", NOT_A_RECEIPT),  # no PDF behind the magic
        (b"\x89PNG\r\n\x1a\n<script>alert(1)</script>", NOT_A_RECEIPT),
        (b"\xff\xd8\xff\xe0 not a JPEG", NOT_A_RECEIPT),
        (b"", "The submitted file is empty."),
    ],
    ids=["html", "fake-pdf", "fake-png", "fake-jpeg", "empty"],
)
def test_a_file_that_is_not_a_pdf_png_or_jpeg_is_refused_and_nothing_recorded(
    client, indicating_client, content, error
):
    fine = a_fine(client)

    response = indicate(indicating_client, fine, receipt=upload("receipt.pdf", content))

    assert response.status_code == 400
    assert error in response.text
    assert 'enctype="multipart/form-data"' in response.text
    fine.refresh_from_db()
    assert fine.indication == Indication.NEEDED
    assert not DriverIndication.objects.exists()
    assert not IndicationReceipt.objects.exists()


def test_a_receipt_past_the_limit_is_refused_by_its_size(client, indicating_client, settings):
    settings.FLEET_INDICATION_RECEIPT_MAX_BYTES = 100
    fine = a_fine(client)

    response = indicate(indicating_client, fine, receipt=upload("big.pdf", a_pdf()))

    assert response.status_code == 400
    assert "The receipt is larger than 100" in response.text
    fine.refresh_from_db()
    assert fine.indication == Indication.NEEDED
    assert not DriverIndication.objects.exists()


def test_a_receipt_name_keeps_no_path_nor_odd_characters():
    assert receipt_name("../../etc/Recibo Ç;\r\n.html", ReceiptType.PDF) == "Recibo_C.pdf"
    assert receipt_name("C:\\Users\\ana\\scan.jpeg", ReceiptType.JPEG) == "scan.jpg"
    assert receipt_name("", ReceiptType.PNG) == "receipt.png"


def test_anonymous_is_sent_to_sign_in(client, indicating_client):
    fine = a_fine(client)
    indicate(indicating_client, fine, receipt=upload("r.pdf", a_pdf()))
    receipt = IndicationReceipt.objects.get()

    anonymous = Client()  # `client` is the manager's, signed in
    response = anonymous.get(f"/fines/{fine.pk}/indications/{receipt.indication_id}/receipt")

    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def _receipt_on(side: Side) -> DriverIndication:
    fine = Fine.objects.get(pk=side.fine)
    return fine_indicate(
        fine_id=fine.pk,
        driver_id=side.driver,
        channel=IndicationChannel.POST,
        on=date(2026, 12, 1),
        seen=seen_value(fine.indication, fine.indication_basis or ""),
        user=User.objects.get(username=f"manager-{side.name.lower()}"),
        receipt=CheckedReceipt(
            name=f"{side.secret}.pdf", content_type=ReceiptType.PDF, content=a_pdf()
        ),
    )


@pytest.mark.scoped
def test_a_receipt_is_not_found_outside_the_fines_the_user_sees(sides: list[Side]):
    a, b = sides
    mine, theirs = _receipt_on(a), _receipt_on(b)

    assert a.client.get(f"/fines/{a.fine}/indications/{mine.pk}/receipt").status_code == 200
    refused = a.client.get(f"/fines/{b.fine}/indications/{theirs.pk}/receipt")
    assert refused.status_code == 404
    assert b.secret not in refused.content.decode()
    # An indication of another fine, named under one's own fine, is not found either.
    assert a.client.get(f"/fines/{a.fine}/indications/{theirs.pk}/receipt").status_code == 404
    assert b.client.get(f"/fines/{b.fine}/indications/{mine.pk}/receipt").status_code == 404


def test_the_admin_shows_the_receipts_name_type_and_size_not_its_content(
    client, indicating_client, admin_client
):
    fine = a_fine(client)
    pdf = a_pdf()
    indicate(indicating_client, fine, receipt=upload("Recibo.pdf", pdf))
    indication = DriverIndication.objects.get()

    page = admin_client.get(
        f"/admin/fleet/driverindication/{indication.pk}/change/", headers=ENGLISH
    ).text

    assert f'href="/fines/{fine.pk}/indications/{indication.pk}/receipt"' in page
    assert "Recibo.pdf</a> (PDF, " in page
    assert "%PDF-" not in page
