"""What sign-in tells the other apps about people's access, without either importing the
other: sign-in sends these signals and registers its providers at start-up; the fleet
(vehicle groups) and the alerts listen and ask.

- `access_refused(user, outcome, provider)`: the organisation's rules refused, at
  single sign-on, a person who has a portal account: they left the groups that give
  access, their domain or e-mail is no longer admitted, or the account is
  deactivated. `outcome` says why (its `label` in words); `provider` the id of the
  provider that refused them.
- `access_granted(user)`: a person signed in, through a provider or the local form.
- `access_ended(user, reason, detail)`: an administrator blocked the person, or their
  provider deprovisioned them (SCIM); their sessions have ended. `reason` an `Ended`,
  `detail` in words, in the portal's language.
- `access_restored(user, by)`: an administrator lifted the block (`by`: who).
- `directory_groups_asserted(user, provider, values)`: the groups the provider says the
  person is in (its groups claim at sign-in, or SCIM's push).

`identity_providers(request)`: the providers people sign in with, (id, name), in the
order the login page shows them, as sign-in registered them (`identity_providers_set`).
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum

from django.dispatch import Signal
from django.http import HttpRequest

access_refused = Signal()
access_granted = Signal()
access_ended = Signal()
access_restored = Signal()
directory_groups_asserted = Signal()


class Ended(StrEnum):
    """Why a person's access ended (`access_ended`)."""

    BLOCKED = "blocked"
    DEPROVISIONED = "deprovisioned"


_ProviderLister = Callable[[HttpRequest], list[tuple[str, str]]]
_lister: list[_ProviderLister] = []  # sign-in's, once its app is ready


def identity_providers_set(lister: _ProviderLister) -> None:
    """Sign-in's list of its providers (its app's `ready()`; again: replaced)."""
    _lister[:] = [lister]


def identity_providers(request: HttpRequest) -> list[tuple[str, str]]:
    """The identity providers configured, (id, name); none without sign-in."""
    return _lister[0](request) if _lister else []
