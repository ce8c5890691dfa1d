"""The address bar is always the list's state: after each filter, sort or search the URL
carries exactly the filters shown; a reload shows the same rows; back and forward give
the lists before and after."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from playwright.sync_api import expect

from fleet import plates
from fleet.webhooks.processing import deliveries_process_received
from tests.browser.conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def shown_query(page: Any) -> dict[str, list[str]]:
    return parse_qs(urlsplit(page.url).query)


def keys(rows: Any) -> list[str]:
    return [row.get_attribute("data-key") for row in rows.all()]


def back_to(page: Any, url: str, rows: Any, count: int) -> None:
    """The browser's back button: the list at `url` again, with its `count` rows."""
    page.go_back()
    expect(page).to_have_url(url)
    expect(rows).to_have_count(count)


def send(live_server: Any, *events: dict[str, Any]) -> None:
    webhook = f"{live_server.url}/webhooks/fleet/dev-webhook-token/"
    for event in events:
        assert requests.post(webhook, json=event, timeout=10).status_code == 202
    deliveries_process_received()  # the worker's next run


def test_each_change_of_the_fines_list_is_its_url_and_back_and_reload_give_it_again(
    page, manager, live_server, fleet_settings
):
    send(
        live_server,
        *(
            {"frame": {"id": number, "description": words, "treated": treated, "amount": amount}}
            for number, words, treated, amount in (
                (51, "Usar o cinto de segurança", False, "130.16"),
                (52, "Avançar o sinal vermelho", True, "293.47"),
                (53, "Não usar o cinto de segurança", True, "195.23"),
                (54, "Estacionar em local proibido", True, "88.38"),
            )
        ),
    )
    log_in(page, "manager", "manager-demo-password")
    page.goto("/fines/")
    page.evaluate("window.sameDocument = true")
    rows = page.locator("[data-testid=fine]")
    expect(rows).to_have_count(4)

    page.get_by_label("Tratamento").select_option(label="Tratada")
    expect(rows).to_have_count(3)
    expect(page).to_have_url("/fines/?treated=1")
    assert shown_query(page) == {"treated": ["1"]}

    page.get_by_label("Ordenar por").select_option(value="-amount")
    expect(rows.first).to_have_attribute("data-key", "52")
    assert shown_query(page) == {"treated": ["1"], "sort": ["-amount"]}
    sorted_treated = keys(rows)
    assert sorted_treated == ["52", "53", "54"]

    page.get_by_label("Buscar").press_sequentially("cinto", delay=30)
    expect(rows).to_have_count(1)
    assert shown_query(page) == {"q": ["cinto"], "treated": ["1"], "sort": ["-amount"]}
    assert page.evaluate("window.sameDocument") is True  # htmx all along, no reload

    page.reload()
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-key", "53")
    expect(page.get_by_label("Buscar")).to_have_value("cinto")

    page.go_back()
    expect(rows).to_have_count(3)
    assert keys(rows) == sorted_treated
    assert shown_query(page) == {"treated": ["1"], "sort": ["-amount"]}
    expect(page.get_by_label("Buscar")).to_have_value("")
    back_to(page, "/fines/?treated=1", rows, 3)
    back_to(page, "/fines/", rows, 4)
    page.go_forward()
    expect(page).to_have_url("/fines/?treated=1")
    expect(rows).to_have_count(3)


def test_each_change_of_the_notifications_list_is_its_url(
    page, manager, live_server, fleet_settings
):
    send(
        live_server,
        *(
            {"notification": {"id": number, "title": title, "treated": treated}}
            for number, title, treated in (
                (61, "Recall do airbag", False),
                (62, "Recall dos freios", True),
                (63, "Licenciamento a vencer", True),
            )
        ),
    )
    log_in(page, "manager", "manager-demo-password")
    page.goto("/notifications/")
    rows = page.locator("[data-testid=notification]")
    expect(rows).to_have_count(3)

    page.locator("#id_treated").select_option("1")
    expect(rows).to_have_count(2)
    expect(page).to_have_url("/notifications/?treated=1")
    page.locator("#id_q").press_sequentially("recall", delay=30)
    expect(rows).to_have_count(1)
    assert shown_query(page) == {"q": ["recall"], "treated": ["1"]}

    page.reload()
    expect(rows).to_have_count(1)
    back_to(page, "/notifications/?treated=1", rows, 2)
    back_to(page, "/notifications/", rows, 3)


def test_each_change_of_the_vehicles_list_is_its_url(page, manager, emulator):
    fleet = emulator.vehicles()
    off = [v for v in fleet if str(v["active"]).lower() in ("0", "false")]  # as the API spells it
    inactive = sorted(plates.normalize(v["car_plate"]) for v in off)
    model = off[0]["model"]
    log_in(page, "manager", "manager-demo-password")
    page.goto("/vehicles/")
    rows = page.get_by_test_id("vehicle-table").locator("tbody tr")
    count = page.get_by_test_id("result-count")
    expect(count).to_contain_text(f"{len(fleet)} veículos de {len(fleet)}")

    page.locator("#id_active").select_option("0")
    expect(count).to_contain_text(f"{len(inactive)} veículo")
    expect(page).to_have_url("/vehicles/?active=0")
    page.locator("#id_sort").select_option("-plate")
    expect(page).to_have_url("/vehicles/?active=0&sort=-plate")
    expect(rows.first).to_contain_text(plates.display(inactive[-1]))
    page.locator("#id_q").press_sequentially(model.lower(), delay=30)
    matching = sum(1 for v in off if model.lower() in v["model"].lower())
    expect(page).to_have_url(re.compile(r"[?&]q="))
    expect(count).to_contain_text(re.compile(rf"^\s*{matching} veículos? de"))
    assert shown_query(page) == {"q": [model.lower()], "active": ["0"], "sort": ["-plate"]}

    page.reload()
    expect(count).to_contain_text(re.compile(rf"^\s*{matching} veículos? de"))
    page.go_back()
    expect(page).to_have_url("/vehicles/?active=0&sort=-plate")
    expect(count).to_contain_text(f"{len(inactive)} veículo")
    page.go_back()
    expect(page).to_have_url("/vehicles/?active=0")
    page.go_back()
    expect(page).to_have_url("/vehicles/")
    expect(count).to_contain_text(f"{len(fleet)} veículos de {len(fleet)}")
