"""Sign-in's side of the access signals (`portal.lib.identity`): which refusals say a
person's access ended, and every completed sign-in granting it."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from portal.lib.identity import access_granted
from signin.models import SsoOutcome

# The refusals that say the person's access ended. Not a provider's bad answer or a
# conflict of identities: those say nothing of the person.
ACCESS_ENDED = frozenset(
    {
        SsoOutcome.UNVERIFIED_EMAIL,
        SsoOutcome.DOMAIN_NOT_ALLOWED,
        SsoOutcome.NO_ROLE,
        SsoOutcome.DEACTIVATED,
    }
)


def access_granted_send(sender: Any, request: HttpRequest, user: Any, **kwargs: Any) -> None:
    """`user_logged_in` receiver: every completed sign-in, whichever way, grants access."""
    access_granted.send(sender=type(user), user=user)
