"""One history entry per state of a list's filters: a select applies its filter at once
(htmx), so pressing the form's button next changes nothing, and adds no entry that the
first Back would only return to."""

from __future__ import annotations

from typing import Any

import pytest
import requests
from playwright.sync_api import expect

from fleet.webhooks.processing import deliveries_process_received
from tests.browser.conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Counts the address bar's changes by htmx, new entries and replaced ones alike, in an
# attribute of the body (a test reads it without evaluating a string, which CSP forbids).
COUNT_HISTORY_UPDATES = """
document.body.dataset.historyUpdates = "0";
for (const name of ["htmx:pushedIntoHistory", "htmx:replacedInHistory"]) {
  document.body.addEventListener(name, () => {
    document.body.dataset.historyUpdates = String(Number(document.body.dataset.historyUpdates) + 1);
  });
}
"""


def updated(page: Any, times: int) -> None:
    """Wait until htmx has set the address bar `times` times since the page loaded."""
    expect(page.locator("body")).to_have_attribute("data-history-updates", str(times))


def test_filtering_again_after_a_select_applied_it_leaves_one_back_to_the_list_before(
    page, manager, live_server
):
    webhook = f"{live_server.url}/webhooks/fleet/dev-webhook-token/"
    for number, treated in ((71, False), (72, True), (73, True)):
        event = {"frame": {"id": number, "treated": treated, "description": "Farol apagado"}}
        assert requests.post(webhook, json=event, timeout=10).status_code == 202
    deliveries_process_received()
    log_in(page, "manager", "manager-demo-password")
    page.goto("/fines/")
    page.evaluate(COUNT_HISTORY_UPDATES)
    rows = page.locator("[data-testid=fine]")
    expect(rows).to_have_count(3)

    page.get_by_label("Tratamento").select_option(label="Tratada")
    updated(page, 1)
    expect(page).to_have_url("/fines/?treated=1")
    expect(rows).to_have_count(2)
    page.get_by_role("button", name="Filtrar").click()
    updated(page, 2)
    expect(page).to_have_url("/fines/?treated=1")

    page.go_back()
    expect(page).to_have_url("/fines/")
    expect(rows).to_have_count(3)
    expect(page.get_by_label("Tratamento")).to_have_value("")


def test_searching_again_after_a_select_applied_it_leaves_one_back_to_the_vehicles_before(
    page, manager, emulator
):
    log_in(page, "manager", "manager-demo-password")
    page.goto("/vehicles/")
    page.evaluate(COUNT_HISTORY_UPDATES)
    count = page.get_by_test_id("result-count")
    everything = count.inner_text()

    page.get_by_label("Situação").select_option(label="Inativo")
    updated(page, 1)
    expect(page).to_have_url("/vehicles/?active=0")
    expect(count).not_to_have_text(everything)
    page.get_by_role("button", name="Buscar").click()
    updated(page, 2)
    expect(page).to_have_url("/vehicles/?active=0")

    page.go_back()
    expect(page).to_have_url("/vehicles/")
    expect(count).to_have_text(everything)
