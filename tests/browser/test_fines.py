"""Events the emulator sends appear on /fines/, the
dashboard's counts change without a reload, and the filters work. The receiver stores
them; a real `manage.py db_worker` processes them, as under `make run`."""

from __future__ import annotations

import csv
import io
import re
import time
from pathlib import Path
from typing import Any

import pytest
import requests
from django.db.models import QuerySet
from playwright.sync_api import expect

from fleet.management.commands.demo_drivers import demo_names
from fleet.models import Driver, Fine
from fleet.services.drivers import driver_words_write
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


def many_drivers(emulator: Any, live_server: Any, count: int = 20_000) -> tuple[int, int]:
    """`count` named drivers, two of them with a fine each: Jurema Quintanilha, whose
    name no other driver shares a word of, and another; their ids."""
    vehicle_search()  # the portal has read the vehicle list: fines get their vehicle's driver
    by_driver = {v["driver_id"]: v for v in emulator.vehicles() if v["driver_id"] is not None}
    (jurema, her_vehicle), (other, other_vehicle) = list(by_driver.items())[:2]
    names = demo_names(range(1, count + 1))
    Driver.objects.bulk_create(
        Driver(driver_id=driver_id, name=name)
        for driver_id, name in names.items()
        if driver_id not in (jurema, other)
    )
    Driver.objects.create(driver_id=jurema, name="Jurema Quintanilha")
    Driver.objects.create(driver_id=other, name=names[1])
    driver_words_write(Driver.objects.all())
    assert Driver.objects.count() >= count
    webhook = f"{live_server.url}/webhooks/fleet/dev-webhook-token/"
    for number, vehicle in ((51, her_vehicle), (52, other_vehicle)):
        event = {"frame": {"id": number, "carPlate": vehicle["car_plate"], "treated": False}}
        assert requests.post(webhook, json=event, timeout=10).status_code == 202
    deliveries_process_received()  # the worker's next run
    return jurema, other


def test_among_twenty_thousand_drivers_one_is_found_by_typing_part_of_the_name(
    page, manager, emulator, live_server, fleet_settings
):
    jurema, _other = many_drivers(emulator, live_server)
    log_in(page, "manager", "manager-demo-password")
    page.goto("/fines/")
    page.evaluate("window.sameDocument = true")
    rows = page.get_by_test_id("fine-table").locator("tbody tr")
    expect(rows).to_have_count(2)
    field = page.get_by_role("combobox", name="Condutor", exact=True)

    field.press_sequentially("quinta", delay=30)  # part of her surname, in lower case

    choices = page.get_by_test_id("driver-choice")
    expect(choices).to_have_count(1)
    expect(choices.first).to_contain_text("Jurema Quintanilha")
    expect(field).to_have_attribute("aria-expanded", "true")
    choices.first.click()

    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-key", "51")
    expect(field).to_have_value(f"Jurema Quintanilha ({jurema})")
    expect(choices).to_have_count(0)
    expect(page).to_have_url(f"/fines/?driver={jurema}")  # the driver applied, by id
    assert page.evaluate("window.sameDocument") is True
    page.reload()
    expect(field).to_have_value(f"Jurema Quintanilha ({jurema})")
    expect(rows).to_have_count(1)
    # A common first name: a few choices to pick from, never the twenty thousand.
    field.fill("")
    field.press_sequentially("ana", delay=30)
    expect(choices).to_have_count(10)
    field.press("Escape")
    expect(choices).to_have_count(0)


def test_without_javascript_the_driver_field_takes_part_of_a_name(
    page_without_javascript, manager, emulator, live_server, fleet_settings
):
    page = page_without_javascript
    jurema, _other = many_drivers(emulator, live_server)
    log_in(page, "manager", "manager-demo-password")
    page.goto("/fines/")
    rows = page.get_by_test_id("fine-table").locator("tbody tr")
    expect(rows).to_have_count(2)

    page.get_by_label("Condutor", exact=True).fill("jurema quin")
    page.get_by_role("button", name="Filtrar").click()

    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-key", "51")
    expect(page.get_by_label("Condutor", exact=True)).to_have_value(
        f"Jurema Quintanilha ({jurema})"
    )
    # A name many drivers begin with: links to each, which filter by that one.
    page.get_by_label("Condutor", exact=True).fill("ana")
    page.get_by_role("button", name="Filtrar").click()
    found = page.get_by_test_id("driver-found").get_by_role("link")
    expect(found).to_have_count(10)
    expect(rows).to_have_count(2)  # not filtered until one is chosen
