"""Single sign-on into the fleet app: a manager is logged into the fleet app without typing."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

MANAGER_IN_APP = '[data-fleet-user="manager@example.com"]'


def frame_src(page) -> str:
    frame = page.get_by_test_id("fleet-app-frame")
    expect(frame).to_be_attached()
    return frame.get_attribute("src")


def test_manager_sees_the_fleet_app_logged_in_and_each_reload_mints_a_new_key(
    page, manager, emulator
):
    log_in(page, "manager", "manager-demo-password")
    page.get_by_role("navigation").get_by_role("link", name="Aplicativo da frota").click()

    expect(page).to_have_url(re.compile(r"/app/$"))
    app = page.frame_locator('[data-testid="fleet-app-frame"]')
    expect(app.locator(MANAGER_IN_APP)).to_be_visible()
    first_key_url = frame_src(page)

    page.reload()

    expect(app.locator(MANAGER_IN_APP)).to_be_visible()
    second_key_url = frame_src(page)
    assert second_key_url != first_key_url
    assert emulator.calls("POST /key/generator") == 2

    # The previous key was spent on the first load: replaying it shows the expired page.
    page.goto(first_key_url)
    expect(page.locator('[data-fleet-state="expired"]')).to_be_visible()


def test_iframe_grows_to_the_height_the_app_posts(page, manager):
    log_in(page, "manager", "manager-demo-password")
    page.goto("/app/")
    frame = page.get_by_test_id("fleet-app-frame")
    expect(
        page.frame_locator('[data-testid="fleet-app-frame"]').locator(MANAGER_IN_APP)
    ).to_be_visible()

    # The emulator's page posts its height; the portal sets it on the iframe.
    expect(frame).to_have_attribute("style", re.compile(r"height: \d+px"))


def test_open_in_a_new_tab_logs_in_at_top_level(page, manager, emulator):
    log_in(page, "manager", "manager-demo-password")
    page.goto("/app/")

    with page.context.expect_page() as new_tab:
        page.get_by_test_id("open-in-new-tab").click()
    tab = new_tab.value

    expect(tab.locator(MANAGER_IN_APP)).to_be_visible()
    assert tab.url.startswith(f"{emulator.login_url}/login?accessKey=")


def test_an_ended_session_offers_a_one_click_reload(page, manager, emulator):
    log_in(page, "manager", "manager-demo-password")
    page.goto("/app/")
    app = page.frame_locator('[data-testid="fleet-app-frame"]')
    expect(app.locator(MANAGER_IN_APP)).to_be_visible()

    # The app's own session is gone (its cookie cleared): its next page is the expired one.
    page.context.clear_cookies(domain="127.0.0.1")
    app.locator("body").evaluate("() => window.location.assign('/app/')")

    notice = page.get_by_role("alert").filter(has_text="Sua sessão no aplicativo da frota terminou")
    expect(notice).to_be_visible()
    notice.get_by_role("button", name="Recarregar o aplicativo da frota").click()
    expect(app.locator(MANAGER_IN_APP)).to_be_visible()
    expect(notice).to_be_hidden()


def test_a_manager_without_a_fleet_login_is_told_where_to_link_it(
    page, django_user_model, fleet_settings
):
    django_user_model.objects.create_user(username="newcomer", password="newcomer-password-1")
    log_in(page, "newcomer", "newcomer-password-1")
    page.goto("/app/")

    page.get_by_role("link", name="Vincule seu login da frota").click()
    page.get_by_label("E-mail do login da frota").fill("manager@example.com")
    page.get_by_label("Senha da frota").fill("demo-password")
    page.get_by_role("button", name="Vincular login da frota").click()

    expect(page).to_have_url(re.compile(r"/app/$"))
    app = page.frame_locator('[data-testid="fleet-app-frame"]')
    expect(app.locator(MANAGER_IN_APP)).to_be_visible()


def test_the_back_button_gets_a_fresh_key_not_the_spent_one(page, manager, emulator):
    log_in(page, "manager", "manager-demo-password")
    page.goto("/app/")
    app = page.frame_locator('[data-testid="fleet-app-frame"]')
    expect(app.locator(MANAGER_IN_APP)).to_be_visible()
    first_key_url = frame_src(page)

    page.get_by_role("navigation").get_by_role("link", name="Painel").click()
    expect(page).to_have_url(re.compile(r"/$"))
    page.go_back()

    expect(app.locator(MANAGER_IN_APP)).to_be_visible()
    assert frame_src(page) != first_key_url
    assert emulator.calls("POST /key/generator") == 2
