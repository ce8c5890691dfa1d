"""Events the emulator sends appear on /fines/, the
dashboard's counts change without a reload, and the filters work. The receiver stores
them; a real `manage.py db_worker` processes them, as under `make run`."""

from __future__ import annotations

import csv
import io
import re
import time
from pathlib import Path

import pytest
import requests
from django.db.models import QuerySet
from playwright.sync_api import expect

from fleet.models import Driver, Fine
from fleet.services.vehicles import vehicle_search
from fleet.webhooks.processing import deliveries_process_received
from tests.browser.conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def processed(records: QuerySet[Fine]) -> None:
    """Wait until the worker has processed what was sent (a second or two)."""
    deadline = time.monotonic() + 30  # the worker runs each second: thirty times that
    while not records.exists():
        assert time.monotonic() < deadline, "the worker did not process the delivery"
        time.sleep(0.05)


def fine_777(*, treated: bool, at: str, **links: str | None) -> dict[str, object]:
    event = {"id": 777, "description": "Estacionar em local proibido", "treated": treated}
    return {"frame": event | {"updatedAt": at}, **links}


def test_sent_events_update_the_dashboard_by_themselves_and_fill_the_fines_page(
    page, manager, emulator, live_server, fleet_settings, db_worker
):
    fleet_settings.FLEET_COUNTS_POLL_SECONDS = 1
    webhook = f"{live_server.url}/webhooks/fleet/dev-webhook-token/"
    log_in(page, "manager", "manager-demo-password")
    untreated = page.get_by_test_id("count-untreated-fines")
    without_document = page.get_by_test_id("count-fines-without-document")
    notifications = page.get_by_test_id("count-untreated-notifications")
    expect(untreated).to_have_text("0")
    # Anything set on this document survives only if the page is never reloaded.
    page.evaluate("window.sameDocument = true")

    sent = emulator.control(
        "POST", "webhooks", url=webhook, count=16, seed=5, duplicates=0.2, shuffle=True
    )

    records = sent["records"]
    fines = [r for r in records if r["kind"] == "frame"]
    expect(untreated).to_have_text(str(sum(not r["treated"] for r in fines)))
    expect(without_document).to_have_text(str(sum(r["linkFrame"] is None for r in fines)))
    expect(notifications).to_have_text(
        str(sum(not r["treated"] for r in records if r["kind"] == "notification"))
    )
    assert page.evaluate("window.sameDocument") is True

    # More later: a new fine without its official document, then it is handled.
    new = fine_777(
        treated=False, at="2026-11-22T10:00:00Z", linkFrame=None, link="https://boletos.example/777"
    )
    emulator.control("POST", "webhooks", url=webhook, events=[new])
    expect(untreated).to_have_text(str(sum(not r["treated"] for r in fines) + 1))
    assert page.evaluate("window.sameDocument") is True

    page.get_by_role("navigation").get_by_role("link", name="Multas").click()
    rows = page.get_by_test_id("fine-table").locator("tbody tr")
    expect(rows).to_have_count(len(fines) + 1)
    # Untreated first.
    badges = rows.locator("[data-testid=treated], [data-testid=untreated]")
    states = [badge.get_attribute("data-testid") for badge in badges.all()]
    assert states == sorted(states, key=lambda state: state != "untreated")
    new_fine = page.locator('[data-testid=fine][data-key="777"]')
    expect(new_fine.get_by_test_id("official-document")).to_contain_text(
        "Ainda não disponível no órgão autuador"
    )
    slip = new_fine.get_by_role("link", name="Abrir o boleto")
    expect(slip).to_have_attribute("href", "https://boletos.example/777")
    expect(slip).to_have_attribute("target", "_blank")
    expect(slip).to_have_attribute("rel", "noopener noreferrer")

    page.get_by_label("Documento oficial").select_option(label="Ainda não disponível")
    expect(page).to_have_url(re.compile(r"document=0"))
    expect(rows).to_have_count(sum(r["linkFrame"] is None for r in fines) + 1)

    page.get_by_label("Tratamento").select_option(label="Tratada")
    expect(page).to_have_url(re.compile(r"treated=1"))
    handled_without_document = sum(r["treated"] and r["linkFrame"] is None for r in fines)
    if handled_without_document:
        expect(rows).to_have_count(handled_without_document)
    else:
        expect(page.get_by_test_id("records-empty")).to_be_visible()

    # The platform reports the new fine handled, with its document: the filters follow.
    handled_fine = fine_777(
        treated=True,
        at="2026-11-22T11:00:00Z",
        linkFrame="https://autoridade.example/autos/777.pdf",
    )
    emulator.control("POST", "webhooks", url=webhook, events=[handled_fine])
    processed(Fine.objects.filter(external_id="777", treated=True))
    page.get_by_label("Documento oficial").select_option(label="Disponível")
    handled = page.locator('[data-testid=fine][data-key="777"]')
    expect(handled.get_by_test_id("treated")).to_be_visible()
    document = handled.get_by_role("link", name="Abrir o documento oficial")
    expect(document).to_have_attribute("href", "https://autoridade.example/autos/777.pdf")
    expect(document).to_have_attribute("rel", "noopener noreferrer")


def test_the_export_downloads_what_the_filters_show(page, manager, live_server, fleet_settings):
    webhook = f"{live_server.url}/webhooks/fleet/dev-webhook-token/"
    for number, treated in ((31, False), (32, True), (33, False)):
        event = {"frame": {"id": number, "description": f"Multa {number}", "treated": treated}}
        assert requests.post(webhook, json=event, timeout=10).status_code == 202
    deliveries_process_received()  # the worker's next run
    log_in(page, "manager", "manager-demo-password")
    page.goto("/fines/")
    rows = page.get_by_test_id("fine-table").locator("tbody tr")
    expect(rows).to_have_count(3)

    page.get_by_label("Tratamento").select_option(label="Não tratada")  # htmx, no reload
    expect(rows).to_have_count(2)
    with page.expect_download() as download:
        page.get_by_role("link", name="Exportar CSV").click()

    assert download.value.suggested_filename.startswith("fines-")
    text = Path(download.value.path()).read_text(encoding="utf-8-sig")
    header, *lines = list(csv.reader(io.StringIO(text), delimiter=";"))
    assert header[1] == "Infração"
    assert sorted(line[1] for line in lines) == ["Multa 31", "Multa 33"]


def test_a_fine_is_found_by_its_notice_number_as_you_type(
    page, manager, live_server, fleet_settings
):
    webhook = f"{live_server.url}/webhooks/fleet/dev-webhook-token/"
    for number in (41, 42, 43):
        event = {"frame": {"id": number, "autoInfracao": f"E0100000{number}", "treated": False}}
        assert requests.post(webhook, json=event, timeout=10).status_code == 202
    deliveries_process_received()  # the worker's next run
    log_in(page, "manager", "manager-demo-password")
    page.goto("/fines/")
    page.evaluate("window.sameDocument = true")
    rows = page.get_by_test_id("fine-table").locator("tbody tr")
    expect(rows).to_have_count(3)

    page.get_by_label("Buscar").press_sequentially("e010000042", delay=30)

    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("E010000042")
    expect(page).to_have_url(re.compile(r"/fines/\?q=e010000042"))
    assert page.evaluate("window.sameDocument") is True


def test_a_driver_is_picked_by_name_and_the_list_follows_without_a_reload(
    page, manager, emulator, live_server, fleet_settings
):
    vehicle_search()  # the portal has read the vehicle list: fines get their vehicle's driver
    by_driver = {v["driver_id"]: v for v in emulator.vehicles() if v["driver_id"] is not None}
    (ana, ana_vehicle), (_other, other_vehicle) = list(by_driver.items())[:2]
    Driver.objects.create(driver_id=ana, name="Ana Souza")
    webhook = f"{live_server.url}/webhooks/fleet/dev-webhook-token/"
    for number, vehicle in ((51, ana_vehicle), (52, other_vehicle)):
        event = {"frame": {"id": number, "carPlate": vehicle["car_plate"], "treated": False}}
        assert requests.post(webhook, json=event, timeout=10).status_code == 202
    deliveries_process_received()  # the worker's next run
    log_in(page, "manager", "manager-demo-password")
    page.goto("/fines/")
    page.evaluate("window.sameDocument = true")
    rows = page.get_by_test_id("fine-table").locator("tbody tr")
    expect(rows).to_have_count(2)

    page.locator("#id_driver").select_option(label="Ana Souza")

    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-key", "51")
    expect(page).to_have_url(re.compile(rf"/fines/\?.*\bdriver={ana}(&|$)"))
    assert page.evaluate("window.sameDocument") is True
