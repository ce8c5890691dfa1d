from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_manager_logs_in_and_sees_the_dashboard(page, manager):
    page.goto("/")
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next=/$"))

    log_in(page, "manager", "manager-demo-password")

    expect(page).to_have_url(re.compile(r"/$"))
    expect(page.get_by_role("heading", level=1)).to_have_text("Olá, Marcos")
    expect(page.get_by_test_id("env-banner")).to_contain_text("Emulador")


def test_wrong_password_shows_a_message_not_the_dashboard(page, manager):
    log_in(page, "manager", "not-the-password")

    expect(page.get_by_role("alert")).to_be_visible()
    expect(page).to_have_url(re.compile(r"/accounts/login/"))


def test_manager_logs_out(page, manager):
    log_in(page, "manager", "manager-demo-password")
    page.get_by_role("button", name="Sair").click()

    expect(page).to_have_url(re.compile(r"/accounts/signed-out/$"))
    expect(page.get_by_role("heading", level=1)).to_have_text("Você saiu")
    page.goto("/")
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next=/$"))
