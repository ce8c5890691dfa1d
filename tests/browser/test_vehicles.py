"""The vehicles page: search as you type, bookmarkable, back button."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from fleet import plates
from tests.browser.conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_search_narrows_the_table_as_you_type_and_the_back_button_restores_it(
    page, manager, emulator
):
    fleet = emulator.vehicles()
    target = next(v for v in fleet if v["model"] == fleet[0]["model"])
    log_in(page, "manager", "manager-demo-password")
    page.get_by_role("navigation").get_by_role("link", name="Veículos").click()
    rows = page.get_by_test_id("vehicle-table").locator("tbody tr")
    expect(rows).to_have_count(50)
    count = page.get_by_test_id("result-count")
    expect(count).to_contain_text(f"{len(fleet)} veículos de {len(fleet)}")

    page.get_by_label("Buscar").press_sequentially(target["model"].lower(), delay=30)

    matching = sum(1 for v in fleet if target["model"].lower() in v["model"].lower())
    expect(count).to_contain_text(f"{matching} veículo")
    expect(rows).to_have_count(min(matching, 50))
    expect(page).to_have_url(re.compile(r"/vehicles/\?q=" + re.escape(target["model"].lower()[:3])))
    bookmark = page.url

    page.get_by_label("Buscar").fill(target["car_plate"])
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text(target["model"])

    page.go_back()
    expect(page).to_have_url(bookmark)
    expect(rows).to_have_count(min(matching, 50))
    expect(count).to_contain_text(f"{matching} veículo")

    # The bookmarked URL alone, in a fresh page, shows the same result.
    page.goto(bookmark)
    expect(rows).to_have_count(min(matching, 50))


def test_sorting_and_filtering_work_without_javascript(page_without_javascript, manager):
    page = page_without_javascript
    log_in(page, "manager", "manager-demo-password")
    page.goto("/vehicles/?active=0")
    rows = page.get_by_test_id("vehicle-table").locator("tbody tr")
    expect(rows.first).to_contain_text("Inativo")

    page.get_by_role("link", name=re.compile("^Placa")).click()
    expect(page).to_have_url(re.compile(r"sort=-plate"))
    expect(page).to_have_url(re.compile(r"active=0"))


def test_the_export_follows_a_search_made_without_reloading_the_page(page, manager, emulator):
    fleet = emulator.vehicles()
    model = fleet[0]["model"]
    matching = sorted(v["car_plate"] for v in fleet if model.lower() in v["model"].lower())
    log_in(page, "manager", "manager-demo-password")
    page.goto("/vehicles/")
    page.get_by_label("Buscar").press_sequentially(model.lower(), delay=30)
    expect(page.get_by_test_id("result-count")).to_contain_text(f"{len(matching)} veículo")

    with page.expect_download() as download:
        page.get_by_test_id("export-csv").click()

    lines = Path(download.value.path()).read_text(encoding="utf-8-sig").splitlines()
    assert lines[0].split(";")[:2] == ["Placa", "Modelo"]
    exported = sorted(plates.normalize(line.split(";")[0]) for line in lines[1:])
    assert exported == [plates.normalize(plate) for plate in matching]
