"""People sign in on their organisation's provider.

Chromium, the live portal and a real OpenID provider (tests/idp.py) on loopback; the
person types their password on the provider's own page, never on the portal's.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import expect

from tests.conftest import SSO_PASSWORDS, oidc_app

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def sign_in_through_the_provider(page, identity_provider, username):
    page.goto("/")
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next=/$"))
    page.get_by_role("button", name="Entrar com Acme SSO").click()
    # The provider's own page.
    expect(page).to_have_url(re.compile(f"^{re.escape(identity_provider.issuer)}/"))
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(SSO_PASSWORDS[username])
    page.get_by_role("button", name="Sign in").click()


def test_a_manager_signs_in_on_the_provider_and_lands_on_the_dashboard(
    page, identity_provider, oidc_settings, live_server
):
    sign_in_through_the_provider(page, identity_provider, "manager")

    expect(page).to_have_url(f"{live_server.url}/")
    expect(page.get_by_role("heading", level=1)).to_have_text("Olá, Marcos")
    navigation = page.get_by_role("navigation")
    expect(navigation.get_by_role("link", name="Veículos")).to_be_visible()
    expect(navigation.get_by_role("link", name="Administração")).to_have_count(0)


def test_a_manager_whose_groups_come_only_with_the_groups_scope_lands_on_the_dashboard(
    page, groups_scope_provider, settings, live_server
):
    # A provider such as Dex, Authentik or an Okta custom authorization server; the
    # portal admits by groups alone.
    app = oidc_app(groups_scope_provider, allowed_domains=[], manager_groups=["fleet-managers"])
    settings.SOCIALACCOUNT_PROVIDERS = {
        "openid_connect": settings.SOCIALACCOUNT_PROVIDERS["openid_connect"] | {"APPS": [app]}
    }
    settings.LOCAL_LOGIN = None
    asked = []

    def keep_the_authorization_request(request):
        if request.url.startswith(f"{groups_scope_provider.issuer}/auth?"):
            asked.append(request.url)

    page.on("request", keep_the_authorization_request)

    sign_in_through_the_provider(page, groups_scope_provider, "manager")

    expect(page).to_have_url(f"{live_server.url}/")
    expect(page.get_by_role("heading", level=1)).to_have_text("Olá, Marcos")
    (authorization,) = asked
    assert "groups" in parse_qs(urlsplit(authorization).query)["scope"][0].split()


def test_an_administrator_lands_with_the_admin(page, identity_provider, oidc_settings):
    sign_in_through_the_provider(page, identity_provider, "admin")

    expect(page.get_by_role("heading", level=1)).to_have_text("Olá, Ana")
    page.get_by_role("navigation").get_by_role("link", name="Administração").click()
    expect(page).to_have_url(re.compile(r"/admin/$"))
    expect(page.get_by_role("link", name="Administração do Portal de Frota")).to_be_visible()
    expect(page.get_by_role("link", name="Tentativas de login único")).to_be_visible()


@pytest.mark.parametrize(
    ("username", "reason"),
    [
        ("unverified", "não verificou o endereço de e-mail"),
        ("outsider", "não é de um dos domínios da sua organização"),
    ],
)
def test_people_the_organisation_did_not_admit_get_the_explanation_and_no_session(
    page, identity_provider, oidc_settings, username, reason
):
    sign_in_through_the_provider(page, identity_provider, username)

    expect(page.get_by_role("heading", level=1)).to_have_text(
        "Sua organização não deu a você acesso ao Portal de Frota"
    )
    expect(page.get_by_test_id("refusal-reason")).to_contain_text(reason)
    page.goto("/")
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next=/$"))


def test_a_refused_person_signs_in_with_another_account(page, identity_provider, oidc_settings):
    sign_in_through_the_provider(page, identity_provider, "outsider")
    expect(page.get_by_test_id("refusal-reason")).to_be_visible()

    page.get_by_role("button", name="Entrar com outra conta").click()
    page.get_by_label("Username").fill("manager")
    page.get_by_label("Password").fill(SSO_PASSWORDS["manager"])
    page.get_by_role("button", name="Sign in").click()

    expect(page.get_by_role("heading", level=1)).to_have_text("Olá, Marcos")


def test_sign_out_ends_both_sessions(page, identity_provider, oidc_settings):
    sign_in_through_the_provider(page, identity_provider, "manager")
    expect(page.get_by_role("heading", level=1)).to_have_text("Olá, Marcos")

    page.get_by_role("button", name="Sair").click()

    expect(page).to_have_url(re.compile(r"/accounts/signed-out/$"))
    expect(page.get_by_role("heading", level=1)).to_have_text("Você saiu")
    page.goto("/")
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next=/$"))
    page.get_by_role("button", name="Entrar com Acme SSO").click()
    # The provider asks again: its session ended too.
    expect(page.get_by_label("Password")).to_be_visible()
    expect(page).to_have_url(re.compile(f"^{re.escape(identity_provider.issuer)}/"))
