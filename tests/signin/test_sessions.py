"""Sessions end when idle, at their maximum age, and when the user is deactivated."""

from __future__ import annotations

import datetime as dt

import pytest
import time_machine
from django.utils import timezone

pytestmark = pytest.mark.django_db

BACKGROUND = {"HX-Request": "true", "X-Background-Refresh": "1"}


def sign_in(client):
    answer = client.post(
        "/accounts/login/", {"username": "manager", "password": "manager-demo-password"}
    )
    assert answer.status_code == 302


@pytest.fixture
def clock():
    with time_machine.travel(timezone.now(), tick=False) as traveller:
        yield traveller


def test_a_session_idle_for_30_minutes_ends(client, manager, clock):
    sign_in(client)
    clock.shift(dt.timedelta(minutes=29))
    assert client.get("/").status_code == 200  # activity: the clock starts again
    clock.shift(dt.timedelta(minutes=29))
    assert client.get("/").status_code == 200

    clock.shift(dt.timedelta(minutes=31))
    answer = client.get("/vehicles/?q=onix")

    assert answer.status_code == 302
    assert answer["Location"] == "/accounts/login/?next=/vehicles/%3Fq%3Donix"
    page = client.get(answer["Location"])
    assert "Sua sessão terminou após 30 minutos sem atividade" in page.content.decode()
    assert not page.context["user"].is_authenticated


def test_a_page_refreshing_itself_does_not_keep_the_session_alive(client, manager, clock):
    sign_in(client)
    for _ in range(6):  # the dashboard's counts, every 5 minutes for half an hour
        clock.shift(dt.timedelta(minutes=5))
        assert client.get("/", headers=BACKGROUND).status_code == 200

    clock.shift(dt.timedelta(minutes=1))
    answer = client.get("/", headers=BACKGROUND)

    # htmx is told to load the login page, not to swap it into the dashboard.
    assert answer.status_code == 200
    assert answer["HX-Redirect"] == "/accounts/login/?next=/"


def test_a_busy_session_still_ends_after_12_hours(client, manager, clock):
    sign_in(client)
    for _ in range(12 * 4 + 1):
        clock.shift(dt.timedelta(minutes=15))
        if client.get("/").status_code != 200:
            break

    assert client.get("/").status_code == 302
    page = client.get("/accounts/login/")
    assert "Sua sessão terminou 12 horas depois que você entrou" in page.content.decode()


def test_the_limits_are_configurable(client, manager, clock, settings):
    settings.SESSION_IDLE_MINUTES = 5
    sign_in(client)

    clock.shift(dt.timedelta(minutes=6))

    assert client.get("/").status_code == 302


def test_a_blocked_user_is_signed_out_at_once(client, manager, admin_client):
    sign_in(client)
    assert client.get("/").status_code == 200

    admin_client.post("/admin/auth/user/", {"action": "block", "_selected_action": [manager.pk]})

    manager.refresh_from_db()
    assert not manager.is_active
    answer = client.get("/")
    assert answer.status_code == 302
    assert answer["Location"].startswith("/accounts/login/")
    # And cannot sign in again.
    assert (
        client.post(
            "/accounts/login/", {"username": "manager", "password": "manager-demo-password"}
        ).status_code
        == 200
    )
