"""CNH lookups whose worker died while they ran (a deploy, a crash, SIGKILL).

A lookup is `running` from its claim to the end of its attempt. A worker
that dies in between leaves it so, with no task to finish it. Once it has
run longer than any attempt can last (`RUNNING_LEASE`), it ends with an
unknown outcome (`cnh_lookup_recover`): its call may well have been sent, and
done and charged, so it is never sent again by itself. Its page ends it when
opened; the worker's sweep (`cnh_lookups_recover_all`, the task
`cnh_lookups_recover`), asked for at every claim, ends it when nobody does.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Final

from django.db import transaction
from django.db.models import Min
from django.utils import timezone

from fleet.api.client import CNH_READ_TIMEOUT
from fleet.models import CnhItemStatus, CnhLookup, CnhLookupStatus, CnhReason
from portal.lib import metrics, worker

logger = logging.getLogger("fleet.cnh")

# Longer than any attempt can run (the 70 s read timeout, connecting, storing):
# a lookup running for longer lost its worker.
RUNNING_LEASE: Final = timedelta(seconds=CNH_READ_TIMEOUT + 50)
# The `error_code` of the items a dead worker left pending: their outcome is unknown.
INTERRUPTED: Final = "interrupted"


def cnh_lookup_recover(*, lookup: CnhLookup) -> bool:
    """End a lookup whose worker died in the middle of it; whether it was one.

    A worker killed during its attempt (a deploy, a crash) leaves the lookup
    `running` with no task to finish it. Once it has run longer than any
    attempt can last (`RUNNING_LEASE`), it ends: its call may well have been
    sent, and done and charged, so it is not queued again. Its items still
    pending get an unknown outcome (`INTERRUPTED`), the lookup too, and the
    manager decides whether to look them up again (`cnh_lookup_retry_failed`
    with `include_unknown`), as after a call that got no answer. Nothing
    records whether the call had left when the worker died: every pending
    item is treated as possibly sent.

    The lookup's page calls this when it is opened and while it polls, and
    the worker's sweep (`cnh_lookups_recover_all`) once the lease has passed,
    so that a lookup whose page nobody opens ends too.
    """
    now = timezone.now()
    if lookup.status != CnhLookupStatus.RUNNING or lookup.updated_at >= now - RUNNING_LEASE:
        return False  # what nearly every poll finds: no query
    with transaction.atomic():
        # One UPDATE decides, so that two polls cannot both end it.
        ended = CnhLookup.objects.filter(
            pk=lookup.pk, status=CnhLookupStatus.RUNNING, updated_at__lt=now - RUNNING_LEASE
        ).update(
            status=CnhLookupStatus.UNKNOWN,
            reason=CnhReason.NO_ANSWER,
            detail="The worker stopped while the lookup was running: its call may have been sent",
            next_attempt_at=None,
            finished_at=now,
            updated_at=now,
        )
        count = 0
        if ended:
            count = lookup.items.filter(status=CnhItemStatus.PENDING).update(
                status=CnhItemStatus.UNKNOWN,
                result=None,
                error_code=INTERRUPTED,
                error_message="",
                updated_at=now,
            )
    if ended:
        metrics.CNH_LOOKUPS.labels(str(CnhLookupStatus.UNKNOWN)).inc()
        logger.warning(
            "CNH lookup %s was left running by its worker (attempt %d): %d CPF(s) with an "
            "unknown outcome (not sent again: it may have been charged)",
            lookup.pk,
            lookup.attempts,
            count,
        )
        lookup.refresh_from_db()
    return bool(ended)


def cnh_lookups_recover_all() -> int:
    """The worker's sweep: end every lookup left running past its lease (`cnh_lookup_recover`);
    how many it ended. While lookups still run, it asks for its next run at the
    soonest end of their leases."""
    now = timezone.now()
    stale = CnhLookup.objects.filter(
        status=CnhLookupStatus.RUNNING, updated_at__lt=now - RUNNING_LEASE
    )
    ended = sum(cnh_lookup_recover(lookup=lookup) for lookup in stale)
    recovery_ask()
    return ended


def recovery_ask() -> None:
    """Have the sweep run when the oldest running lookup's lease ends (one run waits at a
    time: a run finds the next oldest and asks again)."""
    oldest = CnhLookup.objects.filter(status=CnhLookupStatus.RUNNING).aggregate(
        oldest=Min("updated_at")
    )["oldest"]
    if oldest is not None:
        run_after = oldest + RUNNING_LEASE + timedelta(seconds=1)
        worker.enqueue_unless_waiting("cnh_lookups_recover", run_after=run_after)


def recovery_settle() -> None:
    """Once no lookup runs, the sweep waiting for one has nothing to do: drop it.

    (Should another worker claim a lookup between the count and the delete,
    that lookup is ended by its page after its lease, as before the sweep.)
    """
    if not CnhLookup.objects.filter(status=CnhLookupStatus.RUNNING).exists():
        worker.waiting_delete("cnh_lookups_recover")
