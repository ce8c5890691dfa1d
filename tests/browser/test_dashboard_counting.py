"""A manager of two vehicle groups opens the dashboard before its figures were ever summed
(at a region of a large fleet the sum outlasts a web request): the page says they are
being counted and, once the worker summed them, shows them by itself, with JavaScript
(htmx asks for the figures' area again) and without it (the page reloads). The worker is
a process of its own, as under `make run`, each process with its own memory cache."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import requests
from playwright.sync_api import expect

from fleet import plates
from fleet.models import VehicleGroup, VehicleGroupMember
from fleet.services.scopes import vehicle_groups_changed
from fleet.webhooks.processing import deliveries_process_received
from tests.browser.conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.scoped]

PASSWORD = "dois-grupos-pw-123"


@pytest.fixture
def two_groups_manager(emulator: Any, live_server: Any, django_user_model: Any) -> str:
    """A fine of R$ 1.234,56, processed; then a manager of São Paulo and Rio, each with
    two of the emulator's vehicles, the fine's among them: nothing summed for them yet."""
    fleet = [plates.normalize(v["car_plate"]) for v in emulator.vehicles()]
    payload = {"frame": {"id": 4411, "treated": False, "carPlate": fleet[0], "amount": "1234.56"}}
    response = requests.post(
        f"{live_server.url}/webhooks/fleet/dev-webhook-token/",
        data=json.dumps(payload),
        headers={"Content-Type": "application/json"},
        timeout=10,
    )
    assert response.status_code == 202
    deliveries_process_received()
    user = django_user_model.objects.create_user("dois-grupos", password=PASSWORD)
    for name, chosen in (("São Paulo", fleet[:2]), ("Rio", fleet[2:4])):
        group = VehicleGroup.objects.create(name=name)
        for plate in chosen:
            group.plates.create(registration=plates.registration(plate))
        vehicle_groups_changed([group.pk])
        VehicleGroupMember.objects.create(group=group, user=user)
    return user.username


@pytest.mark.parametrize("javascript", [True, False], ids=["htmx", "no-javascript"])
def test_a_parts_first_dashboard_shows_its_figures_once_the_worker_counted_them(
    request: Any, two_groups_manager: str, javascript: bool
) -> None:
    page = request.getfixturevalue("page" if javascript else "page_without_javascript")
    log_in(page, two_groups_manager, PASSWORD)
    page.goto("/")
    note = page.get_by_test_id("figures-counting-note")
    expect(note).to_contain_text("Os números dos seus grupos de veículos estão sendo contados")
    expect(page.get_by_test_id("untreated-amount")).to_have_count(0)

    # The worker, a process of its own (as under `make run`), sums them: they reach the
    # web server through the cache every process reads (`CACHES["shared"]`).
    request.getfixturevalue("db_worker")

    # No click, no reload by the test: the page asks again by itself.
    amount = page.get_by_test_id("untreated-amount")
    expect(amount).to_have_text("R$\xa01.234,56", timeout=60_000)
    expect(note).to_have_count(0)
    expect(page.get_by_test_id("count-untreated-fines")).to_have_text("1")
    if javascript:  # the counts polled from now on, as on any dashboard
        counts = page.get_by_test_id("record-counts")
        polled = re.compile(r"^every \d+s, focus from:window$")
        expect(counts).to_have_attribute("hx-trigger", polled)
