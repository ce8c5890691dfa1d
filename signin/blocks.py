"""An administrator's block of a person's access: its own state, beside what their
identity provider says.

Blocked (`access_block`: the admin's *Users* action, or `manage.py access block`), a
person's account is inactive, their sessions end and their alerts pause, at once. No
provider undoes it: a SCIM `active: true` is kept as what the provider says
(`ScimUser.active`) and the account stays inactive; no sign-in undoes it either (an
inactive account is refused, through a provider or the local form). Only an
administrator lifts it (`access_unblock`); the account is then as active as its
providers say, and the alerts start again.

Nor does a request in flight. What writes whether an account is active, or lets its
person in (a block, an unblock, a push, a sign-in's admission), first locks the account's
row and reads it again (`_active_locked`): two of them run one after the other, the
second seeing what the first committed. Whatever else saves an account saves only the
fields it changes, never whether it is active as it read it.
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
        # The account's row first, before the block's: the block's reference to it takes a
        # lighter lock, and two blocks at once would each hold that and wait for the other.
        _active_locked(user)
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
    with transaction.atomic():
        active = _active_locked(user)
        user.is_active = False
        if active:
            user.save(update_fields=["is_active"])
    ended = sessions_end(user=user)
    with translation.override(settings.LANGUAGE_CODE):
        access_ended.send(sender=User, user=user, reason=reason, detail=detail())
    return ended


def access_unblock(*, user: User, by: str) -> bool:
    """Lift `user`'s block: active again as their providers say; whether they were blocked."""
    with transaction.atomic():
        _active_locked(user)
        lifted, _ = AccessBlock.objects.filter(user=user).delete()
        if lifted:
            user.is_active = provider_active(user)
            user.save(update_fields=["is_active"])
    if lifted:
        access_restored.send(sender=User, user=user, by=by)
        logger.info("user %s unblocked by %s", user.pk, by)
    return bool(lifted)


def access_open(*, user: User) -> bool:
    """Whether `user` may come in now: their account active and not blocked, as committed,
    read under the account's lock (in the caller's transaction, which then writes it: a
    block waits for that)."""
    user.is_active = _active_locked(user)
    return user.is_active and not access_blocked(user)


def access_reopen(*, user: User) -> bool:
    """Their provider says `user` is active again: so is their account, unless an
    administrator blocked them; whether it was inactive and is active now."""
    with transaction.atomic():
        user.is_active = _active_locked(user)
        if user.is_active or access_blocked(user):
            return False
        user.is_active = True
        user.save(update_fields=["is_active"])
    return True


def _active_locked(user: User) -> bool:
    """Whether `user`'s account is active as committed, its row locked until the caller's
    transaction ends: another request that locks it waits until then, and reads what
    this one wrote."""
    active: bool = (
        User.objects.select_for_update().values_list("is_active", flat=True).get(pk=user.pk)
    )
    return active


def provider_active(user: User) -> bool:
    """Whether the providers that provision `user` over SCIM say they are active (a user
    no provider provisions: yes)."""
    return not ScimUser.objects.filter(user=user, deleted_at__isnull=True, active=False).exists()
