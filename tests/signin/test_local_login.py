"""The local login: throttled per account and per address, audited, switchable."""

from __future__ import annotations

import datetime as dt
import re

import pytest
import time_machine
from axes.models import AccessAttempt, AccessFailureLog, AccessLog
from axes.utils import reset as axes_reset
from django.utils import timezone

pytestmark = pytest.mark.django_db

PASSWORD = "manager-demo-password"


def log_in(client, username="manager", password=PASSWORD, **extra):
    return client.post("/accounts/login/", {"username": username, "password": password}, **extra)


def signed_in_as(client):
    user = client.get("/accounts/signed-out/").context["user"]
    return user.get_username() if user.is_authenticated else None


def text(response):
    return re.sub(r"\s+", " ", response.content.decode())


def test_ten_wrong_passwords_lock_the_account_and_say_for_how_long(client, manager, log_records):
    for attempt in range(1, 10):
        answer = log_in(client, password=f"wrong-{attempt}")
        assert answer.status_code == 200
        assert "Por favor, entre com um usuário e senha corretos" in text(answer)

    tenth = log_in(client, password="wrong-10")

    assert tenth.status_code == 429
    assert "está bloqueado por mais 15 minutos" in text(tenth)
    # The right password during the lock does not sign in.
    right = log_in(client)
    assert right.status_code == 429
    assert "está bloqueado" in text(right)
    assert signed_in_as(client) is None
    # Every failure and the lockout are in the audit trail, never a password.
    failures = AccessFailureLog.objects.filter(username="manager").order_by("attempt_time")
    assert failures.count() == 11
    assert [f.locked_out for f in failures][8:] == [False, True, True]
    assert all(f.ip_address == "127.0.0.1" for f in failures)
    attempt = AccessAttempt.objects.get(username="manager")
    assert "wrong-" not in attempt.post_data
    assert PASSWORD not in attempt.post_data
    lines = "\n".join(log_records.lines)
    assert "Locking out" in lines
    assert 'username: "manager"' in lines
    assert "wrong-" not in lines
    assert PASSWORD not in lines


def test_an_administrator_sees_the_lockout_in_admin_and_unlocks_it(client, manager, admin_client):
    for attempt in range(10):
        log_in(client, password=f"wrong-{attempt}")
    assert log_in(client).status_code == 429

    failures_page = admin_client.get("/admin/axes/accessfailurelog/")
    assert failures_page.status_code == 200
    assert "manager" in failures_page.content.decode()
    attempts_page = admin_client.get("/admin/axes/accessattempt/")
    assert "manager" in attempts_page.content.decode()

    unlocked = admin_client.post(
        "/admin/auth/user/",
        {"action": "unlock_local_login", "_selected_action": [manager.pk]},
        follow=True,
    )

    assert "registro" in unlocked.content.decode()
    assert not AccessAttempt.objects.filter(username="manager").exists()
    assert log_in(client).status_code == 302
    assert signed_in_as(client) == "manager"


def test_the_lock_ends_after_its_cool_off(client, manager):
    for attempt in range(10):
        log_in(client, password=f"wrong-{attempt}")

    with time_machine.travel(timezone.now() + dt.timedelta(minutes=14), tick=False):
        assert log_in(client).status_code == 429
    with time_machine.travel(timezone.now() + dt.timedelta(minutes=31), tick=False):
        assert log_in(client).status_code == 302


def test_one_address_trying_many_usernames_is_locked_too(client, manager):
    for attempt in range(10):
        log_in(client, username=f"guess-{attempt}", password="wrong")

    answer = log_in(client)

    assert answer.status_code == 429
    assert signed_in_as(client) is None
    # Another address is not locked for this account.
    assert log_in(client, REMOTE_ADDR="203.0.113.9").status_code == 302


def test_a_success_is_logged_and_resets_the_count(client, manager):
    for attempt in range(9):
        log_in(client, password=f"wrong-{attempt}")

    assert log_in(client).status_code == 302

    assert AccessLog.objects.filter(username="manager", ip_address="127.0.0.1").exists()
    client.post("/accounts/logout/")
    assert log_in(client, password="wrong-again").status_code == 200  # counting from zero


def test_the_limit_and_the_wait_are_configurable(client, manager, settings):
    settings.AXES_FAILURE_LIMIT = 3
    settings.AXES_COOLOFF_TIME = dt.timedelta(minutes=1)

    for attempt in range(3):
        answer = log_in(client, password=f"wrong-{attempt}")

    assert answer.status_code == 429
    assert "está bloqueado por mais 1 minuto." in text(answer)


def test_staff_mode_keeps_the_form_for_administrators_only(client, manager, admin_user, settings):
    settings.LOCAL_LOGIN = "staff"

    refused = log_in(client)
    assert refused.status_code == 200
    assert "Administradores: com usuário e senha" in text(refused)
    # The same words as a wrong password: nothing tells the password was right.
    assert text(refused).count("entre com um usuário e senha corretos") == 1
    assert signed_in_as(client) is None

    assert log_in(client, username="admin", password="password").status_code == 302
    assert signed_in_as(client) == "admin"


def test_in_staff_mode_a_managers_right_password_is_answered_as_a_wrong_one_at_every_count(
    client, manager, settings
):
    """Refused after its password checked out, a manager's login must still count as a
    failure: otherwise, one guess short of the lock, a wrong guess locks and the right
    one does not, and the lockout tells which guess was right."""
    settings.LOCAL_LOGIN = "staff"

    def answer_after(failures, password):
        axes_reset()
        for attempt in range(failures):
            log_in(client, password=f"wrong-{attempt}")
        answer = log_in(client, password=password)
        # The page's content, less the CSRF token (new in every page).
        main = re.search(r"<main.*</main>", text(answer)).group(0)
        return answer.status_code, re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', "", main)

    for failures in range(11):
        right = answer_after(failures, PASSWORD)
        wrong = answer_after(failures, "wrong-again")
        assert right == wrong, f"after {failures} failures"
        assert right[0] == (429 if failures >= 9 else 200), f"after {failures} failures"
    assert signed_in_as(client) is None


def test_off_mode_shows_no_form_and_signs_nobody_in(client, admin_user, settings):
    settings.LOCAL_LOGIN = "off"

    page = client.get("/accounts/login/")
    assert 'name="password"' not in page.content.decode()
    assert "Nenhuma forma de entrar está configurada" in text(page)

    assert log_in(client, username="admin", password="password").status_code == 200
    assert signed_in_as(client) is None


def test_the_admin_login_is_the_portal_login(client):
    answer = client.get("/admin/login/?next=/admin/")

    assert answer.status_code == 302
    assert answer["Location"] == "/accounts/login/?next=%2Fadmin%2F"
