"""Fines the emulator sends, processed by a real `manage.py
db_worker`, are the dashboard's figures (untreated R$ and count, per month, per vehicle,
per driver); the chart's text alternative reads the same numbers; a figure opens the
matching filtered list; a saved view comes back after signing out and in."""

from __future__ import annotations

import re
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from fleet import plates
from fleet.models import Fine
from fleet.services.dashboard import month_start
from tests.browser.conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# (months ago, amount, treated) per fine, spread over three vehicles below.
FINES = [
    (0, "293.47", False),
    (0, "130.16", False),
    (1, "88.38", False),
    (1, "1467.35", False),
    (3, "195.23", True),
    (3, "104.12", False),
    (5, "880.41", False),
]


def brl(amount: Decimal) -> str:
    """An amount as the pt-BR pages write it: 1.234,56."""
    return f"{amount:,.2f}".replace(",", "_").replace(".", ",").replace("_", ".")


def occurred(months_ago: int) -> str:
    day = month_start(timezone.localdate(), back=months_ago) + timedelta(days=9)
    return datetime.combine(day, datetime.min.time(), tzinfo=UTC).isoformat().replace("+00:00", "Z")


def wait_for(condition, message: str, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, message
        time.sleep(0.1)


def test_the_dashboard_adds_up_the_fines_sent_and_links_to_them(
    page, manager, emulator, live_server, fleet_settings, db_worker
):
    vehicles = [v for v in emulator.vehicles() if v["driver_id"] is not None]
    # Three vehicles of three different drivers.
    chosen: dict[int, dict[str, Any]] = {}
    for vehicle in vehicles:
        chosen.setdefault(vehicle["driver_id"], vehicle)
    fleet = list(chosen.values())[:3]
    events: list[dict[str, Any]] = []
    sent: list[dict[str, Any]] = []  # the fines themselves
    for number, (months_ago, amount, treated) in enumerate(FINES):
        vehicle = fleet[number % 3]
        event = {
            "id": 23_000 + number,
            "carPlate": vehicle["car_plate"],
            "autoInfracao": f"E23{number:05d}",
            "description": "Excesso de velocidade",
            "occurredAt": occurred(months_ago),
            "amount": amount,
            "treated": treated,
        }
        sent.append(event)
        events.append({"frame": event, "linkFrame": None, "link": "https://boletos.example/1"})
    webhook = f"{live_server.url}/webhooks/fleet/dev-webhook-token/"

    emulator.control("POST", "webhooks", url=webhook, events=events)

    # The worker writes them, then attributes them to drivers (it fetches the vehicle list).
    wait_for(lambda: Fine.objects.count() == len(FINES), "the worker did not process the fines")
    wait_for(
        lambda: not Fine.objects.filter(driver_id__isnull=True).exists(),
        "the worker did not attribute the fines to their drivers",
    )
    untreated = [fine for fine in sent if not fine["treated"]]
    total = sum((Decimal(f["amount"]) for f in untreated), Decimal(0))
    by_month: dict[str, list[Decimal]] = defaultdict(list)
    for fine in sent:
        by_month[fine["occurredAt"][:7]].append(Decimal(fine["amount"]))
    by_vehicle: dict[str, list[Decimal]] = defaultdict(list)
    for fine in untreated:
        by_vehicle[plates.registration(fine["carPlate"])].append(Decimal(fine["amount"]))
    # The drivers ranked: those the history established (the fines since the worker's
    # first refresh of the list); the older fines' drivers are the list's, a guess.
    by_driver: dict[int, list[Decimal]] = defaultdict(list)
    for established in Fine.objects.filter(treated=False, driver_basis__in=["history", "manual"]):
        assert established.driver_id is not None
        assert established.amount is not None
        by_driver[established.driver_id].append(established.amount)
    assert by_driver, "no fine's driver established: the test shows no ranking"

    log_in(page, "manager", "manager-demo-password")

    expect(page.get_by_test_id("untreated-amount")).to_have_text(f"R$\u00a0{brl(total)}")
    expect(page.get_by_test_id("untreated-amount-link")).to_contain_text(f"{len(untreated)} multas")
    for month, amounts in by_month.items():
        row = page.locator(f'[data-testid="month"][data-month="{month}"]')
        expect(row.get_by_test_id("month-count")).to_have_text(str(len(amounts)))
        expect(row.get_by_test_id("month-amount")).to_have_text(brl(sum(amounts, Decimal(0))))
    months_shown = page.get_by_test_id("month")
    expect(months_shown).to_have_count(12)
    everything = sum((Decimal(fine["amount"]) for fine in sent), Decimal(0))
    expect(page.get_by_test_id("months-summary")).to_contain_text(
        f"{len(sent)} multas cometidas nos últimos 12 meses, R$ {brl(everything)}"
    )
    for registration, amounts in by_vehicle.items():
        row = page.locator(f'[data-testid="top-vehicle"][data-registration="{registration}"]')
        expect(row.get_by_test_id("vehicle-count")).to_have_text(str(len(amounts)))
        expect(row.get_by_test_id("vehicle-amount")).to_have_text(brl(sum(amounts, Decimal(0))))
    for driver, amounts in by_driver.items():
        row = page.locator(f'[data-testid="top-driver"][data-driver="{driver}"]')
        expect(row.get_by_test_id("driver-count")).to_have_text(str(len(amounts)))
        expect(row.get_by_test_id("driver-amount")).to_have_text(brl(sum(amounts, Decimal(0))))

    # A month's figure opens that month's fines, with the same totals. The months' table
    # is folded under the chart until asked for.
    busiest = max(by_month, key=lambda month: len(by_month[month]))
    expect(page.get_by_test_id("months-table")).to_be_hidden()
    page.get_by_text("Números por mês").click()
    page.locator(f'[data-testid="month"][data-month="{busiest}"]').get_by_test_id(
        "month-amount"
    ).click()
    expect(page).to_have_url(re.compile(rf"/fines/\?month={busiest}$"))
    expect(page.get_by_test_id("fine")).to_have_count(len(by_month[busiest]))
    expect(page.get_by_test_id("result-amount")).to_contain_text(
        brl(sum(by_month[busiest], Decimal(0)))
    )

    # A driver's figure opens their untreated fines.
    page.go_back()
    driver, amounts = next(iter(by_driver.items()))
    page.locator(f'[data-testid="top-driver"][data-driver="{driver}"]').get_by_test_id(
        "driver-amount"
    ).click()
    expect(page).to_have_url(re.compile(rf"/fines/\?driver={driver}&treated=0&basis=established$"))
    expect(page.get_by_test_id("fine")).to_have_count(len(amounts))

    # Saved as a view, it is a tab that comes back after signing out and in.
    page.get_by_test_id("save-view").locator("xpath=..").locator("summary").click()
    page.get_by_test_id("save-view").get_by_role("textbox").fill("Multas do motorista")
    page.get_by_test_id("save-view").get_by_role("button").click()
    expect(page.get_by_test_id("saved-view")).to_have_text("Multas do motorista")
    page.get_by_role("button", name="Sair").click()
    log_in(page, "manager", "manager-demo-password")
    page.goto("/fines/")
    page.get_by_test_id("saved-view").click()
    expect(page).to_have_url(re.compile(rf"/fines/\?treated=0&driver={driver}&basis=established$"))
    expect(page.get_by_test_id("fine")).to_have_count(len(amounts))
    expect(page.get_by_test_id("saved-view")).to_have_attribute("aria-current", "page")


def test_the_driver_page_lists_the_fines_attributed_and_fits_a_phone(
    browser, manager, emulator, live_server, fleet_settings, db_worker
):
    vehicle = next(v for v in emulator.vehicles() if v["driver_id"] is not None)
    driver = vehicle["driver_id"]
    fine = {"id": 23_100, "carPlate": vehicle["car_plate"], "amount": "293.47", "treated": False}
    webhook = f"{live_server.url}/webhooks/fleet/dev-webhook-token/"
    emulator.control("POST", "webhooks", url=webhook, events=[{"frame": fine}])
    wait_for(
        lambda: Fine.objects.filter(driver_id=driver).exists(),
        "the worker did not attribute the fine to its driver",
    )
    context = browser.new_context(
        base_url=live_server.url, locale="pt-BR", viewport={"width": 390, "height": 844}
    )
    context.set_default_timeout(10_000)
    page = context.new_page()
    log_in(page, "manager", "manager-demo-password")

    page.goto(f"/vehicles/?q={vehicle['car_plate']}")
    # A driver the portal has no name for: named by their id.
    named = f"Condutor {driver}"
    page.get_by_test_id("vehicle-table").get_by_role("link", name=named, exact=True).click()

    expect(page).to_have_url(re.compile(rf"/drivers/{driver}/$"))
    expect(page.get_by_test_id("driver-fines")).to_have_text("1")
    expect(page.get_by_test_id("driver-totals")).to_contain_text("R$ 293,47")
    expect(page.get_by_test_id("driver-vehicles")).to_contain_text(vehicle["model"])
    overflow = page.evaluate(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert overflow == 0, f"the driver page scrolls sideways by {overflow} px on a phone"
    context.close()
