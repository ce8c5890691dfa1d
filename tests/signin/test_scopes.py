"""The scopes the portal asks a provider for: those that bring the groups claim. Some
providers release groups only for a scope of that name; a real OpenID provider on
loopback (tests/idp.py) configured that way, the portal through Django's test client."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from signin.models import SsoOutcome
from tests.conftest import oidc_app
from tests.signin.test_oidc import last_attempt, sso, start, user_of
from tests.test_settings import start as start_portal

pytestmark = pytest.mark.django_db


@pytest.fixture
def portal_with(settings):
    """The portal with one provider from the environment (OIDC_*), its settings as given."""

    def configure(provider, **settings_):
        app = oidc_app(provider, **settings_)
        settings.SOCIALACCOUNT_PROVIDERS = {
            "openid_connect": settings.SOCIALACCOUNT_PROVIDERS["openid_connect"] | {"APPS": [app]}
        }
        settings.LOCAL_LOGIN = None

    return configure


def scopes_asked(client):
    """The scopes of the authorization request the login button sends the browser with."""
    return set(parse_qs(urlsplit(start(client)).query)["scope"][0].split())


def test_a_manager_whose_groups_come_only_with_the_groups_scope_is_let_in(
    client, portal_with, groups_scope_provider
):
    portal_with(groups_scope_provider, allowed_domains=[], manager_groups=["fleet-managers"])

    assert scopes_asked(client) == {"openid", "profile", "email", "groups"}
    answer = sso(client, "manager")

    assert answer.status_code == 302
    assert user_of(client).email == "manager@example.com"
    attempt = last_attempt()
    assert (attempt.outcome, attempt.role) == (SsoOutcome.PROVISIONED, "manager")


def test_with_scopes_configured_without_groups_the_same_manager_is_refused(
    client, portal_with, groups_scope_provider
):
    # OIDC_SCOPES="openid profile email": what the portal asked before, whatever the provider.
    portal_with(
        groups_scope_provider,
        allowed_domains=[],
        manager_groups=["fleet-managers"],
        scope=["openid", "profile", "email"],
    )

    assert scopes_asked(client) == {"openid", "profile", "email"}
    answer = sso(client, "manager")

    assert answer.status_code == 403
    assert user_of(client) is None
    assert last_attempt().outcome == SsoOutcome.NO_ROLE


def test_the_configured_scopes_replace_the_whole_list_and_openid_is_always_asked(
    client, portal_with, identity_provider
):
    # A provider added in the admin may name its scopes as one string.
    portal_with(identity_provider, scope="email groups")

    assert scopes_asked(client) == {"openid", "email", "groups"}


def test_the_scope_named_like_the_groups_claim_is_asked_only_when_the_provider_lists_it(
    client, portal_with, groups_scope_provider
):
    # The provider lists `groups`, not `roles`: asking for an unknown scope may be refused.
    portal_with(groups_scope_provider, groups_claim="roles")

    assert scopes_asked(client) == {"openid", "profile", "email"}


def test_oidc_scopes_comes_from_the_environment_and_must_include_openid():
    provider = {
        "OIDC_ISSUER": "https://login.example.com",
        "OIDC_CLIENT_ID": "portal-client",
        "OIDC_CLIENT_SECRET": "portal-client-secret-value",
    }
    code = (
        "import django; django.setup(); from django.conf import settings; "
        "print(settings.SOCIALACCOUNT_PROVIDERS['openid_connect']['APPS'][0]['settings'])"
    )

    configured = start_portal(code=code, OIDC_SCOPES=" openid  email groups ", **provider)
    unset = start_portal(code=code, **provider)
    without_openid = start_portal(OIDC_SCOPES="profile email groups", **provider)
    quoted = start_portal(OIDC_SCOPES='openid "groups"', **provider)

    assert "'scope': ['openid', 'email', 'groups']" in configured.stdout
    assert "'scope'" not in unset.stdout
    assert "OIDC_SCOPES must include openid." in without_openid.stderr
    assert "OIDC_SCOPES may hold only printable ASCII" in quoted.stderr
