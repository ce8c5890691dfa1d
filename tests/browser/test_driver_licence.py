"""A driver's licence beside the driver, in the browser: a manager opens the page of a
driver whose CPF is known, looks the licence up, and reads it suspended, in Portuguese
and in English; the fine of that driver warns of it too."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from playwright.sync_api import expect

from fleet.models import Driver, Fine
from fleet.services.driver_cpfs import driver_cpf_set
from fleet.webhooks.processing import deliveries_process_received
from tests.browser.conftest import log_in
from tests.conftest import run_tasks
from tests.scopes import grant_whole_fleet

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DRIVER = 4242


@pytest.fixture
def suspended(manager: Any) -> Fine:
    """Driver 4242 with the emulator's suspended CPF, not looked up yet, and a fine of theirs."""
    grant_whole_fleet(manager)
    driver = Driver.objects.create(driver_id=DRIVER, name="Felipe Rocha")
    driver_cpf_set(driver=driver, value="422.422.422-45")
    frame = {"id": 77, "carPlate": "ABC1D23", "autoInfracao": "E077", "treated": False}
    body = json.dumps({"frame": frame, "linkFrame": None, "link": None})
    Client().post("/webhooks/fleet/dev-webhook-token/", body, content_type="application/json")
    deliveries_process_received()
    Fine.objects.filter(external_id="77").update(driver_id=DRIVER, driver_basis="history")
    return Fine.objects.get(external_id="77")


def test_a_manager_looks_up_a_drivers_licence_and_reads_it_suspended(
    page: Any, browser: Any, live_server: Any, suspended: Fine
) -> None:
    log_in(page, "manager", "manager-demo-password")
    page.goto(f"/drivers/{DRIVER}/")
    licence = page.get_by_test_id("driver-licence")
    expect(licence.get_by_test_id("driver-cpf")).to_have_text("***.422.422-**")
    expect(licence.get_by_test_id("driver-licence-none")).to_be_visible()

    licence.get_by_role("button", name="Consultar a CNH").click()
    expect(page.get_by_text("A CNH está sendo consultada.")).to_be_visible()
    run_tasks()
    page.reload()

    expect(licence.get_by_test_id("driver-licence-situation")).to_have_text("Suspensa")
    expect(licence.get_by_test_id("licence-warning")).to_contain_text(
        "Habilitação inválida: Suspensa"
    )
    expect(licence.get_by_role("button", name="Consultar de novo")).to_be_visible()
    page.goto(f"/fines/{suspended.pk}/")
    expect(page.get_by_test_id("fine-driver").get_by_test_id("licence-warning")).to_contain_text(
        "Habilitação inválida: Suspensa"
    )

    english = browser.new_context(base_url=live_server.url, locale="en")
    english.add_cookies(page.context.cookies())
    in_english = english.new_page()
    in_english.goto(f"/drivers/{DRIVER}/")
    expect(in_english.get_by_test_id("driver-licence-situation")).to_have_text("Suspended")
    expect(
        in_english.get_by_test_id("driver-licence").get_by_test_id("licence-warning")
    ).to_contain_text("Licence not valid: Suspended")
    expect(in_english.get_by_role("button", name="Look up again")).to_be_visible()
    english.close()
