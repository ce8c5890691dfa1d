"""The deep link into the fleet app (/app/open): the portal's own buttons open it signed
in; a link from anywhere else gets a page with a button, never a key by itself."""

from __future__ import annotations

import pytest
import requests
from playwright.sync_api import expect

from fleet.webhooks.processing import deliveries_process_received
from tests.browser.conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

MANAGER_IN_APP = '[data-fleet-user="manager@example.com"]'


def opens_the_app_in_a_new_tab(page, button, emulator) -> None:
    with page.context.expect_page() as new_tab:
        button.click()
    tab = new_tab.value
    expect(tab.locator(MANAGER_IN_APP)).to_be_visible()
    assert tab.url.startswith(f"{emulator.login_url}/login?accessKey=")
    tab.close()


def test_the_deep_link_buttons_of_the_pages_open_the_fleet_app_signed_in(
    page, manager, emulator, live_server
):
    fine = {"frame": {"id": 51, "description": "Excesso de velocidade", "treated": False}}
    webhook = f"{live_server.url}/webhooks/fleet/dev-webhook-token/"
    assert requests.post(webhook, json=fine, timeout=10).status_code == 202
    deliveries_process_received()  # the worker's next run
    without_crlv = emulator.vehicles()[20]["car_plate"]  # no e-CRLV and no request
    log_in(page, "manager", "manager-demo-password")

    page.goto("/vehicles/")
    vehicle_button = page.get_by_role("button", name="Abrir no aplicativo da frota").first
    opens_the_app_in_a_new_tab(page, vehicle_button, emulator)
    page.goto("/fines/")
    opens_the_app_in_a_new_tab(page, page.get_by_test_id("handle-in-app"), emulator)
    page.goto(f"/vehicles/{without_crlv}/")
    opens_the_app_in_a_new_tab(page, page.get_by_test_id("crlv-request-in-app"), emulator)

    assert emulator.calls("POST /key/generator") == 3


def test_a_link_on_another_site_gets_a_button_and_no_key(page, manager, emulator, live_server):
    log_in(page, "manager", "manager-demo-password")
    hostile = f'<a href="{live_server.url}/app/open?next=/fines/">Veja sua frota</a>'
    page.route("https://evil.example/", lambda route: route.fulfill(body=hostile))
    page.goto("https://evil.example/")

    page.get_by_role("link", name="Veja sua frota").click()

    confirm = page.get_by_test_id("app-open")
    expect(confirm.get_by_role("button", name="Abrir o aplicativo da frota")).to_be_visible()
    assert emulator.calls("POST /key/generator") == 0
    # The manager's own click on the portal's page: a same-origin POST with its token.
    confirm.get_by_role("button", name="Abrir o aplicativo da frota").click()
    expect(page.locator(MANAGER_IN_APP)).to_be_visible()
    assert emulator.calls("POST /key/generator") == 1


def test_a_typed_or_bookmarked_deep_link_asks_first(page, manager, emulator):
    log_in(page, "manager", "manager-demo-password")

    page.goto("/app/open")  # Sec-Fetch-Site: none

    expect(page.get_by_test_id("app-open").get_by_role("button")).to_be_visible()
    assert emulator.calls("POST /key/generator") == 0


def test_without_javascript_the_app_page_opens_the_fleet_app_in_the_same_tab(
    page_without_javascript, manager, emulator
):
    page = page_without_javascript
    log_in(page, "manager", "manager-demo-password")
    page.goto("/app/")

    page.get_by_role("button", name="Abrir o aplicativo da frota nesta aba").click()

    expect(page.locator(MANAGER_IN_APP)).to_be_visible()
    assert page.url.startswith(f"{emulator.login_url}/login?accessKey=")
