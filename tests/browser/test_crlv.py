"""The e-CRLV pages: a status that changes before your eyes, and the PDF."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def pdf_opened_by(page, link, emulator) -> bytes:
    """Click `link`: the browser lands on a fresh link of the emulator's serving a PDF.

    Chromium shows the PDF in its viewer, whose page replaces the body it hands
    to Playwright, so the bytes are fetched again from the link the browser got.
    """
    with page.expect_response(lambda r: r.url.startswith(f"{emulator.url}/files/crlv/")) as pdf:
        link.click()
    response = pdf.value
    assert response.status == 200
    assert response.headers["content-type"] == "application/pdf"
    assert page.url == response.url
    return page.request.get(response.url).body()


def test_a_pending_request_turns_completed_without_a_reload_and_downloads_the_pdf(
    page, manager, emulator
):
    plate = emulator.vehicles()[30]["car_plate"]
    created = emulator.create_crlv_request(plate, pending_seconds=30, in_progress_seconds=30)
    log_in(page, "manager", "manager-demo-password")
    page.goto(f"/crlv/requests/{created['requestId']}/")
    status = page.get_by_test_id("crlv-status")
    expect(status).to_have_attribute("data-status", "pending")
    expect(page.get_by_test_id("crlv-download")).to_have_count(0)
    # Anything set on this document survives only if the page is never reloaded.
    page.evaluate("window.sameDocument = true")

    # The emulator's clock moves the request on; the page's own polls notice.
    emulator.advance(31)
    expect(status).to_have_attribute("data-status", "in_progress")
    emulator.advance(30)
    expect(status).to_have_attribute("data-status", "completed")

    assert page.evaluate("window.sameDocument") is True
    pdf = pdf_opened_by(page, page.get_by_test_id("crlv-download"), emulator)
    assert pdf.startswith(b"%PDF-")
    assert plate.encode() in pdf


def test_a_failed_request_shows_its_code_and_message_without_a_reload(page, manager, emulator):
    plate = emulator.vehicles()[31]["car_plate"]
    created = emulator.create_crlv_request(
        plate, outcome="failed", pending_seconds=30, in_progress_seconds=0
    )
    log_in(page, "manager", "manager-demo-password")
    page.goto(f"/crlv/requests/{created['requestId']}/")
    status = page.get_by_test_id("crlv-status")
    expect(status).to_have_attribute("data-status", "pending")

    emulator.advance(31)

    expect(status).to_have_attribute("data-status", "failed")
    expect(page.get_by_test_id("crlv-failure-code")).to_have_text("DETRAN_UNAVAILABLE")
    expect(page.get_by_test_id("crlv-failure-message")).to_contain_text(
        "O DETRAN não respondeu à emissão do CRLV-e."
    )
    expect(page.get_by_test_id("crlv-download")).to_have_count(0)


def test_the_vehicle_page_shows_the_latest_document_and_follows_the_request_in_progress(
    page, manager, emulator
):
    completed = next(
        r for r in emulator.control("GET", "crlv/requests") if r["status"] == "completed"
    )
    plate = completed["carPlate"]
    new = emulator.create_crlv_request(plate, pending_seconds=600)["requestId"]
    log_in(page, "manager", "manager-demo-password")

    page.goto(f"/vehicles/{plate.lower()}/")

    assert page.url.endswith(f"/vehicles/{plate}/")
    latest = page.get_by_test_id("crlv-latest")
    in_progress = page.get_by_test_id("crlv-in-progress")
    expect(in_progress.get_by_test_id("crlv-status-label")).to_be_visible()
    minimal = emulator.minimal
    # The date of issue and the request's id are not promised (spec 2.4, 2.5): shown
    # when they come, and the page stands without them.
    expect(latest.locator("time")).to_have_count(0 if minimal else 1)

    pdf = pdf_opened_by(page, latest.get_by_test_id("crlv-latest-download"), emulator)
    assert pdf.startswith(b"%PDF-")

    page.go_back()
    if minimal:
        expect(in_progress.get_by_test_id("crlv-in-progress-link")).to_have_count(0)
        expect(in_progress.get_by_test_id("crlv-reload-later")).to_be_visible()
        return
    in_progress.get_by_test_id("crlv-in-progress-link").click()
    expect(page.get_by_test_id("crlv-status")).to_have_attribute("data-status", "pending")
    assert page.url.endswith(f"/crlv/requests/{new}/")
