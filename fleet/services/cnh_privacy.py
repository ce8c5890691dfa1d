"""CPFs as personal data (LGPD): who sees them in full, how many may be looked up, for how long.

- A full CPF is shown only to users given the permission
  `fleet.view_full_cpf` ("Can see full CPFs") explicitly, themselves or
  through a group: a superuser too must be given it, so that every person
  who can see CPFs is named in the admin. Everyone else, the lookup's owner
  and staff included, sees them masked. Each display of full CPFs, a lookup's
  or a driver's, is recorded (`CpfDisclosure`), and the record outlives the lookup.
- A user may look up `FLEET_CNH_DAILY_LIMIT` CPFs a day (the day of the
  portal's time zone); the limit renews at its midnight.
- Lookups older than `FLEET_CNH_RETENTION_DAYS` days are purged by the
  worker (`fleet.tasks.cnh_lookups_purge`), every night at 3:00 once the
  first lookup has started it, and it logs how many it deleted.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, Permission, User
from django.db.models import Count, Q
from django.utils import timezone

from fleet.models import CnhLookup, CnhLookupItem, CpfDisclosure, CpfDisclosurePlace, Driver
from portal.lib import worker

logger = logging.getLogger("fleet.cnh")

FULL_CPF_PERMISSION = "fleet.view_full_cpf"


def cpf_full_allowed(*, user: User | AnonymousUser) -> bool:
    """Whether `user` was given `fleet.view_full_cpf`, to them or to one of their groups.

    Not `has_perm`, which grants a superuser everything without a trace.
    """
    if not user.is_active or not user.is_authenticated:
        return False
    app_label, codename = FULL_CPF_PERMISSION.split(".")
    return (
        Permission.objects.filter(content_type__app_label=app_label, codename=codename)
        .filter(Q(user=user) | Q(group__user=user))
        .exists()
    )


def cpf_disclosure_record(
    *,
    user: AbstractBaseUser,
    lookup: CnhLookup | None = None,
    driver: Driver | None = None,
    place: CpfDisclosurePlace,
    count: int,
) -> None:
    """Record that `user` was shown `count` full CPFs of `lookup`, or the CPF of `driver`
    (nothing when none)."""
    if count <= 0:
        return
    CpfDisclosure.objects.create(
        user_id=user.pk,
        username=user.get_username(),
        lookup=lookup,
        lookup_public_id=lookup.public_id if lookup is not None else None,
        driver_number=driver.driver_id if driver is not None else None,
        place=place,
        cpf_count=count,
    )


# --- The daily limit -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CnhAllowance:
    """How many CPFs a user may still look up today, and when the count starts again."""

    limit: int
    used: int
    renews_at: datetime  # aware, the next midnight of the current time zone

    @property
    def remaining(self) -> int:
        return max(0, self.limit - self.used)


class CnhDailyLimitReached(Exception):
    """The lookup asked for would take the user over today's limit."""

    def __init__(self, allowance: CnhAllowance, asked: int) -> None:
        super().__init__(f"{asked} CPF(s) asked, {allowance.remaining} left today")
        self.allowance = allowance
        self.asked = asked


def cnh_daily_allowance(*, user: AbstractBaseUser) -> CnhAllowance:
    """The user's CPFs looked up since the last midnight (current time zone) against the limit."""
    now = timezone.localtime()
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    # Same-zone arithmetic is by the wall clock: the next midnight, whatever the day's length.
    renews_at = midnight + timedelta(days=1)
    used = CnhLookupItem.objects.filter(
        lookup__owner_id=user.pk, lookup__created_at__gte=midnight
    ).aggregate(count=Count("pk"))["count"]
    return CnhAllowance(limit=settings.FLEET_CNH_DAILY_LIMIT, used=used, renews_at=renews_at)


def cnh_daily_limit_check(*, user: AbstractBaseUser, asked: int) -> None:
    """Raise `CnhDailyLimitReached` when `asked` more CPFs would pass today's limit."""
    allowance = cnh_daily_allowance(user=user)
    if asked > allowance.remaining:
        raise CnhDailyLimitReached(allowance, asked)


# --- Retention -------------------------------------------------------------------------


def cnh_lookups_purge() -> int:
    """Delete the lookups (and their CPFs) older than FLEET_CNH_RETENTION_DAYS; how many."""
    days = settings.FLEET_CNH_RETENTION_DAYS
    cutoff = timezone.now() - timedelta(days=days)
    deleted = (
        CnhLookup.objects.filter(created_at__lt=cutoff).delete()[1].get(CnhLookup._meta.label, 0)
    )
    logger.info(
        "purged %d CNH lookup(s) older than %d days (FLEET_CNH_RETENTION_DAYS)", deleted, days
    )
    return deleted


# The purge runs at night, when nobody is looking lookups up.
_PURGE_HOUR = 3


def cnh_purge_next_run() -> datetime:
    """When the purge runs next: the portal's next 3:00 at least an hour away."""
    return worker.daily_at(_PURGE_HOUR)


def cnh_retention_schedule() -> None:
    """Start the worker's nightly purge of old lookups, unless a run of it is waiting.

    Each purge asks for the next night's run (`fleet.tasks.cnh_lookups_purge`),
    so once started it goes on whether or not anyone looks a licence up.
    """
    try:
        worker.enqueue_unless_waiting("cnh_lookups_purge", run_after=cnh_purge_next_run())
    except Exception:
        logger.exception("could not ask the worker to purge old CNH lookups")
