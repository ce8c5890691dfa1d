"""What sign-in tells the rest of the portal about a person's access, without knowing who
listens (the alerts stop and resume on these).

- `access_refused(user, outcome, provider)`: the organisation's rules refused, at
  single sign-on, a person who has a portal account: they left the groups that give
  access, their domain or e-mail is no longer admitted, or the account is
  deactivated. `outcome` is the `SsoOutcome`; its label says it in words;
  `provider` the id of the provider that refused them.
- `access_granted(user)`: a person signed in, through a provider or the local form.
"""

from __future__ import annotations

from typing import Any

from django.dispatch import Signal
from django.http import HttpRequest

from signin.models import SsoOutcome

access_refused = Signal()
access_granted = Signal()

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
