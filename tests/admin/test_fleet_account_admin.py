from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from fleet.models import AccessKeyMint, FleetAccount
from portal.lib import encryption
from tests.conftest import stored_password

pytestmark = pytest.mark.django_db

# The emulator's web-app user (emulator/README.md).
FLEET_EMAIL = "manager@example.com"
FLEET_PASSWORD = "demo-password"
# Not the emulator's password, and unlike any word of an admin page.
OTHER_PASSWORD = "Fleet-pw-51c3-in-clear"
# The emulator mints uuid4 accessKeys.
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)

ADD_URL = reverse("admin:fleet_fleetaccount_add")
CHANGELIST_URL = reverse("admin:fleet_fleetaccount_changelist")


def change_url(account: FleetAccount) -> str:
    return reverse("admin:fleet_fleetaccount_change", args=[account.pk])


def check_url(account: FleetAccount) -> str:
    return reverse("admin:fleet_fleetaccount_check", args=[account.pk])


def shown_messages(response) -> list[tuple[str, str]]:
    return [(message.tags, str(message)) for message in response.context["messages"]]


def fleet_login_checked(admin: Client, *ids: int) -> Any:
    """The admin's answer to the "test the fleet login" action on the accounts `ids`."""
    return admin.post(
        CHANGELIST_URL, {"action": "check_fleet_login", "_selected_action": ids}, follow=True
    )


@pytest.fixture
def admin(admin_client: Client) -> Client:
    """The superuser's browser, asking for English (the portal defaults to Portuguese)."""
    admin_client.defaults["HTTP_ACCEPT_LANGUAGE"] = "en"
    return admin_client


@pytest.fixture
def manager(django_user_model):
    return django_user_model.objects.create_user("marcos", password="pw-123456")


@pytest.fixture
def make_account(django_user_model):
    def make(username: str, *, email: str = FLEET_EMAIL, password: str) -> FleetAccount:
        user = django_user_model.objects.create_user(username, password="pw-123456")
        account = FleetAccount(user=user, email=email)
        account.set_password(password)
        account.save()
        return account

    return make


def test_adding_an_account_stores_the_password_encrypted(admin, manager):
    response = admin.post(
        ADD_URL, {"user": manager.pk, "email": FLEET_EMAIL, "password": OTHER_PASSWORD}
    )

    assert response.status_code == 302
    account = FleetAccount.objects.get(user=manager)
    stored = stored_password(account)
    assert stored != OTHER_PASSWORD
    assert OTHER_PASSWORD not in stored
    assert encryption.decrypt(stored) == OTHER_PASSWORD
    assert account.email == FLEET_EMAIL


def test_password_is_never_rendered_in_the_change_form(admin, manager):
    admin.post(ADD_URL, {"user": manager.pk, "email": FLEET_EMAIL, "password": OTHER_PASSWORD})
    account = FleetAccount.objects.get(user=manager)

    response = admin.get(change_url(account))

    assert response.status_code == 200
    assert OTHER_PASSWORD not in response.text
    assert stored_password(account) not in response.text
    assert "password_encrypted" not in response.text
    password_input = re.search(r"<input[^>]*name=\"password\"[^>]*>", response.text)
    assert password_input is not None
    assert 'type="password"' in password_input.group()
    assert "value=" not in password_input.group()
    assert "Leave empty to keep the current password." in response.text


def test_password_is_not_sent_back_when_the_add_form_has_errors(admin, manager):
    response = admin.post(
        ADD_URL, {"user": manager.pk, "email": "not-an-e-mail", "password": OTHER_PASSWORD}
    )

    assert response.status_code == 200
    assert response.context["adminform"].form.errors["email"]
    assert OTHER_PASSWORD not in response.text
    assert not FleetAccount.objects.exists()


def test_password_is_required_when_adding(admin, manager):
    response = admin.post(ADD_URL, {"user": manager.pk, "email": FLEET_EMAIL, "password": ""})

    assert response.status_code == 200
    assert "password" in response.context["adminform"].form.errors
    assert not FleetAccount.objects.exists()


def test_editing_with_an_empty_password_keeps_the_current_one(admin, make_account):
    account = make_account("marcos", password=OTHER_PASSWORD)
    before = stored_password(account)

    response = admin.post(
        change_url(account),
        {"user": account.user.pk, "email": "driver@example.com", "password": ""},
    )

    assert response.status_code == 302
    account.refresh_from_db()
    assert account.email == "driver@example.com"
    assert stored_password(account) == before
    assert account.password() == OTHER_PASSWORD


def test_editing_with_a_new_password_replaces_it(admin, make_account):
    account = make_account("marcos", password=OTHER_PASSWORD)
    before = stored_password(account)

    response = admin.post(
        change_url(account),
        {"user": account.user.pk, "email": FLEET_EMAIL, "password": "Brand-new-fleet-pw-9"},
    )

    assert response.status_code == 302
    assert stored_password(account) != before
    account.refresh_from_db()
    assert account.password() == "Brand-new-fleet-pw-9"


def test_last_login_results_cannot_be_edited(admin, make_account):
    account = make_account("marcos", password=OTHER_PASSWORD)

    response = admin.post(
        change_url(account),
        {
            "user": account.user.pk,
            "email": FLEET_EMAIL,
            "password": "",
            "last_success_at_0": "2030-01-01",
            "last_success_at_1": "10:00:00",
            "last_failure_outcome": "minted",
        },
    )

    assert response.status_code == 302
    account.refresh_from_db()
    assert account.last_success_at is None
    assert account.last_failure_outcome == ""


def test_accounts_are_listed_and_searched_by_username_and_email(admin, make_account):
    make_account("marcos", email=FLEET_EMAIL, password=OTHER_PASSWORD)
    make_account("paula", email="driver@example.com", password=OTHER_PASSWORD)

    by_email = admin.get(CHANGELIST_URL, {"q": "driver@"})
    by_username = admin.get(CHANGELIST_URL, {"q": "marcos"})

    assert [str(a) for a in by_email.context["cl"].result_list] == ["paula → driver@example.com"]
    assert [str(a) for a in by_username.context["cl"].result_list] == [
        "marcos → manager@example.com"
    ]
    assert OTHER_PASSWORD not in by_email.text


def test_testing_a_right_login_reports_success_and_records_it(
    admin, admin_user, fleet_settings, emulator, make_account
):
    account = make_account("marcos", password=FLEET_PASSWORD)

    response = fleet_login_checked(admin, account.pk)

    assert response.status_code == 200
    assert shown_messages(response) == [
        ("success", "marcos → manager@example.com: the fleet login works (key minted).")
    ]
    assert emulator.calls("POST /key/generator") == 1
    account.refresh_from_db()
    assert account.last_success_at is not None
    assert account.last_failure_at is None
    mint = AccessKeyMint.objects.get()
    assert (mint.outcome, mint.purpose, mint.user, mint.fleet_email) == (
        "minted",
        "admin_test",
        admin_user,
        FLEET_EMAIL,
    )
    assert FLEET_PASSWORD not in response.text
    assert not UUID.search(response.text)


def test_testing_a_wrong_password_reports_the_outcome_and_records_the_failure(
    admin, fleet_settings, emulator, make_account
):
    account = make_account("marcos", password="not-the-fleet-password")

    response = fleet_login_checked(admin, account.pk)

    [(level, text)] = shown_messages(response)
    assert level == "error"
    assert "the fleet login test failed (fleet login rejected)" in text
    assert "Set the account's current fleet e-mail and password." in text
    account.refresh_from_db()
    assert account.last_failure_at is not None
    assert account.last_failure_outcome == "login_rejected"
    assert account.last_success_at is None
    assert AccessKeyMint.objects.get().outcome == "login_rejected"
    assert "not-the-fleet-password" not in response.text


def test_the_action_reports_each_selected_account(admin, fleet_settings, emulator, make_account):
    right = make_account("marcos", password=FLEET_PASSWORD)
    wrong = make_account("paula", email="driver@example.com", password="not-the-password")

    response = fleet_login_checked(admin, right.pk, wrong.pk)

    messages = dict((text.split(":")[0], level) for level, text in shown_messages(response))
    assert messages == {
        "marcos → manager@example.com": "success",
        "paula → driver@example.com": "error",
    }
    assert emulator.calls("POST /key/generator") == 2
    for _, text in shown_messages(response):
        assert not UUID.search(text)
        assert FLEET_PASSWORD not in text


def test_an_unreachable_fleet_service_is_reported_with_what_to_do(
    admin, fleet_settings, emulator, make_account
):
    account = make_account("marcos", password=FLEET_PASSWORD)
    emulator.fault("/key/generator", drop=True)

    response = fleet_login_checked(admin, account.pk)

    [(level, text)] = shown_messages(response)
    assert level == "error"
    assert "(fleet service unavailable)" in text
    assert "try again later" in text
    account.refresh_from_db()
    assert account.last_failure_outcome == "unavailable"


def test_the_change_page_offers_a_test_button_that_posts(admin, make_account):
    account = make_account("marcos", password=OTHER_PASSWORD)

    response = admin.get(change_url(account))

    form = re.search(
        rf'<form method="post" action="{re.escape(check_url(account))}">(.*?)</form>',
        response.text,
        re.DOTALL,
    )
    assert form is not None
    assert 'name="csrfmiddlewaretoken"' in form.group(1)
    assert "Test fleet login" in form.group(1)


def test_the_test_button_checks_the_login_and_returns_to_the_change_page(
    admin, fleet_settings, emulator, make_account
):
    account = make_account("marcos", password=FLEET_PASSWORD)

    response = admin.post(check_url(account))

    assert response.status_code == 302
    assert response["Location"] == change_url(account)
    page = admin.get(response["Location"])
    assert shown_messages(page) == [
        ("success", "marcos → manager@example.com: the fleet login works (key minted).")
    ]
    assert emulator.calls("POST /key/generator") == 1
    assert FLEET_PASSWORD not in page.text
    assert not UUID.search(page.text)


def test_the_test_button_refuses_get(admin, fleet_settings, emulator, make_account):
    account = make_account("marcos", password=FLEET_PASSWORD)

    response = admin.get(check_url(account))

    assert response.status_code == 405
    assert emulator.calls("POST /key/generator") == 0


def test_the_test_button_needs_the_csrf_token(admin_user, fleet_settings, emulator, make_account):
    account = make_account("marcos", password=FLEET_PASSWORD)
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(admin_user)

    response = browser.post(check_url(account))

    assert response.status_code == 403
    assert emulator.calls("POST /key/generator") == 0


def test_the_test_button_is_for_staff_only(client, manager, fleet_settings, emulator, make_account):
    account = make_account("paula", password=FLEET_PASSWORD)
    client.force_login(manager)

    response = client.post(check_url(account))

    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))
    assert emulator.calls("POST /key/generator") == 0


def test_testing_an_unknown_account_is_not_found(admin):
    response = admin.post(reverse("admin:fleet_fleetaccount_check", args=[987654]))

    assert response.status_code == 404
