"""Ending a person's sessions (deprovisioned over SCIM, or left every group that gives
access) ends theirs and only theirs, with every session engine, at the cost of their own
sessions: each sign-in is recorded as its user's (allauth's `UserSession`). Before, the
portal decoded every stored session of everyone, and with a session engine other than the
database's ended none (a person a provider took out of its managers stayed signed in)."""

from __future__ import annotations

import pytest
from allauth.usersessions.models import UserSession
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from signin.sessions import sessions_end
from tests.conftest import SSO_PASSWORDS
from tests.idp import sign_in_at_provider
from tests.signin.test_oidc import start
from tests.signin.test_scim_roles import by_groups

__all__ = ["by_groups"]  # the fixture

pytestmark = pytest.mark.django_db

ENGINES = [
    "django.contrib.sessions.backends.db",
    "django.contrib.sessions.backends.cache",
    "django.contrib.sessions.backends.cached_db",
]


def signed_in(username: str) -> Client:
    browser = Client()
    browser.force_login(User.objects.get(username=username))
    return browser


def signed_out(browser: Client) -> bool:
    answer = browser.get("/account/alerts/")
    return answer.status_code == 302 and answer["Location"].startswith("/accounts/login/")


@pytest.mark.parametrize("engine", ENGINES)
def test_leaving_the_managers_signs_out_that_person_alone_whatever_the_engine(
    by_groups, settings, engine
):
    settings.SESSION_ENGINE = engine
    bruno = by_groups.user_create("bruno", "00u-bruno").data["id"]
    carla = by_groups.user_create("carla", "00u-carla").data["id"]
    managers = by_groups.group_create("fleet-managers", bruno, carla).data["id"]
    phone, laptop, other = signed_in("bruno"), signed_in("bruno"), signed_in("carla")
    assert not any(signed_out(browser) for browser in (phone, laptop, other))

    by_groups.patch(f"Groups/{managers}", {"op": "remove", "path": f'members[value eq "{bruno}"]'})

    assert signed_out(phone)
    assert signed_out(laptop)
    assert not signed_out(other)
    assert User.objects.get(username="bruno").is_active  # the provider still sees him active


def test_the_cost_is_the_persons_own_sessions_not_everyones(by_groups):
    by_groups.user_create("bruno", "00u-bruno")
    bruno = User.objects.get(username="bruno")

    def ending_costs() -> int:
        signed_in("bruno")
        with CaptureQueriesContext(connection) as captured:
            assert sessions_end(user=bruno) == 1
        return len(captured.captured_queries)

    few = ending_costs()
    for number in range(30):  # thirty other people signed in
        User.objects.create_user(f"other-{number}")
        signed_in(f"other-{number}")
    assert ending_costs() == few


def test_a_sign_in_whose_address_cannot_be_read_is_recorded_all_the_same(
    client, oidc_settings, identity_provider
):
    """allauth's own record of a sign-in refuses one without a client address (a portal
    behind a Unix socket): the portal records every sign-in itself, through a provider
    (tests/idp.py) too."""
    callback = sign_in_at_provider(start(client, "acme"), "manager", SSO_PASSWORDS["manager"])

    answer = client.get(callback, REMOTE_ADDR="")

    assert answer.status_code == 302, answer.content[:300]
    manager = User.objects.get(email="manager@example.com")
    (session,) = UserSession.objects.filter(user=manager)
    assert session.session_key == client.session.session_key
    assert session.ip == "0.0.0.0"  # noqa: S104 (recorded as unknown)
