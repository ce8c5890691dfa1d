"""An administrator's block sticks: a person blocked in the admin (or with `manage.py
access block`) stays out after their provider pushes `active: true` over SCIM (and a PUT
without `active`), and after a sign-in through the provider; only an administrator lifts
it. Before, the provider's next push turned the account back on and sign-in worked."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client

from alerts.models import AlertPause, PauseReason
from signin.models import AccessBlock, SsoOutcome
from tests.signin.conftest import USER_SCHEMA
from tests.signin.test_oidc import last_attempt, sso, user_of

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
