"""Which portal user a first sign-in through a provider becomes when its verified e-mail
is an existing user's: linked by that e-mail only where the provider vouches for it,
otherwise by an administrator in the admin. A real OpenID provider on loopback
(tests/idp.py) serves both of the portal's providers; the portal through Django's
test client."""

from __future__ import annotations

import re

import pytest
from allauth.socialaccount.models import SocialAccount
from django.contrib.auth.models import User
from django.test import Client

from signin.models import SsoOutcome
from signin.scim.tokens import scim_token_mint
from tests.conftest import oidc_app
from tests.signin.conftest import Scim
from tests.signin.test_oidc import last_attempt, sso, user_of

pytestmark = pytest.mark.django_db


def admitting_by_groups(group_provider, **settings_):
    """The second provider lets in the members of its managers' group, whatever their domain."""
    group_provider.settings = group_provider.settings | {"manager_groups": ["fleet-managers"]}
    group_provider.settings |= settings_
    group_provider.save()
    return group_provider


def identities(user):
    return set(SocialAccount.objects.filter(user=user).values_list("provider", "uid"))


def administrator_must_link(answer, *, provider, subject):
    """The refusal page, saying what an administrator types in the admin to link."""
    assert answer.status_code == 403
    instructions = re.search(
        r'data-testid="link-by-admin">(.*?)</p>', answer.content.decode(), re.DOTALL
    ).group(1)
    assert f"<code>{provider}</code>" in instructions
    assert f"<code>{subject}</code>" in instructions


@pytest.fixture
def carol(client, oidc_settings, identity_provider):
    """Carol, who signs in through Acme: the provider of her domain, a.example."""
    app = oidc_app(identity_provider, allowed_domains=["a.example"])
    oidc_settings.SOCIALACCOUNT_PROVIDERS["openid_connect"]["APPS"] = [app]
    assert sso(client, "carol").status_code == 302
    user = user_of(client)
    client.post("/accounts/logout/")
    assert identities(user) == {("acme", "sub-carol-0001")}
    return user


def test_a_provider_admitting_by_groups_cannot_take_over_an_account_with_its_address(
    client, carol, group_provider
):
    admitting_by_groups(group_provider)  # its own domain is example.com

    # Mallory, a member of the group there, shows carol's address, verified.
    answer = sso(client, "mallory", provider="group")

    administrator_must_link(answer, provider="group", subject="mallory")
    assert user_of(client) is None
    assert identities(carol) == {("acme", "sub-carol-0001")}
    assert User.objects.count() == 1
    attempt = last_attempt()
    assert attempt.outcome == SsoOutcome.LINK_BY_ADMINISTRATOR
    assert (attempt.provider, attempt.subject, attempt.email) == (
        "group",
        "mallory",
        "carol@a.example",
    )
    assert attempt.user is None  # carol did nothing: her account is not the one refused
    assert "carol" in attempt.detail


def test_an_account_that_signs_in_through_another_provider_is_not_linked_by_email(
    client, carol, group_provider
):
    # Even where a.example is this provider's domain too.
    admitting_by_groups(group_provider, allowed_domains=["a.example"])

    answer = sso(client, "mallory", provider="group")

    administrator_must_link(answer, provider="group", subject="mallory")
    assert identities(carol) == {("acme", "sub-carol-0001")}
    assert "signs in through acme" in last_attempt().detail


def test_an_address_outside_the_providers_domains_is_not_linked_by_email(
    client, oidc_settings, group_provider
):
    carol = User.objects.create_user("carol", "carol@a.example")  # made in the admin
    admitting_by_groups(group_provider)  # example.com only

    answer = sso(client, "carol", provider="group")

    administrator_must_link(answer, provider="group", subject="sub-carol-0001")
    assert not identities(carol)
    assert "outside the allowed domains of group" in last_attempt().detail


def test_an_address_of_the_providers_own_domain_links_an_account_with_no_other_identity(
    client, oidc_settings, group_provider
):
    carol = User.objects.create_user("carol", "carol@a.example")
    admitting_by_groups(group_provider, allowed_domains=["a.example"])

    assert sso(client, "carol", provider="group").status_code == 302

    assert user_of(client) == carol
    assert identities(carol) == {("group", "sub-carol-0001")}
    assert last_attempt().outcome == SsoOutcome.LINKED


def test_an_administrator_links_the_identity_in_the_admin_and_the_next_sign_in_lands_there(
    client, oidc_settings, group_provider, admin_client
):
    carol = User.objects.create_user("carol", "carol@a.example")
    admitting_by_groups(group_provider)
    refused = sso(client, "carol", provider="group")
    administrator_must_link(refused, provider="group", subject="sub-carol-0001")

    # What the refusal page tells the person to ask for, done in the admin.
    form = admin_client.get("/admin/socialaccount/socialaccount/add/").content.decode()
    assert "Grupo Holding (group)" in form  # the provider chosen, not typed
    added = admin_client.post(
        "/admin/socialaccount/socialaccount/add/",
        {"user": carol.pk, "provider": "group", "uid": "sub-carol-0001"},
    )
    assert added.status_code == 302, re.findall(r"errorlist.*", added.content.decode())

    assert sso(client, "carol", provider="group").status_code == 302
    assert user_of(client) == carol
    assert last_attempt().outcome == SsoOutcome.SIGNED_IN


@pytest.mark.parametrize("kind", ["superuser", "staff"])
def test_a_verified_email_never_links_an_administrator(
    client, oidc_settings, identity_provider, admin_user, kind
):
    # A local break-glass administrator; a manager at the provider shows their address.
    if kind == "staff":
        admin_user.is_superuser = False
        admin_user.save()
    identity_provider.update_user("manager", email=admin_user.email)

    answer = sso(client, "manager")

    administrator_must_link(answer, provider="acme", subject="sub-manager-0001")
    assert user_of(client) is None
    assert not identities(admin_user)
    admin_user.refresh_from_db()
    assert admin_user.is_staff
    assert admin_user.is_superuser is (kind == "superuser")
    attempt = last_attempt()
    assert attempt.outcome == SsoOutcome.LINK_BY_ADMINISTRATOR
    assert "is an administrator" in attempt.detail
    # Their own door still opens.
    client.post("/accounts/login/", {"username": "admin", "password": "password"})
    assert user_of(client) == admin_user


@pytest.fixture
def two_providers(oidc_settings, identity_provider, group_provider):
    """Acme vouches for a.example; the group provider lets its members in, whatever their
    address."""
    acme = oidc_app(identity_provider, allowed_domains=["a.example"])
    oidc_settings.SOCIALACCOUNT_PROVIDERS["openid_connect"]["APPS"] = [acme]
    return admitting_by_groups(group_provider)


def test_a_provider_admitting_by_groups_gives_no_account_the_address_of_another_providers_domain(
    client, two_providers
):
    # Mallory, a member of the group, shows carol's address, verified.
    assert sso(client, "mallory", provider="group").status_code == 302
    mallory = user_of(client)
    client.post("/accounts/logout/")

    assert mallory.email == ""  # carol's mailbox gets none of Mallory's fines
    # Carol, when she comes, is not taken for Mallory's account.
    assert sso(client, "carol").status_code == 302
    carol = user_of(client)
    assert carol != mallory
    assert carol.email == "carol@a.example"
    assert identities(carol) == {("acme", "sub-carol-0001")}


def test_a_provider_admitting_by_groups_cannot_move_its_member_to_another_providers_address(
    client, identity_provider, two_providers
):
    assert sso(client, "partner", provider="group").status_code == 302
    partner = user_of(client)
    client.post("/accounts/logout/")
    assert partner.email == "partner@partner.test"  # a domain nobody else lets in

    identity_provider.update_user("partner", email="carol@a.example")
    assert sso(client, "partner", provider="group").status_code == 302

    partner.refresh_from_db()
    assert partner.email == "partner@partner.test"


def test_a_user_another_provider_provisions_without_external_id_is_not_linked_by_email(
    client, oidc_settings, identity_provider, group_provider
):
    """Provisioned over SCIM by Acme with no externalId, Carol has no identity yet: she is
    still Acme's, not a local account that Grupo's sign-in takes (and her vehicle
    groups with it) because it shows her address, verified, in a domain both allow."""
    app = oidc_app(identity_provider, allowed_domains=["a.example"])
    oidc_settings.SOCIALACCOUNT_PROVIDERS["openid_connect"]["APPS"] = [app]
    oidc_settings.FLEET_ENVIRONMENT = "emulator"  # SCIM over plain http in the test
    acme = Scim(Client(), scim_token_mint(provider="acme", created_by="test"))
    created = acme.user_create("carol", emails=[{"value": "carol@a.example", "primary": True}])
    assert created.status_code == 201, created.data
    # Her account's address, as one pushed before pushes waited for a sign-in had it
    # (migration signin 0008): a push alone now leaves the account without one.
    carol = User.objects.get(scim_identities__user_name="carol")
    assert carol.email == ""
    User.objects.filter(pk=carol.pk).update(email="carol@a.example")
    assert not identities(carol)
    admitting_by_groups(group_provider, allowed_domains=["a.example"])

    answer = sso(client, "carol", provider="group")

    administrator_must_link(answer, provider="group", subject="sub-carol-0001")
    assert user_of(client) is None
    assert not identities(carol)
    assert "is provisioned by acme" in last_attempt().detail
