"""What provisioning does to a portal user: their vehicle groups follow their SCIM groups
at once, and deactivation ends their access at once.

A SCIM group's `displayName` and `externalId` are values of its provider's groups, mapped
to vehicle groups by the one mapping the sign-in's groups claim uses
(`fleet.models.DirectoryGroup`). Deactivating a person (`active: false`, or DELETE)
keeps their account and records, ends their sessions and pauses their alerts, e-mails
and webhooks (`alerts.services.pauses`) until they sign in again.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from importlib import import_module

from django.conf import settings
from django.contrib.auth.models import User
from django.contrib.sessions.models import Session
from django.utils import timezone, translation
from django.utils.translation import gettext

from alerts.models import PauseReason
from alerts.services.pauses import alerts_pause
from fleet.services.scopes import directory_groups_apply
from signin.models import ScimGroup, ScimUser

logger = logging.getLogger(__name__)

_DB_SESSIONS = frozenset(
    {"django.contrib.sessions.backends.db", "django.contrib.sessions.backends.cached_db"}
)


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


def scim_vehicle_groups_apply(*, scim_users: Iterable[ScimUser]) -> None:
    """Put each of `scim_users` in the vehicle groups their SCIM groups map to, and out
    of the others their provider gave; groups given by hand stay."""
    for scim_user in scim_users:
        directory_groups_apply(
            user=scim_user.user,
            provider=scim_user.provider,
            values=scim_group_values(scim_user=scim_user),
        )


def scim_user_deactivate(*, user: User, provider: str) -> None:
    """End `user`'s access now: account inactive, sessions ended, alerts paused."""
    if user.is_active:
        user.is_active = False
        user.save(update_fields=["is_active"])
    ended = sessions_end(user=user)
    with translation.override(settings.LANGUAGE_CODE):
        detail = gettext("deactivated by %(provider)s") % {"provider": provider}
    alerts_pause(user=user, reason=PauseReason.DEPROVISIONED, detail=detail)
    logger.info("user %s deactivated by %s over SCIM (%d sessions ended)", user.pk, provider, ended)


def sessions_end(*, user: User) -> int:
    """End `user`'s stored sessions; how many. With another session engine, whose sessions
    cannot be listed, an inactive user's sessions are anonymous at their next request
    anyway (ModelBackend refuses inactive users)."""
    if settings.SESSION_ENGINE not in _DB_SESSIONS:
        return 0
    store = import_module(settings.SESSION_ENGINE).SessionStore
    theirs = [
        session.session_key
        for session in Session.objects.filter(expire_date__gt=timezone.now()).iterator()
        if session.get_decoded().get("_auth_user_id") == str(user.pk)
    ]
    for key in theirs:
        store(session_key=key).delete()
    return len(theirs)
