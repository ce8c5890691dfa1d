"""Indicating a driver in time, in the browser, from end to end: the platform sends a fine
due in a few days and its "Indicação de condutor" notification; the manager sees it among
the fines to indicate within 7 days on the dashboard, follows the notification to the fine,
downloads its indication packet (the plate, the driver and their licence from a CNH lookup
the manager made), records the indication, and the fine leaves the queue and the figures."""

from __future__ import annotations

import re
from datetime import timedelta
from io import BytesIO
from pathlib import Path
from typing import Any

import pytest
import requests
from django.contrib.auth.models import Permission
from django.utils import timezone
from playwright.sync_api import expect
from pypdf import PdfReader

from fleet import plates
from fleet.models import CnhItemStatus, CnhLookup, CnhLookupItem, Fine, Notification
from fleet.services.drivers import driver_names_add
from fleet.services.vehicles import vehicle_search
from fleet.webhooks.processing import deliveries_process_received
from tests.browser.conftest import log_in
from tests.conftest import Emulator
from tests.scopes import grant_whole_fleet

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DRIVER_NAME = "Ana Souza"
LICENCE = "98765432100"
NOTICE = "E0164001"


@pytest.fixture
def notified_fine(
    manager: Any, emulator: Emulator, live_server: Any, held_clock: Any
) -> dict[str, Any]:
    """A manager of the whole fleet who may indicate; a fine of one of the emulator's
    vehicles due in three days (its driver the vehicle list's, named Ana Souza, whose
    licence a CNH lookup of the manager's found) and the platform's notification asking to
    indicate its driver, both delivered to the receiver and processed."""
    grant_whole_fleet(manager)
    manager.user_permissions.add(Permission.objects.get(codename="change_fine_indication"))
    vehicle_search()  # the portal has read the vehicle list: fines get their vehicle's driver
    vehicle = next(v for v in emulator.vehicles() if v["driver_id"] is not None)
    plate = plates.normalize(vehicle["car_plate"])
    due = timezone.localdate() + timedelta(days=3)
    webhook = f"{live_server.url}/webhooks/fleet/dev-webhook-token/"
    fine = {
        "id": 64001,
        "carPlate": plate,
        "autoInfracao": NOTICE,
        "description": "Avançar o sinal vermelho do semáforo",
        "amount": "293.47",
        "treated": False,
        "indicationDeadline": due.isoformat(),
    }
    notification = {
        "id": 64002,
        "type": "driver",
        "title": "Indicação de condutor",
        "message": f"Indique o condutor da multa {NOTICE}.",
        "carPlate": plate,
        "autoInfracao": NOTICE,
        "treated": False,
    }
    for event in ({"frame": fine}, {"notification": notification}):
        assert requests.post(webhook, json=event, timeout=10).status_code == 202
    deliveries_process_received()  # the worker's next run
    record = Fine.objects.get(reference=NOTICE)
    driver_id: int = vehicle["driver_id"]
    assert record.driver_id == driver_id, "the vehicle list's driver"
    driver_names_add(names={driver_id: DRIVER_NAME})
    lookup = CnhLookup.objects.create(owner=manager, kind="single", purpose="fine", status="done")
    answer = {"name": DRIVER_NAME.upper(), "cnhNumber": LICENCE, "category": "AB"}
    CnhLookupItem.objects.create(
        lookup=lookup, position=0, cpf="52998224725", status=CnhItemStatus.OK, result=answer
    )
    return {
        "fine": record,
        "notification": Notification.objects.get(external_id="64002"),
        "plate": plate,
        "due": due,
    }


def test_a_manager_follows_the_notification_downloads_the_packet_and_indicates_in_time(
    page: Any, notified_fine: dict[str, Any]
) -> None:
    fine, plate = notified_fine["fine"], notified_fine["plate"]
    log_in(page, "manager", "manager-demo-password")

    page.goto("/")
    soon, at_risk = page.get_by_test_id("to-indicate-soon"), page.get_by_test_id("at-risk")
    expect(soon).to_have_text(re.compile(r"^[1-9]\d*$"))
    soon_before = int(soon.inner_text())
    risk_before = at_risk.inner_text()
    expect(at_risk).not_to_have_text("R$\xa00,00")

    # The notification names the fine by its notice number and links to it.
    page.goto(notified_fine["notification"].get_absolute_url())
    notified = page.get_by_test_id("notified-fine")
    expect(notified).to_have_attribute("data-how", "notice")
    expect(notified.get_by_test_id("suggested-driver")).to_contain_text(DRIVER_NAME)
    notified.get_by_test_id("indicate-link").click()
    expect(page).to_have_url(re.compile(rf"/fines/{fine.pk}/$"))

    # The fine's page: its deadline as the platform sent it, in three days, and its driver.
    due = page.get_by_test_id("indication-due")
    expect(due.locator("time")).to_have_attribute("datetime", notified_fine["due"].isoformat())
    expect(due.get_by_test_id("sent")).to_be_visible()
    expect(due.get_by_test_id("days-left")).to_have_text("3 dias restantes")
    form = page.get_by_test_id("indicate-form")
    expect(form.get_by_label("Condutor", exact=True)).to_have_value(re.compile(DRIVER_NAME))

    # The packet: the plate, the driver and the licence the manager's lookup found.
    with page.expect_download() as download:
        page.get_by_test_id("packet-link").get_by_role("link").click()
    assert download.value.suggested_filename == f"indicacao-{plate}-{NOTICE}.pdf"
    pdf = PdfReader(BytesIO(Path(download.value.path()).read_bytes()))
    [text] = [sheet.extract_text() for sheet in pdf.pages]
    assert plate in text
    assert DRIVER_NAME in text
    assert LICENCE in text

    # Indicated by post today, with the driver as filled in.
    form.get_by_label("Como").select_option("post")
    form.get_by_label("Em").fill(timezone.localdate().isoformat())
    form.get_by_test_id("indicate-save").click()
    expect(page.get_by_text("Indicação registrada")).to_be_visible()
    state = page.locator("dd[data-testid=indication]")
    expect(state).to_have_attribute("data-state", "indicated")
    expect(state).to_contain_text("Indicada, aguardando o órgão")
    expect(page.get_by_test_id("indicate-form")).to_have_count(0)
    expect(page.get_by_test_id("indications")).to_contain_text(DRIVER_NAME)

    # Out of the queue; one fewer on the dashboard, and its NIC no longer at risk.
    page.goto("/fines/indications/")
    expect(page.locator(f'[data-testid=queue-row][data-key="{fine.external_id}"]')).to_have_count(0)
    page.goto("/")
    expect(soon).to_have_text(str(soon_before - 1))
    expect(at_risk).not_to_have_text(risk_before)
