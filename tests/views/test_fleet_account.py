"""A manager links or updates their own fleet login, checked by one mint first."""

from __future__ import annotations

import pytest

from fleet.models import AccessKeyMint, FleetAccount
from tests.conftest import FLEET_EMAIL, FLEET_PASSWORD, stored_password

pytestmark = pytest.mark.django_db
ENGLISH = {"Accept-Language": "en"}


@pytest.fixture
def newcomer(client, django_user_model, fleet_settings):
    user = django_user_model.objects.create_user("newcomer")
    client.force_login(user)
    return user


def test_linking_a_working_login_saves_it_encrypted(client, newcomer, emulator):
    response = client.post(
        "/app/account?next=/app/", {"email": FLEET_EMAIL, "password": FLEET_PASSWORD}
    )

    assert response.status_code == 302
    assert response["Location"] == "/app/"
    account = FleetAccount.objects.get(user=newcomer)
    assert account.email == FLEET_EMAIL
    assert FLEET_PASSWORD not in stored_password(FleetAccount.objects.get(user=newcomer))
    assert account.password() == FLEET_PASSWORD
    assert emulator.calls("POST /key/generator") == 1
    assert AccessKeyMint.objects.get().purpose == "link_check"


def test_a_refused_login_is_not_saved_and_the_password_not_echoed(client, newcomer):
    response = client.post(
        "/app/account",
        {"email": FLEET_EMAIL, "password": "wrong-password-123"},
        headers=ENGLISH,
    )

    assert response.status_code == 200
    assert "The fleet application refused this e-mail or password." in response.text
    assert "wrong-password-123" not in response.text
    assert FLEET_EMAIL in response.text  # the e-mail is kept, so only the password is retyped
    assert not FleetAccount.objects.exists()


def test_fleet_service_down_saves_nothing_and_says_so(client, newcomer, emulator):
    emulator.fault("/key/generator", status=503)

    response = client.post(
        "/app/account", {"email": FLEET_EMAIL, "password": FLEET_PASSWORD}, headers=ENGLISH
    )

    assert "The fleet service did not answer. Nothing was saved" in response.text
    assert not FleetAccount.objects.exists()


def test_updating_the_password_replaces_the_stored_one(client, manager):
    client.force_login(manager)
    before = stored_password(manager.fleet_account)

    client.post("/app/account", {"email": FLEET_EMAIL, "password": FLEET_PASSWORD})

    assert stored_password(manager.fleet_account) != before
    assert FleetAccount.objects.get(user=manager).password() == FLEET_PASSWORD


def test_the_page_shows_the_linked_email_but_never_the_password(client, manager):
    client.force_login(manager)

    response = client.get("/app/account")

    assert FLEET_EMAIL in response.text
    assert FLEET_PASSWORD not in response.text
    assert stored_password(manager.fleet_account) not in response.text


def test_an_invalid_email_is_refused_before_any_call(client, newcomer, emulator):
    response = client.post("/app/account", {"email": "not-an-email", "password": "x"})

    assert response.status_code == 200
    assert emulator.calls("POST /key/generator") == 0
