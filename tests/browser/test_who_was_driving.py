"""Who was driving, in the browser: a manager opens a fine whose vehicle changed hands
around when it was committed, sees both candidates and the window, picks one with a
reason; the dashboard's drivers with the most untreated R$ and the driver's page follow.

The history is written first, at a hand-over of the emulator's schedule two days ago
(both clocks moved there, then back to now: the browser's session runs on today's)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from django.test import Client
from playwright.sync_api import expect

from fleet.models import DriverBasis, FineDriverCorrection
from fleet.services.drivers import driver_names_add
from tests.browser.conftest import log_in
from tests.conftest import Emulator
from tests.driving import HOUR, MINUTE, Clocks, deliver, iso, lone_handover

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def uncertain(fleet_settings: Any, emulator: Emulator, time_machine: Any) -> dict[str, Any]:
    """A vehicle handed from D1 to D2 two days ago, seen half an hour either side; a fine
    committed in between (R$ 500, no driver yet) and one of D1's before (R$ 100)."""
    fleet_settings.FLEET_DRIVER_HISTORY = True
    emulator.switch_handovers(True)
    now = datetime.now(UTC)
    plate, h, d1, d2 = lone_handover(emulator, start=now - 3 * 24 * HOUR)
    clocks = Clocks(time_machine, emulator)
    for minutes in (-90, -30, 30):
        clocks.observe(h + minutes * MINUTE)
    client = Client()
    clocks.at(h + 60 * MINUTE)
    fine = deliver(client, 4201, plate, h - 10 * MINUTE, amount="500.00")
    earlier = deliver(client, 4202, plate, h - 60 * MINUTE, amount="100.00")
    time_machine.move_to(now, tick=True)  # today again (a few seconds behind)
    emulator.control("POST", "clock", set=iso(now))
    assert fine.driver_basis == DriverBasis.UNCERTAIN
    assert (earlier.driver_basis, earlier.driver_id) == (DriverBasis.HISTORY, d1)
    driver_names_add(names={d1: "Ana Souza", d2: "Bruno Lima"})
    return {"fine": fine, "d1": d1, "d2": d2}


def test_a_manager_picks_who_was_driving_and_the_figures_follow(
    page, manager, uncertain, live_server
):
    from django.contrib.auth.models import Permission

    manager.user_permissions.add(Permission.objects.get(codename="change_fine_driver"))
    fine, d1, d2 = uncertain["fine"], uncertain["d1"], uncertain["d2"]
    log_in(page, "manager", "manager-demo-password")

    page.goto("/")
    top = page.get_by_test_id("top-driver")
    expect(top).to_have_count(1)
    expect(top.first).to_have_attribute("data-driver", str(d1))

    page.goto(f"/fines/{fine.pk}/")
    story = page.get_by_test_id("fine-driver")
    expect(story).to_contain_text("Trocou de mãos entre")
    expect(story.get_by_test_id("driver-candidate")).to_have_text(["Ana Souza", "Bruno Lima"])
    form = page.get_by_test_id("fine-driver-form")
    form.get_by_label("Bruno Lima").check()
    form.get_by_label("Motivo").fill("Veículo emprestado ao Bruno")
    form.get_by_test_id("fine-driver-save").click()

    expect(page.get_by_text("Condutor definido.")).to_be_visible()
    expect(story).to_contain_text("Bruno Lima")
    expect(story).to_contain_text("definido por Marcos")
    expect(story).to_contain_text("“Veículo emprestado ao Bruno”")
    correction = FineDriverCorrection.objects.get()
    assert (correction.from_driver_id, correction.to_driver_id) == (None, d2)

    page.goto("/")
    expect(top).to_have_count(2)
    expect(top.first).to_have_attribute("data-driver", str(d2))  # R$ 500 before R$ 100
    expect(top.first.get_by_test_id("driver-amount")).to_have_text("500,00")

    page.goto(f"/drivers/{d2}/")
    expect(page.get_by_test_id("driver-fine")).to_have_count(1)
    expect(page.get_by_test_id("driver-untreated")).to_have_text("1")
