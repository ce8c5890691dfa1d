"""An administrator's block of a person's access: its own state, beside what their
identity provider says.

Blocked (`access_block`: the admin's *Users* action, or `manage.py access block`), a
person's account is inactive, their sessions end and their alerts pause, at once. No
provider undoes it: a SCIM `active: true` is kept as what the provider says
(`ScimUser.active`) and the account stays inactive; no sign-in undoes it either (an
inactive account is refused, through a provider or the local form). Only an
administrator lifts it (`access_unblock`); the account is then as active as its
providers say, and the alerts start again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import translation
from django.utils.translation import gettext

from portal.lib.identity import Ended, access_ended, access_restored
from signin.models import AccessBlock, ScimUser
from signin.sessions import sessions_end

logger = logging.getLogger(__name__)


def access_blocked(user: User) -> bool:
    return AccessBlock.objects.filter(user=user).exists()


def access_block(*, user: User, by: str, reason: str = "") -> bool:
    """Block `user`'s access now; whether they were not blocked already."""
    with transaction.atomic():
        _block, created = AccessBlock.objects.get_or_create(
            user=user, defaults={"by": by[:200], "reason": reason[:200]}
        )
        ended = access_end(
            user=user,
            reason=Ended.BLOCKED,
            detail=lambda: gettext("blocked by %(by)s") % {"by": by},
        )
    if created:
        logger.info("user %s blocked by %s (%d sessions ended)", user.pk, by, ended)
    return created


def access_end(*, user: User, reason: Ended, detail: Callable[[], str]) -> int:
    """End `user`'s access now: account inactive, sessions ended (how many), and the
    other apps told (`access_ended`: the alerts pause) why (`detail`, in the portal's
    language)."""
    if user.is_active:
        user.is_active = False
        user.save(update_fields=["is_active"])
    ended = sessions_end(user=user)
    with translation.override(settings.LANGUAGE_CODE):
        access_ended.send(sender=User, user=user, reason=reason, detail=detail())
    return ended


def access_unblock(*, user: User, by: str) -> bool:
    """Lift `user`'s block: active again as their providers say; whether they were blocked."""
    with transaction.atomic():
        lifted, _ = AccessBlock.objects.filter(user=user).delete()
        if lifted:
            user.is_active = provider_active(user)
            user.save(update_fields=["is_active"])
    if lifted:
        access_restored.send(sender=User, user=user, by=by)
        logger.info("user %s unblocked by %s", user.pk, by)
    return bool(lifted)


def provider_active(user: User) -> bool:
    """Whether the providers that provision `user` over SCIM say they are active (a user
    no provider provisions: yes)."""
    return not ScimUser.objects.filter(user=user, deleted_at__isnull=True, active=False).exists()
