"""A probable driver, in the browser, in Portuguese and in English: the fines list and
the dashboard mark the vehicle list's guess as probable (the dashboard leaves it out of
its ranking, and links to those fines); the manager opens the fine, chooses the driver
by name through the picker, gives a reason, and reads the change back from → to.

The history begins two days ago at a hand-over from D1 (Ana Souza) to D2 (Bruno Lima);
two fines older than it get the vehicle list's driver, D2: a guess."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from playwright.sync_api import expect

from fleet.models import DriverBasis, FineDriverCorrection
from fleet.services.drivers import driver_names_add
from tests.browser.conftest import log_in
from tests.conftest import Emulator
from tests.driving import HOUR, MINUTE, Clocks, deliver, iso, lone_handover

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WORDS = {
    "pt-BR": {
        "probable": "provável",
        "left_out": "1 multa com condutor provável",
        "why": "Motivo",
        "set": "Condutor definido.",
    },
    "en-US": {
        "probable": "probable",
        "left_out": "1 fine whose driver is probable",
        "why": "Why",
        "set": "Driver set.",
    },
}


@pytest.fixture
def guessed(fleet_settings: Any, emulator: Emulator, time_machine: Any) -> dict[str, Any]:
    fleet_settings.FLEET_DRIVER_HISTORY = True
    emulator.switch_handovers(True)
    now = datetime.now(UTC)
    plate, h, d1, d2 = lone_handover(emulator, start=now - 3 * 24 * HOUR)
    clocks = Clocks(time_machine, emulator)
    for minutes in (-90, -30, 30):
        clocks.observe(h + minutes * MINUTE)
    client = Client()
    clocks.at(h + 60 * MINUTE)
    fine = deliver(client, 4301, plate, h - 20 * HOUR, amount="293.47")
    time_machine.move_to(now, tick=True)
    emulator.control("POST", "clock", set=iso(now))
    assert (fine.driver_basis, fine.driver_id) == (DriverBasis.LIST, d2)
    driver_names_add(names={d1: "Ana Souza", d2: "Bruno Lima"})
    return {"fine": fine, "d1": d1, "d2": d2}


@pytest.mark.parametrize("locale", ["pt-BR", "en-US"])
def test_a_probable_driver_is_marked_and_corrected_by_name(
    browser: Any, live_server: Any, manager: Any, guessed: dict[str, Any], locale: str
) -> None:
    words = WORDS[locale]
    manager.user_permissions.add(Permission.objects.get(codename="change_fine_driver"))
    context = browser.new_context(base_url=live_server.url, locale=locale)
    context.set_default_timeout(10_000)
    page = context.new_page()
    log_in(page, "manager", "manager-demo-password") if locale == "pt-BR" else _log_in_en(page)
    fine = guessed["fine"]

    # The dashboard ranks nobody on a guess, and says what it left out.
    page.goto("/")
    expect(page.get_by_test_id("top-driver")).to_have_count(0)
    left_out = page.get_by_test_id("left-out-probable")
    expect(left_out).to_contain_text(words["left_out"])
    left_out.click()

    # The list it links to: the fine, its driver marked probable, the meaning on hover.
    row = page.get_by_test_id("fine")
    expect(row).to_have_count(1)
    mark = row.get_by_test_id("driver-basis")
    expect(mark).to_have_text(words["probable"])
    expect(mark).to_have_attribute("data-basis", "list")
    assert len(mark.get_attribute("title") or "") > 40

    # The fine's page: choose Ana Souza by typing part of her name.
    page.goto(f"/fines/{fine.pk}/")
    form = page.get_by_test_id("fine-driver-form")
    form.locator("input[name=driver]").fill("ana")
    form.get_by_test_id("driver-choice").filter(has_text="Ana Souza").click()
    expect(form.locator('input[name="choice"][value="other"]')).to_be_checked()
    form.get_by_label(words["why"]).fill("Camera")
    form.get_by_test_id("fine-driver-save").click()

    expect(page.get_by_text(words["set"])).to_be_visible()
    history = page.get_by_test_id("driver-correction")
    expect(history).to_have_count(1)
    expect(history).to_contain_text(f"Bruno Lima ({words['probable']}) → Ana Souza")
    expect(history).to_contain_text("“Camera”")
    correction = FineDriverCorrection.objects.get()
    assert (correction.from_driver_id, correction.to_driver_id) == (guessed["d2"], guessed["d1"])
    # Set by a person: a fact the dashboard ranks now.
    page.goto("/")
    expect(page.get_by_test_id("top-driver")).to_have_count(1)
    expect(page.get_by_test_id("left-out-probable")).to_have_count(0)
    context.close()


def _log_in_en(page: Any) -> None:
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill("manager")
    page.get_by_label("Password").fill("manager-demo-password")
    page.get_by_role("button", name="Log in").click()
