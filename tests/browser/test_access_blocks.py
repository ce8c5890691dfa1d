"""An administrator's block sticks, in Chromium: a manager signed in through a real
OpenID provider (tests/idp.py) is blocked by an administrator in the admin (another
browser), and stays out after the provider's SCIM client pushes `active: true` over HTTP
and after the manager signs in through the provider again."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import requests
from allauth.socialaccount.models import SocialAccount
from django.contrib.auth.models import User
from playwright.sync_api import expect

from signin.models import SsoAttempt, SsoOutcome
from signin.scim.tokens import scim_token_mint
from tests.browser.test_sso import sign_in_through_the_provider

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

USER_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:User"


def scim(live_server: Any, token: str, method: str, path: str, body: Any) -> Any:
    return requests.request(
        method,
        f"{live_server.url}/scim/v2/{path}",
        data=json.dumps(body),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/scim+json"},
        timeout=10,
    )


def test_a_manager_blocked_in_the_admin_stays_out_after_the_provider_and_a_sign_in(
    page, browser, identity_provider, oidc_settings, live_server, admin_user
):
    sign_in_through_the_provider(page, identity_provider, "manager")
    expect(page.get_by_role("heading", level=1)).to_have_text("Olá, Marcos")
    manager = User.objects.get(email="manager@example.com")
    token = scim_token_mint(provider="acme", created_by="test")
    subject = SocialAccount.objects.get(user=manager, provider="acme").uid
    person = {"schemas": [USER_SCHEMA], "externalId": subject, "userName": "manager@example.com"}
    created = scim(live_server, token, "POST", "Users", person | {"active": True})
    assert created.status_code == 201, created.text

    # The administrator blocks them, in the admin.
    context = browser.new_context(base_url=live_server.url, locale="en-US")
    admin = context.new_page()
    admin.goto("/accounts/login/?next=/admin/auth/user/")
    admin.get_by_label("Username").fill(admin_user.username)
    admin.get_by_label("Password").fill("password")
    admin.get_by_role("button", name="Log in", exact=True).click()
    admin.wait_for_url("**/admin/auth/user/")
    admin.get_by_role("row", name=re.compile("manager@example.com")).get_by_role("checkbox").check()
    admin.get_by_label("Action:").select_option(value="block")
    admin.locator('button[name="index"]').click()  # the action's button
    expect(admin.locator(".messagelist")).to_contain_text("1")
    assert User.objects.get(pk=manager.pk).access_block.by
    context.close()

    # Their next page is the sign-in page.
    page.get_by_role("navigation").get_by_role("link", name="Veículos").click()
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next=/vehicles/$"))

    # The provider pushes them active again: still blocked.
    pushed = scim(
        live_server, token, "PUT", f"Users/{created.json()['id']}", person | {"active": True}
    )
    assert pushed.status_code == 200, pushed.text
    manager.refresh_from_db()
    assert not manager.is_active

    # And signing in through the provider again (its own session still open: it answers
    # at once) is refused, with the reason.
    page.get_by_role("button", name="Entrar com Acme SSO").click()
    expect(page.get_by_text("Sua conta no Portal de Frota foi desativada.")).to_be_visible()
    assert SsoAttempt.objects.latest("pk").outcome == SsoOutcome.DEACTIVATED
    page.goto("/vehicles/")
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next=/vehicles/$"))
