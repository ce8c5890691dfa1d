"""The vehicle groups a provider's groups claim gives, set again at every sign-in
(`fleet.models.DirectoryGroup`, applied by `signin.adapters`): a real OpenID provider on
loopback (tests/idp.py), the portal through Django's test client."""

from __future__ import annotations

import pytest
from allauth.socialaccount.models import SocialAccount
from django.contrib.auth.models import User

from fleet.models import DirectoryGroup, VehicleGroup, VehicleGroupMember
from fleet.services.scopes import scope_of
from signin.access import AccessPolicy, access_decide
from signin.models import SsoOutcome
from tests.conftest import oidc_app
from tests.signin.test_oidc import last_attempt, sso, user_of

pytestmark = [pytest.mark.django_db, pytest.mark.scoped]


@pytest.fixture
def groups(db):
    """São Paulo and Rio, given by Acme's `fleet-sp` and `fleet-rio`; the other provider
    maps `fleet-sp` to Rio."""
    sao_paulo = VehicleGroup.objects.create(name="São Paulo")
    rio = VehicleGroup.objects.create(name="Rio")
    DirectoryGroup.objects.create(provider="acme", value="fleet-sp", group=sao_paulo)
    DirectoryGroup.objects.create(provider="acme", value="fleet-rio", group=rio)
    DirectoryGroup.objects.create(provider="group", value="fleet-sp", group=rio)
    return sao_paulo, rio


def memberships(user):
    """(group, given by) of each of `user`'s vehicle groups."""
    return set(VehicleGroupMember.objects.filter(user=user).values_list("group__name", "provider"))


def group_names(user):
    """The groups `user` sees through, read afresh (a user object keeps its scope)."""
    return scope_of(User.objects.get(pk=user.pk)).group_names


def signs_in(client, username, *, provider="acme"):
    """Sign in through `provider` as `username`; the portal user, signed out again."""
    assert sso(client, username, provider=provider).status_code == 302
    user = user_of(client)
    client.post("/accounts/logout/")
    return user


def test_the_groups_claims_values_come_with_the_decision_as_strings():
    policy = AccessPolicy.from_settings({"allowed_domains": ["example.com"]})
    claims = {"email": "ana@example.com", "email_verified": True}

    listed = access_decide(policy=policy, claims=claims | {"groups": ["fleet-sp", 42, " x "]})
    one_string = access_decide(policy=policy, claims=claims | {"groups": "fleet-sp, fleet-rio"})
    none = access_decide(policy=policy, claims=claims)

    assert listed.groups == {"fleet-sp", "42", "x"}
    assert one_string.groups == {"fleet-sp", "fleet-rio"}
    assert none.groups == frozenset()


def test_a_first_sign_in_puts_the_new_user_in_the_groups_their_provider_groups_map_to(
    client, oidc_settings, identity_provider, groups
):
    identity_provider.update_user("manager", groups=["fleet-managers", "fleet-sp"])

    user = signs_in(client, "manager")

    assert last_attempt().outcome == SsoOutcome.PROVISIONED
    # Acme's mapping, not the other provider's of the same value.
    assert memberships(user) == {("São Paulo", "acme")}
    assert group_names(user) == ("São Paulo",)


def test_a_sign_in_whose_claim_lost_the_value_takes_the_group_away(
    client, oidc_settings, identity_provider, groups
):
    identity_provider.update_user("manager", groups=["fleet-managers", "fleet-sp"])
    user = signs_in(client, "manager")
    assert group_names(user) == ("São Paulo",)

    identity_provider.update_user("manager", groups=["fleet-managers"])
    assert signs_in(client, "manager") == user

    assert memberships(user) == set()
    assert group_names(user) == ()
    assert last_attempt().outcome == SsoOutcome.SIGNED_IN


def test_a_value_added_at_the_provider_gives_its_group_and_groups_given_by_hand_stay(
    client, oidc_settings, identity_provider, groups
):
    sao_paulo, _rio = groups
    identity_provider.update_user("manager", groups=["fleet-managers", "fleet-sp"])
    user = signs_in(client, "manager")
    VehicleGroupMember.objects.create(user=user, group=sao_paulo, provider="")  # by hand too

    identity_provider.update_user("manager", groups=["fleet-managers", "fleet-rio"])
    signs_in(client, "manager")

    assert memberships(user) == {("São Paulo", ""), ("Rio", "acme")}
    assert group_names(user) == ("Rio", "São Paulo")


def test_an_existing_user_linked_by_email_gets_the_groups_at_that_sign_in(
    client, oidc_settings, identity_provider, groups, manager
):
    manager.email = "manager@example.com"
    manager.save()
    identity_provider.update_user("manager", groups=["fleet-managers", "fleet-sp"])

    assert signs_in(client, "manager") == manager

    assert last_attempt().outcome == SsoOutcome.LINKED
    assert memberships(manager) == {("São Paulo", "acme")}


def test_a_provider_added_in_the_admin_gives_the_groups_mapped_under_its_own_id(
    client, oidc_settings, identity_provider, groups, group_provider
):
    identity_provider.update_user("manager", groups=["fleet-managers", "fleet-sp"])

    user = signs_in(client, "manager", provider="group")

    # The id the identity is stored under is the one the mappings name.
    assert SocialAccount.objects.get(user=user).provider == "group"
    assert memberships(user) == {("Rio", "group")}


def test_the_claim_read_is_the_one_the_provider_names_its_values_as_strings(
    client, oidc_settings, identity_provider, groups
):
    _sao_paulo, rio = groups
    DirectoryGroup.objects.create(provider="acme", value="42", group=rio)
    app = oidc_app(identity_provider, groups_claim="roles")
    oidc_settings.SOCIALACCOUNT_PROVIDERS["openid_connect"]["APPS"] = [app]
    # `groups` still says fleet-sp; `roles` (in the ID token only) is the claim read.
    identity_provider.update_user("manager", groups=["fleet-managers", "fleet-sp"])
    identity_provider.next_id_token({"roles": [42]})

    user = signs_in(client, "manager")

    assert memberships(user) == {("Rio", "acme")}


def test_a_refused_sign_in_takes_away_the_groups_that_provider_gave(
    client, oidc_settings, identity_provider, groups
):
    """The provider no longer admits the person (here: their e-mail no longer verified), so
    the portal refuses them: that provider vouches no more for their groups there, and
    those given by hand stay."""
    _sao_paulo, rio = groups
    identity_provider.update_user("manager", groups=["fleet-managers", "fleet-sp"])
    user = signs_in(client, "manager")
    VehicleGroupMember.objects.create(user=user, group=rio, provider="")

    identity_provider.update_user("manager", groups=["fleet-sp"], email_verified=False)
    sso(client, "manager")

    assert last_attempt().outcome == SsoOutcome.UNVERIFIED_EMAIL
    assert memberships(user) == {("Rio", "")}
