"""SCIM groups give roles as the sign-in's groups claim does, at once: a provider's
administrators' groups make an administrator, its managers' groups a fleet manager, and a
person whose pushed groups no longer give access is signed out with their alerts paused.
A provider that pushes no groups leaves the role to the sign-in."""

from __future__ import annotations

import pytest
from allauth.socialaccount.models import SocialAccount, SocialApp
from django.contrib.auth.models import User
from django.test import Client

from alerts.models import AlertPause, PauseReason
from signin.access import AccessPolicy, role_of_groups
from signin.models import Role
from signin.scim.tokens import scim_token_mint
from tests.signin.conftest import Scim
from tests.signin.test_directory_groups import signs_in

pytestmark = pytest.mark.django_db


def signed_in_as(username: str) -> Client:
    browser = Client()
    browser.force_login(User.objects.get(username=username))
    return browser


def roles(username: str) -> tuple[bool, bool, bool]:
    user = User.objects.get(username=username)
    return user.is_active, user.is_staff, user.is_superuser


@pytest.mark.parametrize(
    ("groups", "role"),
    [
        ({"fleet-admins", "fleet-managers"}, Role.ADMINISTRATOR),
        ({"fleet-managers", "fleet-sp"}, Role.MANAGER),
        ({"fleet-sp"}, None),
        (set(), None),
    ],
)
def test_groups_decide_the_role_as_at_sign_in(groups, role):
    policy = AccessPolicy.from_settings(
        {"manager_groups": ["fleet-managers"], "admin_groups": ["fleet-admins"]}
    )
    assert role_of_groups(policy=policy, groups=groups) is role


def test_where_the_domain_decides_groups_only_make_administrators():
    policy = AccessPolicy.from_settings(
        {"allowed_domains": ["example.com"], "admin_groups": ["fleet-admins"]}
    )
    assert role_of_groups(policy=policy, groups={"fleet-admins"}) is Role.ADMINISTRATOR
    assert role_of_groups(policy=policy, groups={"fleet-sp"}) is Role.MANAGER


def test_a_push_into_the_administrators_group_makes_nobody_an_administrator(acme):
    """A SCIM token (leaked, say) puts a person in the administrators' group: not staff;
    taken out of it, an administrator is one no more, at once."""
    ana = acme.user_create("ana@example.com", "00u-ana").data["id"]
    admins = acme.group_create("fleet-admins").data["id"]
    browser = signed_in_as("ana@example.com")
    assert browser.get("/admin/").status_code == 302

    added = acme.patch(
        f"Groups/{admins}", {"op": "add", "path": "members", "value": [{"value": ana}]}
    )
    assert added.status_code == 200
    assert roles("ana@example.com") == (True, False, False)
    assert browser.get("/admin/").status_code == 302

    User.objects.filter(username="ana@example.com").update(is_staff=True, is_superuser=True)
    acme.patch(f"Groups/{admins}", {"op": "remove", "path": f'members[value eq "{ana}"]'})
    assert roles("ana@example.com") == (True, False, False)
    assert browser.get("/admin/").status_code == 302
    assert browser.get("/account/alerts/").status_code == 200  # a manager still: their domain


@pytest.fixture
def by_groups(providers):
    """Grupo admits by groups only: `fleet-managers` makes a manager."""
    SocialApp.objects.filter(provider_id="group").update(
        settings={
            "server_url": "https://idp.grupo.example",
            "manager_groups": ["fleet-managers"],
            "admin_groups": ["fleet-admins"],
        }
    )
    return Scim(Client(), scim_token_mint(provider="group", created_by="test"))


def test_leaving_every_group_that_gives_access_signs_out_and_pauses_alerts(by_groups):
    bruno = by_groups.user_create("bruno", "00u-bruno").data["id"]
    managers = by_groups.group_create("fleet-managers", bruno).data["id"]
    by_groups.group_create("fleet-sp", bruno)
    browser = signed_in_as("bruno")
    assert browser.get("/account/alerts/").status_code == 200
    assert not AlertPause.objects.exists()

    left = by_groups.patch(
        f"Groups/{managers}", {"op": "remove", "path": f'members[value eq "{bruno}"]'}
    )

    assert left.status_code == 200
    after = browser.get("/account/alerts/")
    assert after.status_code == 302
    assert after["Location"].startswith("/accounts/login/")
    pause = AlertPause.objects.get(user__username="bruno")
    assert pause.reason == PauseReason.DEPROVISIONED
    assert pause.resumed_at is None
    assert "group" in pause.detail
    # Not deactivated: the provider still sees the person active, and records stay.
    assert roles("bruno") == (True, False, False)
    assert by_groups.get(f"Users/{bruno}").data["active"] is True


def test_a_provider_that_pushes_no_groups_leaves_the_role_to_the_sign_in(by_groups):
    by_groups.user_create("carla", "00u-carla")
    User.objects.filter(username="carla").update(is_staff=True, is_superuser=True)
    carla = by_groups.get("Users", filter='userName eq "carla"').data["Resources"][0]
    updated = by_groups.call(
        "PUT", f"Users/{carla['id']}", carla | {"name": {"givenName": "Carla"}}
    )
    assert updated.status_code == 200
    assert roles("carla") == (True, True, True)


def test_an_administrator_only_when_their_own_sign_in_says_so(
    client, oidc_settings, identity_provider
):
    """With a real SCIM token, the provider's administrators' group pushed makes nobody
    staff, nor does the next sign-in (tests/idp.py) whose groups claim lacks it; the
    sign-in whose own claim has it does. Before, the push alone made a superuser."""
    identity_provider.update_user("manager", groups=["fleet-managers"])
    user = signs_in(client, "manager")
    assert (user.is_staff, user.is_superuser) == (False, False)
    subject = SocialAccount.objects.get(user=user, provider="acme").uid
    scim = Scim(Client(), scim_token_mint(provider="acme", created_by="test"))
    created = scim.user_create("manager@example.com", subject).data["id"]
    scim.group_create("fleet-admins", created)
    assert roles(user.username) == (True, False, False)

    assert signs_in(client, "manager") == user
    assert roles(user.username) == (True, False, False)

    identity_provider.update_user("manager", groups=["fleet-managers", "fleet-admins"])
    assert signs_in(client, "manager") == user
    assert roles(user.username) == (True, True, True)
