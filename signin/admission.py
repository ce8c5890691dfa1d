"""Admitting a person an identity provider vouches for: the answer checked, the access
decided (signin.access), the portal user found, linked or prepared, and the role set.

An existing portal user is found by the provider's subject; the first time, by a
verified e-mail, only where that e-mail is enough to say who the person is: the
e-mail's domain is one of the provider's allowed domains, the user signs in
through no other identity nor is provisioned by another provider over SCIM, and is
no administrator (staff or superuser). Any
other user with that e-mail is linked by an administrator, in the admin. With no
such user, a new one is created (by allauth, after this). A provider gives a user
(new or not) only an e-mail it may vouch for: one of its own domains, or one no
other provider lets in. Roles are set again at every sign-in, and so are the vehicle
groups the provider's groups give (`fleet.models.DirectoryGroup`, applied once the user
is saved: `vehicle_groups_apply`), so that a change in the provider's groups takes
effect at the next one. The groups the provider pushed over SCIM (signin.scim) count
with its groups claim's: a sign-in keeps the role and the vehicle groups they give.
An existing user whose account is inactive, or blocked by an administrator
(`signin.blocks`), is refused: as the account is when the sign-in writes it, not as it
was read.
"""

from __future__ import annotations

import hmac
from typing import Any

from allauth.socialaccount.models import SocialAccount, SocialLogin
from allauth.socialaccount.providers.base import Provider
from django.contrib.auth.models import User
from django.db import transaction
from django.http import HttpRequest

from portal.lib.identity import directory_groups_asserted
from signin.access import AccessPolicy, access_decide
from signin.blocks import access_open
from signin.models import Role, ScimUser, SsoOutcome
from signin.providers import provider_get, provider_list
from signin.scim.provisioning import scim_group_values

# SocialLogin.state carries these from here to the end of the sign-in (signin.adapters).
OUTCOME = "signin_outcome"
ROLE = "signin_role"
GROUPS = "signin_groups"  # the values of the groups claim, for the vehicle groups


class Refused(Exception):
    """The provider's answer does not let this person in; `outcome` says why."""

    def __init__(self, outcome: SsoOutcome, detail: str = "", *, subject: str = "") -> None:
        super().__init__(detail or outcome.value)
        self.outcome = outcome
        self.detail = detail
        self.subject = subject  # the person's subject at the provider, when the page needs it


def sso_login_admit(*, request: HttpRequest, sociallogin: SocialLogin) -> User:
    """The portal user `sociallogin` signs in as, its role set; `Refused` otherwise.

    The user may be new and unsaved: allauth saves it after this.
    """
    claims = _claims(sociallogin)
    provider = sociallogin.account.get_provider()
    policy = AccessPolicy.from_settings(provider.app.settings)
    decision = access_decide(policy=policy, claims=claims, pushed=_pushed_groups(sociallogin))
    if decision.refusal is not None or decision.role is None:
        raise Refused(decision.refusal or SsoOutcome.NO_ROLE)
    email = decision.verified_email
    if email and not _vouched_for(email, policy, request=request, provider=provider):
        email = ""
    _keep_only_verified_email(sociallogin, email)

    user: User
    if sociallogin.is_existing:
        user = sociallogin.user
        outcome = SsoOutcome.SIGNED_IN
    # The address as shown: an account that already has it is linked by its rules, or
    # the person is told that an administrator links it.
    elif (match := _user_by_email(sociallogin, decision.verified_email, policy)) is not None:
        user = match
        outcome = SsoOutcome.LINKED
    else:
        user = sociallogin.user
        outcome = SsoOutcome.PROVISIONED
    if user.pk is None:
        _set_role(user, decision.role, claims, email)
    else:
        # The account as it is now, not as it was read: a block committed since is seen,
        # and one made from now on waits for this sign-in's writes (`signin.blocks`).
        with transaction.atomic():
            if not access_open(user=user):
                raise Refused(SsoOutcome.DEACTIVATED)
            _set_role(user, decision.role, claims, email)
            if outcome is SsoOutcome.LINKED:
                sociallogin.connect(request, user)  # saves the user and the identity
            else:
                user.save(update_fields=_ROLE_FIELDS)
    sociallogin.state[OUTCOME] = outcome.value
    sociallogin.state[ROLE] = decision.role.value
    sociallogin.state[GROUPS] = sorted(decision.groups)
    return user


def vehicle_groups_apply(*, user: User, sociallogin: SocialLogin) -> None:
    """The vehicle groups the provider's groups give `user`, once saved: those the values
    of its groups claim and of the SCIM groups it pushed map to in, the others that
    provider gave out."""
    values = sociallogin.state.get(GROUPS)
    if values is None:  # not admitted by `sso_login_admit`: nothing read, nothing removed
        return
    # The provider's id as the identity is stored under (SocialAccount.provider): the
    # social application's provider_id, OIDC_PROVIDER_ID for the environment's.
    directory_groups_asserted.send(
        sender=SocialLogin, user=user, provider=sociallogin.account.provider, values=values
    )


def _pushed_groups(sociallogin: SocialLogin) -> set[str]:
    """The values of the groups the provider pushed over SCIM for this person, if it
    provisions them: they count as its groups claim's."""
    if not sociallogin.is_existing:
        return set()
    values: set[str] = set()
    for scim_user in ScimUser.objects.filter(
        user=sociallogin.user, provider=sociallogin.account.provider, deleted_at__isnull=True
    ):
        values |= scim_group_values(scim_user=scim_user)
    return values


def email_vouched_for(*, email: str, provider_id: str, request: HttpRequest) -> bool:
    """Whether the provider `provider_id` may give a portal user this e-mail (one it
    pushes over SCIM), by the rules of the sign-in (`_vouched_for`)."""
    provider = provider_get(request, provider_id)
    if provider is None:
        return False
    policy = AccessPolicy.from_settings(provider.app.settings)
    return _vouched_for(email, policy, request=request, provider=provider)


def _claims(sociallogin: SocialLogin) -> dict[str, Any]:
    """The ID token's claims with the userinfo's over them, once the nonce checks out."""
    extra = sociallogin.account.extra_data
    id_token: dict[str, Any] = extra.get("id_token") or {}
    sent = str(sociallogin.state.get("nonce") or "")
    received = str(id_token.get("nonce") or "")
    if not sent or not hmac.compare_digest(sent.encode(), received.encode()):
        raise Refused(SsoOutcome.BAD_ANSWER, "the ID token's nonce is not this sign-in's")
    return {**id_token, **(extra.get("userinfo") or {})}


def _vouched_for(
    email: str, policy: AccessPolicy, *, request: HttpRequest, provider: Provider
) -> bool:
    """Whether the provider may give a portal user this verified e-mail (where alerts go).

    Its own allowed domains, yes. A domain another provider lets in is that provider's
    to vouch for: a provider that admits by groups may show anyone's address, verified,
    and the fines of its members would be e-mailed to that address.
    """
    if policy.allows_domain_of(email):
        return True
    return not any(
        AccessPolicy.from_settings(other.app.settings).allows_domain_of(email)
        for other in provider_list(request)
        if other.app.provider_id != provider.app.provider_id
    )


def _keep_only_verified_email(sociallogin: SocialLogin, verified_email: str) -> None:
    """An e-mail the provider has not verified, or may not vouch for, is nobody's: not
    stored, not matched."""
    sociallogin.email_addresses = [
        address for address in sociallogin.email_addresses if address.email == verified_email
    ]
    if sociallogin.user is not None and not sociallogin.is_existing:
        sociallogin.user.email = verified_email


def _user_by_email(
    sociallogin: SocialLogin, verified_email: str, policy: AccessPolicy
) -> User | None:
    """The one user with this verified e-mail, to link once; `Refused` when that is unsafe."""
    if not verified_email:
        return None
    candidates = list(User.objects.filter(email__iexact=verified_email)[:2])
    if not candidates:
        return None
    if len(candidates) > 1:
        raise Refused(SsoOutcome.CONFLICT, "several portal users have this e-mail")
    (user,) = candidates
    provider_id = sociallogin.account.provider
    identities = set(
        SocialAccount.objects.filter(user=user).values_list("provider", flat=True).distinct()
    )
    if provider_id in identities:
        raise Refused(
            SsoOutcome.CONFLICT, "the portal user is linked to another identity of this provider"
        )
    # A user another provider provisions over SCIM is that provider's, identity or not
    # (one pushed without an externalId has none until it signs in).
    provisioned = set(
        ScimUser.objects.filter(user=user, deleted_at__isnull=True)
        .exclude(provider=provider_id)
        .values_list("provider", flat=True)
    )
    # The e-mail alone says who this is only where nothing else is at stake: not an
    # administrator's account (a local break-glass one would be taken, or demoted), not
    # one another provider signs in or provisions, not an address outside this
    # provider's own domains (one that admits by groups may show anyone's, verified).
    if user.is_staff or user.is_superuser:
        why = "is an administrator (staff or superuser)"
    elif identities:
        why = f"signs in through {', '.join(sorted(identities))}"
    elif provisioned:
        why = f"is provisioned by {', '.join(sorted(provisioned))}"
    elif not policy.allows_domain_of(verified_email):
        why = f"has an e-mail outside the allowed domains of {provider_id}"
    else:
        return user
    raise Refused(
        SsoOutcome.LINK_BY_ADMINISTRATOR,
        f"portal user {user.get_username()} {why}: an administrator links it in the admin",
        subject=sociallogin.account.uid,
    )


# What `_set_role` writes of an existing user: nothing else of what was read.
_ROLE_FIELDS = ["is_staff", "is_superuser", "first_name", "last_name", "email"]


def _set_role(user: User, role: Role, claims: dict[str, Any], verified_email: str) -> None:
    administrator = role is Role.ADMINISTRATOR
    user.is_staff = user.is_superuser = administrator
    if given := str(claims.get("given_name") or "").strip():
        user.first_name = given[:150]
    if family := str(claims.get("family_name") or "").strip():
        user.last_name = family[:150]
    if verified_email:
        user.email = verified_email
