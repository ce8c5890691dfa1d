"""What provisioning does to a portal user: their role and vehicle groups follow their
SCIM groups at once, and deactivation ends their access at once.

A SCIM group's `displayName` and `externalId` are values of its provider's groups, read
as the sign-in reads its groups claim: the provider's managers' groups give access
(`signin.access`), its administrators' groups take the role away from who leaves them
but give it only at a sign-in whose own claim says so, and the one mapping of the admin
(`fleet.models.DirectoryGroup`) gives vehicle groups. A provider that pushes no groups
leaves the role to the sign-in. A person whose groups no longer give access, like one
deactivated (`active: false`, or DELETE), keeps their account and records; their
sessions end and their alerts, e-mails and webhooks pause (`alerts.services.pauses`)
until they sign in again.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from django.conf import settings
from django.contrib.auth.models import User
from django.http import HttpRequest
from django.utils import translation
from django.utils.translation import gettext

from portal.lib.identity import Ended, access_ended, directory_groups_asserted
from signin.access import AccessPolicy, role_of_groups
from signin.blocks import access_end
from signin.models import Role, ScimGroup, ScimUser
from signin.providers import provider_get
from signin.sessions import sessions_end

logger = logging.getLogger(__name__)


def scim_group_values(*, scim_user: ScimUser) -> set[str]:
    """The values of the provider's groups `scim_user` is in: the names and external ids
    of their SCIM groups."""
    values: set[str] = set()
    for name, external_id in ScimGroup.objects.filter(members=scim_user).values_list(
        "display_name", "external_id"
    ):
        values.add(name)
        if external_id:
            values.add(external_id)
    return values


def scim_memberships_apply(*, scim_users: Iterable[ScimUser], request: HttpRequest) -> None:
    """Give each of `scim_users` the role and the vehicle groups their SCIM groups give:
    the vehicle groups their provider gave and they left are taken back, those given by
    hand stay."""
    policies: dict[str, AccessPolicy | None] = {}
    for scim_user in scim_users:
        values = scim_group_values(scim_user=scim_user)
        directory_groups_asserted.send(
            sender=ScimUser, user=scim_user.user, provider=scim_user.provider, values=values
        )
        if scim_user.provider not in policies:
            policies[scim_user.provider] = _role_policy(scim_user.provider, request=request)
        if (policy := policies[scim_user.provider]) is not None and scim_user.user.is_active:
            _role_apply(scim_user, values, policy)


def _role_policy(provider_id: str, *, request: HttpRequest) -> AccessPolicy | None:
    """The access rules the pushed groups of `provider_id` are read by; None when it
    pushes no groups (the role stays the sign-in's) or is no longer configured."""
    if not ScimGroup.objects.filter(provider=provider_id).exists():
        return None
    provider = provider_get(request, provider_id)
    return None if provider is None else AccessPolicy.from_settings(provider.app.settings)


def _role_apply(scim_user: ScimUser, values: set[str], policy: AccessPolicy) -> None:
    """The directory takes away, never gives: out of the administrators' groups, an
    administrator is one no more, at once; put in one, a person becomes one only at
    their next sign-in through the provider, if its groups claim says so (their own
    authenticated assertion: `signin.access.access_decide`), never by a push alone."""
    user = scim_user.user
    role = role_of_groups(policy=policy, groups=values)
    if role is not Role.ADMINISTRATOR and (user.is_staff or user.is_superuser):
        user.is_staff = user.is_superuser = False
        user.save(update_fields=["is_staff", "is_superuser"])
        logger.info("user %s is now %s, by %s over SCIM", user.pk, role, scim_user.provider)
    elif role is Role.ADMINISTRATOR and not user.is_staff:
        logger.info(
            "user %s is in an administrators' group of %s: an administrator from their next "
            "sign-in if its groups claim says so, not by the push",
            user.pk,
            scim_user.provider,
        )
    if role is None:
        ended = sessions_end(user=user)
        with translation.override(settings.LANGUAGE_CODE):
            detail = gettext("in no group of %(provider)s that gives access") % {
                "provider": scim_user.provider
            }
        access_ended.send(sender=ScimUser, user=user, reason=Ended.DEPROVISIONED, detail=detail)
        logger.info(
            "user %s is in no group of %s that gives access (%d sessions ended)",
            user.pk,
            scim_user.provider,
            ended,
        )


def scim_user_deactivate(*, user: User, provider: str) -> None:
    """End `user`'s access now: account inactive, sessions ended, alerts paused."""
    ended = access_end(
        user=user,
        reason=Ended.DEPROVISIONED,
        detail=lambda: gettext("deactivated by %(provider)s") % {"provider": provider},
    )
    logger.info("user %s deactivated by %s over SCIM (%d sessions ended)", user.pk, provider, ended)
