from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

pytestmark = pytest.mark.django_db


def test_demo_users_can_log_in_and_are_printed(client):
    out = io.StringIO()

    call_command("demo_users", stdout=out)

    logins = (("admin", "admin-demo-password"), ("manager", "manager-demo-password"))
    for username, password in logins:
        answer = client.post("/accounts/login/", {"username": username, "password": password})
        assert answer.status_code == 302, username
        user = client.get("/").context["user"]
        assert user.get_username() == username
        assert user.is_superuser is (username == "admin")
        assert user.is_staff is (username == "admin")
        client.post("/accounts/logout/")
    assert "manager / manager-demo-password" in out.getvalue()


def test_the_demo_manager_is_linked_to_the_emulator_fleet_login(django_user_model):
    call_command("demo_users", stdout=io.StringIO())

    account = django_user_model.objects.get(username="manager").fleet_account
    assert account.email == "manager@example.com"
    assert account.password() == "demo-password"


def test_running_twice_resets_the_demo_passwords(django_user_model):
    call_command("demo_users", stdout=io.StringIO())
    manager = django_user_model.objects.get(username="manager")
    manager.set_password("changed-by-someone")
    manager.save()

    call_command("demo_users", stdout=io.StringIO())

    assert django_user_model.objects.get(username="manager").check_password("manager-demo-password")
    assert django_user_model.objects.filter(username="manager").count() == 1


def test_demo_users_are_refused_outside_the_emulator(settings, django_user_model):
    settings.FLEET_ENVIRONMENT = "production"

    with pytest.raises(CommandError, match="only created for the emulator"):
        call_command("demo_users", stdout=io.StringIO())
    assert not django_user_model.objects.exists()


def test_the_login_page_names_every_demo_login_it_creates(client, settings):
    settings.FLEET_ENVIRONMENT = "emulator"
    out = io.StringIO()
    call_command("demo_users", stdout=out)

    hint = client.get("/accounts/login/", headers={"Accept-Language": "en"}).text
    printed = out.getvalue()
    for login in ("admin / admin-demo-password", "manager / manager-demo-password",
                  "regional / regional-demo-password"):  # fmt: skip
        assert login in printed
        assert login in hint
