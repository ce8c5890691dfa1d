"""An administrator's block sticks: a person blocked in the admin (or with `manage.py
access block`) stays out after their provider pushes `active: true` over SCIM (and a PUT
without `active`), and after a sign-in through the provider; only an administrator lifts
it. Before, the provider's next push turned the account back on and sign-in worked.

Nor does a request in flight: a SCIM update or a sign-in that read the account before the
block committed, and writes after, leaves it blocked (the races are played in a chosen
order, tests/interleave.py)."""

from __future__ import annotations

import pytest
import requests
from allauth.socialaccount.signals import social_account_updated
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.db import connection
from django.db.models.signals import pre_save
from django.test import Client
from django.utils import timezone

from alerts.models import AlertPause, PauseReason
from signin.models import AccessBlock, SsoOutcome
from tests.admin.pages import form_data
from tests.conftest import SSO_PASSWORDS
from tests.idp import sign_in_at_provider
from tests.interleave import held_at, start
from tests.signin.conftest import USER_SCHEMA
from tests.signin.test_oidc import last_attempt, sso, user_of
from tests.signin.test_oidc import start as sign_in_start

pytestmark = pytest.mark.django_db


@pytest.fixture
def manager_at_the_provider(client, oidc_settings, acme):
    """The provider's manager, provisioned over SCIM with their subject at the test IdP,
    signed in once (their identity linked)."""
    oidc_settings.FLEET_ENVIRONMENT = "emulator"  # SCIM over plain http
    created = acme.user_create("manager@example.com", "sub-manager-0001")
    assert created.status_code == 201, created.data
    assert sso(client, "manager").status_code == 302
    user = user_of(client)
    assert user is not None
    return created.data["id"], user


def pushes_active(acme, scim_id: str) -> None:
    body = {"schemas": [USER_SCHEMA], "userName": "manager@example.com", "active": True}
    pushed = acme.call("PUT", f"Users/{scim_id}", body | {"externalId": "sub-manager-0001"})
    assert pushed.status_code == 200, pushed.data
    assert pushed.data["active"] is True  # what the provider says, answered as it said it
    bare = {key: value for key, value in body.items() if key != "active"}
    assert (
        acme.call("PUT", f"Users/{scim_id}", bare | {"externalId": "sub-manager-0001"}).status_code
        == 200
    )


def test_a_block_stays_after_the_provider_pushes_active_and_after_a_sign_in(
    client, admin_client, acme, manager_at_the_provider
):
    scim_id, manager = manager_at_the_provider

    admin_client.post("/admin/auth/user/", {"action": "block", "_selected_action": [manager.pk]})

    manager.refresh_from_db()
    assert not manager.is_active
    assert AccessBlock.objects.filter(user=manager).exists()
    assert AlertPause.objects.current().get(user=manager).reason == PauseReason.BLOCKED
    assert client.get("/").status_code == 302  # signed out at once

    pushes_active(acme, scim_id)
    manager.refresh_from_db()
    assert not manager.is_active

    assert sso(client, "manager").status_code == 403
    assert last_attempt().outcome == SsoOutcome.DEACTIVATED
    assert user_of(client) is None

    # The admin shows both: active as the provider says, and blocked.
    page = admin_client.get(
        f"/admin/auth/user/{manager.pk}/change/", headers={"Accept-Language": "en"}
    )
    assert "since " in page.content.decode()
    assert "can take them away, never give them" in page.content.decode()

    admin_client.post("/admin/auth/user/", {"action": "unblock", "_selected_action": [manager.pk]})
    manager.refresh_from_db()
    assert manager.is_active
    assert not AlertPause.objects.current().filter(user=manager).exists()
    assert sso(Client(), "manager").status_code == 302


def test_unblocked_the_account_is_as_active_as_the_provider_says(acme, manager_at_the_provider):
    scim_id, manager = manager_at_the_provider
    call_command("access", "block", "manager@example.com", "--reason", "left the company")
    body = {"schemas": [USER_SCHEMA], "userName": "manager@example.com", "active": False}
    acme.call("PUT", f"Users/{scim_id}", body | {"externalId": "sub-manager-0001"})

    call_command("access", "unblock", "MANAGER@example.com")

    manager.refresh_from_db()
    assert not manager.is_active  # the provider says inactive
    assert not AccessBlock.objects.exists()


def test_the_command_names_whom_it_cannot_find(db):
    User.objects.create_user("ana", "same@example.com")
    User.objects.create_user("bia", "same@example.com")
    with pytest.raises(CommandError, match="No portal user"):
        call_command("access", "block", "nobody@example.com")
    with pytest.raises(CommandError, match="Several portal users"):
        call_command("access", "block", "same@example.com")
    call_command("access", "block", "ana")
    assert AccessBlock.objects.get().user.username == "ana"


# --- Requests in flight when the block commits ----------------------------------------


def blocked_while_held(hold, thread) -> None:
    """Once `thread` is held (it read the account), block the manager and commit; then let
    it go on and wait for it to end."""
    hold.wait_held()
    call_command("access", "block", "manager@example.com")
    hold.release()
    thread.join()


def assert_still_blocked(manager) -> None:
    manager.refresh_from_db()
    assert AccessBlock.objects.filter(user=manager).exists()
    assert not manager.is_active


@pytest.fixture
def one_writer_at_a_time_skips():
    if connection.vendor == "sqlite":
        # SQLite takes its one writer's lock when a transaction begins (IMMEDIATE): a
        # request that reads and writes the account in one (a SCIM call, the admin's form)
        # and a block run one after the other there, never interleaved.
        pytest.skip("SQLite never interleaves two writing transactions")


@pytest.mark.django_db(transaction=True)
def test_a_scim_update_that_read_the_account_before_a_block_writes_only_what_it_changes(
    one_writer_at_a_time_skips, acme, manager_at_the_provider
):
    scim_id, manager = manager_at_the_provider
    rename = {"op": "replace", "path": "name.givenName", "value": "Marcão"}

    with held_at(pre_save, sender=User, thread="scim") as hold:
        scim, answered = start("scim", lambda: acme.patch(f"Users/{scim_id}", rename))
        blocked_while_held(hold, scim)

    assert answered[0].status_code == 200, answered[0].data
    assert_still_blocked(manager)
    assert manager.first_name == "Marcão"


@pytest.mark.django_db(transaction=True)
def test_a_scim_push_of_active_that_read_the_account_before_a_block_does_not_reactivate_it(
    one_writer_at_a_time_skips, acme, manager_at_the_provider
):
    scim_id, manager = manager_at_the_provider
    person = {
        "schemas": [USER_SCHEMA],
        "userName": "manager@example.com",
        "externalId": "sub-manager-0001",
    }
    assert acme.call("PUT", f"Users/{scim_id}", person | {"active": False}).status_code == 200

    with held_at(pre_save, sender=User, thread="scim") as hold:
        scim, answered = start(
            "scim", lambda: acme.call("PUT", f"Users/{scim_id}", person | {"active": True})
        )
        blocked_while_held(hold, scim)

    assert answered[0].status_code == 200, answered[0].data
    assert answered[0].data["active"] is True  # what the provider says, kept as its own
    assert_still_blocked(manager)


@pytest.mark.django_db(transaction=True)
def test_the_admin_saving_a_persons_name_as_read_before_a_block_leaves_them_blocked(
    one_writer_at_a_time_skips, admin_client
):
    manager = User.objects.create_user("manager", "manager@example.com", first_name="Marcos")
    page = admin_client.get(f"/admin/auth/user/{manager.pk}/change/")
    renamed = form_data(page, first_name="Marcão")
    joined = timezone.localtime(renamed.pop("date_joined"))  # two fields in the page
    renamed |= {"date_joined_0": f"{joined:%Y-%m-%d}", "date_joined_1": f"{joined:%H:%M:%S}"}

    with held_at(pre_save, sender=User, thread="admin") as hold:
        admin, answered = start(
            "admin", lambda: admin_client.post(f"/admin/auth/user/{manager.pk}/change/", renamed)
        )
        blocked_while_held(hold, admin)

    assert answered[0].status_code == 302, answered[0].context["adminform"].form.errors
    assert_still_blocked(manager)
    assert manager.first_name == "Marcão"


@pytest.mark.django_db(transaction=True)
def test_a_sign_in_that_read_the_account_before_a_block_is_refused(client, oidc_settings):
    sso(client, "manager")
    manager = user_of(client)
    client.post("/accounts/logout/")
    callback = sign_in_at_provider(sign_in_start(client), "manager", SSO_PASSWORDS["manager"])

    # allauth found the account by the person's subject: held there, before admission.
    with held_at(social_account_updated, thread="sign-in") as hold:
        signing_in, answered = start("sign-in", lambda: client.get(callback))
        blocked_while_held(hold, signing_in)

    assert answered[0].status_code == 403
    assert last_attempt().outcome == SsoOutcome.DEACTIVATED
    assert user_of(client) is None
    assert_still_blocked(manager)


def test_a_blocked_person_is_refused_at_sign_in_whatever_their_account_says(client, oidc_settings):
    sso(client, "manager")
    manager = user_of(client)
    client.post("/accounts/logout/")
    call_command("access", "block", "manager@example.com")
    User.objects.filter(pk=manager.pk).update(is_active=True)  # as a write from before left it

    refused = sso(client, "manager", browser=requests.Session())

    assert refused.status_code == 403
    assert last_attempt().outcome == SsoOutcome.DEACTIVATED
    assert user_of(client) is None
