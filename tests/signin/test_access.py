"""Who a provider's answer lets in, and as what (signin.access)."""

from __future__ import annotations

import pytest

from signin.access import AccessPolicy, access_decide
from signin.checks import providers_let_someone_in
from signin.models import Role, SsoOutcome

DOMAIN_ONLY = AccessPolicy.from_settings(
    {"allowed_domains": ["Example.com"], "admin_groups": ["fleet-admins"]}
)
GROUPS = AccessPolicy.from_settings(
    {
        "allowed_domains": "example.com",
        "groups_claim": "roles",
        "manager_groups": "Fleet.Manager, Fleet.Viewer",
        "admin_groups": ["Fleet.Admin"],
    }
)


def claims(email="ana@example.com", verified=True, **more):
    return {"sub": "s-1", "email": email, "email_verified": verified, **more}


@pytest.mark.parametrize(
    ("policy", "given", "role", "refusal"),
    [
        (DOMAIN_ONLY, claims(), Role.MANAGER, None),
        (DOMAIN_ONLY, claims(email="Ana@EXAMPLE.com"), Role.MANAGER, None),
        (DOMAIN_ONLY, claims(verified="true"), Role.MANAGER, None),
        (DOMAIN_ONLY, claims(groups=["fleet-admins"]), Role.ADMINISTRATOR, None),
        (DOMAIN_ONLY, claims(verified=False), None, SsoOutcome.UNVERIFIED_EMAIL),
        (DOMAIN_ONLY, claims(verified="false"), None, SsoOutcome.UNVERIFIED_EMAIL),
        (
            DOMAIN_ONLY,
            {"sub": "s-1", "email": "ana@example.com"},
            None,
            SsoOutcome.UNVERIFIED_EMAIL,
        ),
        (DOMAIN_ONLY, claims(email="ana@sub.example.com"), None, SsoOutcome.DOMAIN_NOT_ALLOWED),
        (
            DOMAIN_ONLY,
            claims(email="ana@example.com.evil.test"),
            None,
            SsoOutcome.DOMAIN_NOT_ALLOWED,
        ),
        (DOMAIN_ONLY, {"sub": "s-1"}, None, SsoOutcome.UNVERIFIED_EMAIL),
        # The group decides when the provider names managers' groups, whatever the domain.
        (GROUPS, claims(roles=["Fleet.Viewer"]), Role.MANAGER, None),
        (GROUPS, claims(email="x@partner.test", roles=["Fleet.Manager"]), Role.MANAGER, None),
        (GROUPS, claims(verified=False, roles="Fleet.Admin"), Role.ADMINISTRATOR, None),
        (GROUPS, claims(), None, SsoOutcome.NO_ROLE),
        (GROUPS, claims(roles=["fleet.manager"]), None, SsoOutcome.NO_ROLE),
        (GROUPS, claims(groups=["Fleet.Admin"]), None, SsoOutcome.NO_ROLE),  # another claim
    ],
)
def test_each_answer_gets_its_role_or_its_reason(policy, given, role, refusal):
    decision = access_decide(policy=policy, claims=given)

    assert (decision.role, decision.refusal) == (role, refusal)


def test_only_a_verified_email_is_one_the_portal_may_trust():
    assert access_decide(policy=GROUPS, claims=claims(roles=["Fleet.Admin"])).verified_email == (
        "ana@example.com"
    )
    unverified = claims(verified=False, roles=["Fleet.Admin"])
    assert access_decide(policy=GROUPS, claims=unverified).verified_email == ""


def test_a_provider_with_neither_domains_nor_groups_lets_nobody_in():
    nobody = AccessPolicy.from_settings({})

    assert not nobody.lets_anyone_in
    assert access_decide(policy=nobody, claims=claims()).refusal is SsoOutcome.DOMAIN_NOT_ALLOWED
    assert DOMAIN_ONLY.lets_anyone_in


def test_a_provider_from_the_environment_that_lets_nobody_in_is_a_warning(settings):
    def app(**policy):
        return {"name": "Acme SSO", "settings": {"server_url": "https://x", **policy}}

    settings.SOCIALACCOUNT_PROVIDERS = {"openid_connect": {"APPS": [app()]}}
    assert [message.id for message in providers_let_someone_in()] == ["signin.W001"]
    settings.SOCIALACCOUNT_PROVIDERS = {
        "openid_connect": {"APPS": [app(allowed_domains=["example.com"])]}
    }
    assert providers_let_someone_in() == []
