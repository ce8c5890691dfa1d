"""From a vehicle's page to its fines: the fines the platform sent under its old plate
and under the Mercosul plate that replaced it, in one list."""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import expect

from fleet import plates
from fleet.models import Fine
from tests.browser.conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_vehicles_page_leads_to_its_fines_under_either_plate(
    page, manager, emulator, live_server, db_worker
):
    old = next(
        plate
        for plate in (plates.normalize(v["car_plate"]) for v in emulator.vehicles())
        if re.fullmatch(r"[A-Z]{3}[0-9]{4}", plate)
    )
    mercosul = plates.registration(old)
    emulator.control(
        "POST",
        "webhooks",
        url=f"{live_server.url}/webhooks/fleet/dev-webhook-token/",
        events=[
            {"frame": {"id": 1, "treated": False, "carPlate": old, "description": "Antes"}},
            {"frame": {"id": 2, "treated": False, "carPlate": mercosul, "description": "Depois"}},
            {"frame": {"id": 3, "treated": False, "carPlate": "ZZZ9Z99", "description": "Outro"}},
        ],
    )
    deadline = time.monotonic() + 30  # the worker runs each second: thirty times that
    while Fine.objects.count() < 3:
        assert time.monotonic() < deadline, "the worker did not process the deliveries"
        time.sleep(0.05)
    log_in(page, "manager", "manager-demo-password")

    page.goto(f"/vehicles/{old}/")
    records = page.get_by_test_id("vehicle-records")
    expect(records).to_contain_text("2 multas")
    expect(records).to_contain_text("2 não tratadas")
    records.get_by_role("link", name="2 multas").click()

    expect(page).to_have_url(re.compile(rf"/fines/\?plate={old}$"))
    rows = page.get_by_test_id("fine-table").locator("tbody tr")
    expect(rows).to_have_count(2)
    expect(page.get_by_test_id("fine-table")).to_contain_text("Antes")
    expect(page.get_by_test_id("fine-table")).to_contain_text("Depois")
    expect(page.get_by_label("Placa")).to_have_value(old)
