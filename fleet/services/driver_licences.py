"""A driver's licence as the portal shows it beside the driver, and looking it up again:
for one driver (their page), for the drivers an administrator picks, and for every
driver with a CPF whose licence was last looked up too long ago (a batch the worker
walks a chunk at a time).

The licence is the newest answer of a CNH lookup for the driver's CPF
(`fleet.services.driver_cpfs`): its situation, category, expiry and points, read from
what the API answered, and when it came. It is valid when the licensing service calls it
regular and its expiry has not passed; anything else is a warning wherever the portal
names that driver (their page, a fine's page, the queue of fines to indicate), read for
a whole page's drivers in one query (`driver_licences_of`).

The batch never holds a transaction open, nor a list of drivers: each run of the task
`driver_licences_run` takes the next drivers by their id (a keyset) and makes one batch
lookup of them, as a person's would be (`cnh_lookup_create`: the daily limit of its
owner, and the retries at the API's `Retry-After`); the next run waits until that lookup
is final, so one lookup at a time goes to the API, and until the limit renews when it is
reached.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Final
from uuid import UUID

from django.conf import settings
from django.contrib.auth.models import User
from django.db.models import Q, QuerySet
from django.utils import timezone
from django.utils.translation import gettext, pgettext

from fleet.api.licences import cnh_licence_from_json
from fleet.models import CnhItemStatus, CnhLookup, CnhLookupStatus, CnhPurpose, Driver
from fleet.services.cnh import cnh_lookup_create
from fleet.services.cnh_privacy import CnhDailyLimitReached, cnh_daily_allowance
from fleet.services.cnh_results import situation_label
from fleet.services.driver_cpfs import driver_cpf
from portal.lib import worker
from portal.lib.encryption import UndecryptableSecret

logger = logging.getLogger("fleet.cnh")

# A licence the licensing service calls valid (DETRAN's word).
_REGULAR: Final = "REGULAR"
# How often a batch's next run looks whether its lookup is final.
BATCH_WAIT: Final = timedelta(seconds=15)


class DriverWithoutCpf(Exception):
    """The driver has no CPF: there is no licence to look up."""


@dataclass(frozen=True, slots=True)
class DriverLicence:
    """A driver's licence as the newest lookup of their CPF answered it."""

    looked_up_at: datetime
    lookup_id: UUID
    found: bool  # False: no licence was found for the CPF
    situation: str = ""  # as the licensing service wrote it
    category: str | None = None
    expires_on: date | None = None
    points: int | None = None

    @property
    def situation_shown(self) -> str:
        """The situation in the reader's language, when the portal knows it."""
        return situation_label(self.situation) if self.situation else ""

    @property
    def expired(self) -> bool:
        return self.expires_on is not None and self.expires_on < timezone.localdate()

    @property
    def valid(self) -> bool:
        """Regular, and not past its expiry."""
        return self.found and self.situation.upper() == _REGULAR and not self.expired

    @property
    def problem(self) -> str:
        """What makes the licence not valid, in the reader's language; "" when it is."""
        if not self.found:
            return gettext("no licence found for their CPF")
        if self.situation.upper() != _REGULAR:
            return self.situation_shown or gettext("situation not given")
        if self.expired:
            return pgettext("CNH situation", "Expired")
        return ""

    @property
    def key(self) -> str:
        """What a kept rendering of the licence's warning varies by (with the day)."""
        return f"{self.lookup_id}:{self.looked_up_at.isoformat()}"


def _licence_of(driver: Driver) -> DriverLicence | None:
    item = driver.licence
    if item is None or driver.licence_checked_at is None:
        return None
    looked_up_at, public_id = driver.licence_checked_at, item.lookup.public_id
    if item.status != CnhItemStatus.OK or not isinstance(item.result, dict):
        return DriverLicence(looked_up_at=looked_up_at, lookup_id=public_id, found=False)
    licence = cnh_licence_from_json(item.result)
    return DriverLicence(
        looked_up_at=looked_up_at,
        lookup_id=public_id,
        found=True,
        situation=licence.situation or "",
        category=licence.category,
        expires_on=licence.expires_on,
        points=licence.points,
    )


def driver_licence(driver: Driver) -> DriverLicence | None:
    """The driver's licence, as the newest lookup of their CPF answered; None before any."""
    return _licence_of(driver)


def driver_licences_of(driver_ids: Iterable[int | None]) -> dict[int, DriverLicence]:
    """The licences of the drivers `driver_ids` (the fleet's ids) that have one, in one
    query: what a page of fines shows beside each fine's driver."""
    ids = {driver_id for driver_id in driver_ids if driver_id is not None}
    if not ids:
        return {}
    drivers = (
        Driver.objects.filter(driver_id__in=ids, licence__isnull=False)
        .select_related("licence__lookup")
        .only(
            "driver_id",
            "licence_checked_at",
            "licence__status",
            "licence__result",
            "licence__lookup__public_id",
        )
    )
    found = {}
    for driver in drivers:
        if (licence := _licence_of(driver)) is not None:
            found[driver.driver_id] = licence
    return found


# --- Looking up again -------------------------------------------------------------------


def driver_licence_pending(*, driver: Driver, user: User) -> CnhLookup | None:
    """`user`'s lookup of the driver's CPF still under way, if any (the newest)."""
    try:
        digits = driver_cpf(driver)
    except UndecryptableSecret:
        return None
    if not digits:
        return None
    under_way = CnhLookup.objects.filter(owner=user).exclude(
        status__in=[CnhLookupStatus.DONE, CnhLookupStatus.FAILED, CnhLookupStatus.UNKNOWN]
    )
    return under_way.filter(items__cpf=digits).order_by("-created_at", "-pk").first()


def driver_licence_lookup(*, driver: Driver, user: User) -> CnhLookup:
    """Look the driver's licence up again, as `user` (their daily limit): a lookup queued
    for the worker, whose answer becomes the driver's licence; the one of theirs already
    under way, if any (a lookup is charged: a second click sends nothing).
    `DriverWithoutCpf` when no CPF is known, `CnhDailyLimitReached` past the limit."""
    digits = driver_cpf(driver)
    if not digits:
        raise DriverWithoutCpf(driver.driver_id)
    if (pending := driver_licence_pending(driver=driver, user=user)) is not None:
        return pending
    return cnh_lookup_create(owner=user, cpfs=[digits], batch=False, purpose=CnhPurpose.PERIODIC)


def driver_licences_lookup(*, drivers: QuerySet[Driver], user: User) -> list[CnhLookup]:
    """Look up the licences of `drivers` that have a CPF, as `user`: batch lookups of up to
    FLEET_CNH_BATCH_LIMIT CPFs each. `CnhDailyLimitReached` before any is made (or any
    CPF read) when they would pass the limit."""
    with_cpf = drivers.filter(cpf_digest__isnull=False)
    allowance = cnh_daily_allowance(user=user)
    if (count := with_cpf.count()) > allowance.remaining:
        raise CnhDailyLimitReached(allowance, count)
    chosen = with_cpf.select_related(None).order_by("pk")
    cpfs = _cpfs_of(chosen.only("pk", "driver_id", "cpf_encrypted"))
    chunk = settings.FLEET_CNH_BATCH_LIMIT
    return [
        cnh_lookup_create(
            owner=user, cpfs=cpfs[start : start + chunk], batch=True, purpose=CnhPurpose.PERIODIC
        )
        for start in range(0, len(cpfs), chunk)
    ]


def _cpfs_of(drivers: Iterable[Driver]) -> list[str]:
    """The drivers' CPFs, each once, in order; a CPF no key decrypts is left out (logged)."""
    cpfs: dict[str, None] = {}
    for driver in drivers:
        try:
            digits = driver_cpf(driver)
        except UndecryptableSecret:
            logger.warning("driver %s: CPF not decrypted (FLEET_FIELD_KEYS)", driver.driver_id)
            continue
        if digits:
            cpfs.setdefault(digits)
    return list(cpfs)


# --- The batch of licences looked up too long ago ---------------------------------------


def driver_licences_due(*, before: datetime, after: int = 0, limit: int) -> list[Driver]:
    """Up to `limit` drivers with a CPF whose licence was never looked up or last before
    `before`, by id after `after` (a keyset: the walk reads each driver once)."""
    return list(
        Driver.objects.filter(cpf_digest__isnull=False, pk__gt=after)
        .filter(Q(licence_checked_at__isnull=True) | Q(licence_checked_at__lt=before))
        .order_by("pk")
        .only("pk", "driver_id", "cpf_encrypted")[:limit]
    )


def driver_licences_count(*, before: datetime) -> int:
    """How many drivers with a CPF were never looked up, or last before `before`."""
    return (
        Driver.objects.filter(cpf_digest__isnull=False)
        .filter(Q(licence_checked_at__isnull=True) | Q(licence_checked_at__lt=before))
        .count()
    )


def driver_licences_batch_start(*, user: User, older_than_days: int) -> datetime:
    """Have the worker look up, as `user`, the licence of every driver with a CPF last
    looked up more than `older_than_days` days ago (or never); the moment before which a
    licence is looked up again."""
    before = timezone.now() - timedelta(days=older_than_days)
    worker.enqueue("driver_licences_run", user.pk, before.isoformat(), 0, None)
    logger.info(
        "driver licences older than %d day(s) to be looked up, for user %s",
        older_than_days,
        user.pk,
    )
    return before


def driver_licences_batch_step(
    *, user_id: int, before: datetime, after: int, waiting_for: int | None
) -> str:
    """One run of the batch: wait for the previous chunk's lookup, else look up the next
    chunk of drivers due and ask for the next run; what it did."""
    now = timezone.now()
    if waiting_for is not None:
        previous = CnhLookup.objects.filter(pk=waiting_for).only("status").first()
        if previous is not None and not previous.is_final:
            _next_run(user_id, before, after, waiting_for, at=now + BATCH_WAIT)
            return "waiting"
    user = User.objects.filter(pk=user_id, is_active=True).first()
    if user is None:
        logger.warning("driver licences batch stopped: user %s is gone or inactive", user_id)
        return "stopped"
    allowance = cnh_daily_allowance(user=user)
    size = min(settings.FLEET_CNH_BATCH_LIMIT, allowance.remaining)
    if size <= 0:
        _next_run(user_id, before, after, None, at=allowance.renews_at)
        return "limit"
    drivers = driver_licences_due(before=before, after=after, limit=size)
    if not drivers:
        logger.info("driver licences batch for user %s: done", user_id)
        return "done"
    last = drivers[-1].pk
    cpfs = _cpfs_of(drivers)
    if not cpfs:
        _next_run(user_id, before, last, None, at=now)
        return "skipped"
    try:
        lookup = cnh_lookup_create(owner=user, cpfs=cpfs, batch=True, purpose=CnhPurpose.PERIODIC)
    except CnhDailyLimitReached as reached:  # another lookup of theirs took the rest
        _next_run(user_id, before, after, None, at=reached.allowance.renews_at)
        return "limit"
    _next_run(user_id, before, last, lookup.pk, at=now + BATCH_WAIT)
    logger.info(
        "driver licences batch for user %s: lookup %s of %d CPF(s)", user_id, lookup.pk, len(cpfs)
    )
    return "looked_up"


def _next_run(
    user_id: int, before: datetime, after: int, waiting_for: int | None, *, at: datetime
) -> None:
    worker.enqueue(
        "driver_licences_run", user_id, before.isoformat(), after, waiting_for, run_after=at
    )
