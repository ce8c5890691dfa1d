"""Driver licence (CNH) lookups: asking for one and running it in the background.

A lookup can take the licensing service's whole minute (spec 8), so no web
request waits for it: `cnh_lookup_create` stores it and enqueues
`fleet.tasks.cnh_lookup_run` once the transaction commits, and the worker
(`manage.py db_worker`) calls the API through `cnh_lookup_process`.

Lookups are charged (spec 4.5), so a call is repeated automatically only
when it certainly did nothing: a 504 (spec 7.3: not charged) or a 429, each
at its `Retry-After`, and a connect error (the request never left). That
retry is not made in the worker's thread: the lookup waits
(`waiting_retry`, with the time) and a new task is enqueued to run at the
`Retry-After`, or after a backoff when there is none, up to
`FLEET_CNH_MAX_ATTEMPTS` calls; then it fails with the reason.

A call sent that got no answer (connection closed, read timeout), a success
answer whose body cannot be read (the lookup was probably done and charged),
and a call its worker may have been making when it died (`cnh_lookup_recover`)
may all have been done and charged: none is sent again by itself. Their
items, and the lookup, end with an unknown outcome (`unknown`), and the
manager decides whether to look them up again, accepting a possible second
charge. Any other failure (a 5xx answer, refused credentials…) ends the
lookup as failed, with its reason. A batch call answers per item (spec 7.3): its
items in error are retried by the user, all together
(`cnh_lookup_retry_failed`).

CPFs are personal data (LGPD): they never reach a log line or a task's
arguments (tasks carry the lookup's id), and only the lookup's owner and
staff can read a lookup (`fleet.services.cnh_results`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime, timedelta
from functools import partial
from typing import Any, Final

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from fleet import cpf
from fleet.api import errors
from fleet.api.licences import CnhLicence as CnhLicence
from fleet.api.licences import CnhLookupResult
from fleet.models import (
    CnhItemStatus,
    CnhLookup,
    CnhLookupItem,
    CnhLookupKind,
    CnhLookupStatus,
    CnhPurpose,
)
from fleet.models import CnhReason as CnhReason
from fleet.services.cnh_privacy import cnh_daily_limit_check, cnh_retention_schedule
from fleet.services.cnh_recovery import INTERRUPTED as INTERRUPTED
from fleet.services.cnh_recovery import RUNNING_LEASE as RUNNING_LEASE
from fleet.services.cnh_recovery import cnh_lookup_recover as cnh_lookup_recover
from fleet.services.cnh_recovery import recovery_ask, recovery_settle
from fleet.services.connection import fleet_client
from fleet.services.driver_cpfs import driver_licences_attach
from portal.lib import metrics, worker

logger = logging.getLogger("fleet.cnh")

# Without Retry-After: 30 s, 1 min, 2 min… up to 15 min between attempts.
_BACKOFF_BASE: Final = 30.0
_BACKOFF_MAX: Final = 900.0
# An item the batch answer left out, or a lookup that failed before its item was asked.
MISSING: Final = "missing"
# Items with an unknown outcome, by why (their `error_code`): the call got no
# answer (CnhReason.NO_ANSWER), its success answer could not be read, or its
# worker died while the lookup was running, maybe in the middle of the call.
UNREADABLE: Final = "unreadable_answer"


class InvalidCpfs(ValueError):
    """The CPFs given cannot make a lookup (the forms say why before this happens)."""


# --- Asking -------------------------------------------------------------------------


def cnh_lookup_create(
    *,
    owner: User,
    cpfs: Sequence[str],
    batch: bool,
    purpose: str,
    purpose_detail: str = "",
) -> CnhLookup:
    """A new lookup of `cpfs` (one, unless `batch`) for `purpose`, queued for the worker.

    Each CPF is checked again here: an invalid one is never stored nor sent.
    `CnhDailyLimitReached` when they would take `owner` over today's limit.
    """
    digits = [cpf.normalize(value) for value in cpfs]
    if not digits or not all(cpf.is_valid(value) for value in digits):
        raise InvalidCpfs("every CPF must be valid")
    if len(set(digits)) != len(digits):
        raise InvalidCpfs("a CPF appears twice")
    if not batch and len(digits) != 1:
        raise InvalidCpfs("an individual lookup is of one CPF")
    if len(digits) > settings.FLEET_CNH_BATCH_LIMIT:
        raise InvalidCpfs("too many CPFs for one batch")
    if purpose not in CnhPurpose.values:
        raise InvalidCpfs("a lookup states its purpose")
    with transaction.atomic():
        # Two requests at once may both pass: the limit is a brake, not a quota to the unit.
        cnh_daily_limit_check(user=owner, asked=len(digits))
        lookup = CnhLookup.objects.create(
            owner=owner,
            kind=CnhLookupKind.BATCH if batch else CnhLookupKind.SINGLE,
            purpose=purpose,
            purpose_detail=purpose_detail.strip()[:200],
        )
        CnhLookupItem.objects.bulk_create(
            CnhLookupItem(lookup=lookup, position=position, cpf=value)
            for position, value in enumerate(digits, start=1)
        )
        transaction.on_commit(partial(_enqueue, lookup.pk))
        transaction.on_commit(cnh_retention_schedule)
    logger.info(
        "CNH lookup %s (%s, %d CPF(s)) queued for user %s",
        lookup.pk,
        lookup.kind,
        len(digits),
        owner.pk,
    )
    return lookup


def cnh_lookup_retry_failed(*, lookup: CnhLookup, include_unknown: bool = False) -> int:
    """Queue the finished lookup's items that have no result again, together; how many.

    Items whose outcome is unknown may already have been looked up and
    charged: they are sent again only with `include_unknown`, which the
    manager gives by accepting a possible second charge.
    """
    retried = [CnhItemStatus.ERROR]
    if include_unknown:
        retried.append(CnhItemStatus.UNKNOWN)
    with transaction.atomic():
        locked = CnhLookup.objects.select_for_update().get(pk=lookup.pk)
        if not locked.is_final:
            return 0
        count = locked.items.filter(status__in=retried).update(
            status=CnhItemStatus.PENDING,
            result=None,
            error_code="",
            error_message="",
            updated_at=timezone.now(),
        )
        if count:
            _set_status(locked, CnhLookupStatus.QUEUED, attempts=0, finished_at=None)
            transaction.on_commit(partial(_enqueue, locked.pk))
    if count:
        logger.info("CNH lookup %s: %d item(s) queued again", lookup.pk, count)
    return count


def _enqueue(lookup_id: int, run_after: datetime | None = None) -> None:
    worker.enqueue("cnh_lookup_run", lookup_id, run_after=run_after)


# --- Running (the task's body) ----------------------------------------------------------


def cnh_lookup_process(*, lookup_id: int) -> str:
    """One attempt of a lookup: call the API, then store the answer or plan what follows.

    Returns the lookup's new status (or "skipped" when it was not due: done,
    already running, or a duplicate task run before its time). No database
    transaction is held open while the API is called.
    """
    lookup = _claim(lookup_id)
    if lookup is None:
        return "skipped"
    try:
        status = _attempt(lookup)
    finally:
        recovery_settle()
    metrics.CNH_LOOKUPS.labels(str(status)).inc()
    return status


def _attempt(lookup: CnhLookup) -> str:
    items = list(lookup.items.filter(status=CnhItemStatus.PENDING).order_by("position"))
    try:
        if not items:
            answers: Sequence[CnhLookupResult] = ()
        elif lookup.kind == CnhLookupKind.SINGLE:
            answers = [fleet_client().lookup_cnh(items[0].cpf)]
        else:
            answers = fleet_client().lookup_cnh_batch([item.cpf for item in items]).items
    except errors.NotFound as error:
        if lookup.kind != CnhLookupKind.SINGLE:
            return _after_failure(lookup, items, error)
        # An individual lookup of a CPF without a licence: an answer, not a failure.
        return _store(lookup, items, [], missing=_short_code(error.code) or "not-found")
    except errors.FleetError as error:
        return _after_failure(lookup, items, error)
    return _store(lookup, items, answers, missing=MISSING)


def _claim(lookup_id: int) -> CnhLookup | None:
    """Mark the lookup running if it is due, in one UPDATE so that two workers cannot both."""
    now = timezone.now()
    due = Q(status=CnhLookupStatus.QUEUED) | Q(
        status=CnhLookupStatus.WAITING_RETRY, next_attempt_at__lte=now
    )
    claimed = CnhLookup.objects.filter(due, pk=lookup_id).update(
        status=CnhLookupStatus.RUNNING,
        attempts=F("attempts") + 1,
        next_attempt_at=None,
        updated_at=now,
    )
    if not claimed:
        return None
    # Should this worker die during the call, the sweep ends the lookup after its lease.
    recovery_ask()
    return CnhLookup.objects.get(pk=lookup_id)


def _store(
    lookup: CnhLookup,
    items: list[CnhLookupItem],
    answers: Sequence[CnhLookupResult],
    *,
    missing: str,
) -> str:
    """Each item's answer (matched by CPF; an individual lookup has only one); the new status.

    The lookup is done, unless items of an earlier call still have an unknown
    outcome (the manager retried only those in error).
    """
    if lookup.kind == CnhLookupKind.SINGLE and answers:
        by_cpf = {items[0].cpf: answers[0]}
    else:
        by_cpf = {}
        for entry in answers:
            by_cpf.setdefault(cpf.normalize(entry.cpf), entry)
    with transaction.atomic():
        for item in items:
            answer = by_cpf.get(item.cpf)
            if answer is None:
                item.status, item.error_code = CnhItemStatus.ERROR, missing
            elif answer.error is not None:
                item.status = CnhItemStatus.ERROR
                item.error_code = (answer.error.code or "")[:100]
                item.error_message = answer.error.message[:500]
            else:
                item.status, item.result = CnhItemStatus.OK, dict(answer.members)
            item.save(update_fields=["status", "result", "error_code", "error_message"])
        # The answer for a driver's CPF is that driver's licence now.
        driver_licences_attach(items=items)
        unknown = set(
            lookup.items.filter(status=CnhItemStatus.UNKNOWN).values_list("error_code", flat=True)
        )
        status = CnhLookupStatus.UNKNOWN if unknown else CnhLookupStatus.DONE
        _set_status(
            lookup,
            status,
            reason=_unknown_reason(unknown) if unknown else "",
            finished_at=timezone.now(),
        )
    failed = sum(item.status == CnhItemStatus.ERROR for item in items)
    logger.info(
        "CNH lookup %s %s: %d found, %d in error (attempt %d)",
        lookup.pk,
        status,
        len(items) - failed,
        failed,
        lookup.attempts,
    )
    return status


def _after_failure(lookup: CnhLookup, items: list[CnhLookupItem], error: errors.FleetError) -> str:
    """Wait and retry when nothing can have been charged; else end, unknown or failed."""
    reason = _lookup_reason(error)
    if _sent_unanswered(error):
        return _end_unknown(lookup, items, error, code=CnhReason.NO_ANSWER.value)
    if _unreadable_success(error):
        return _end_unknown(lookup, items, error, code=UNREADABLE)
    # A lookup is a POST, charged: sent again by itself only when it cannot have been
    # done (429 or 504, spec 7.3; a connect error). Everything else that was sent, or
    # answered with a 5xx, is not repeated without the manager.
    if (
        errors.resendable(error, method="POST")
        and lookup.attempts < settings.FLEET_CNH_MAX_ATTEMPTS
    ):
        wait = error.retry_after if error.retry_after is not None else _backoff(lookup.attempts)
        when = timezone.now() + timedelta(seconds=wait)
        with transaction.atomic():
            _set_status(
                lookup,
                CnhLookupStatus.WAITING_RETRY,
                next_attempt_at=when,
                reason=reason,
                detail=str(error),
            )
            transaction.on_commit(partial(_enqueue, lookup.pk, run_after=when))
        logger.info(
            "CNH lookup %s: attempt %d failed (%s); next attempt in %.0f s",
            lookup.pk,
            lookup.attempts,
            error,
            wait,
        )
        return CnhLookupStatus.WAITING_RETRY
    code = _short_code(error.code) if isinstance(error, errors.ApiError) else None
    with transaction.atomic():
        for item in items:
            item.status, item.error_code = CnhItemStatus.ERROR, code or reason
            item.save(update_fields=["status", "error_code"])
        _set_status(
            lookup,
            CnhLookupStatus.FAILED,
            reason=reason,
            detail=str(error),
            finished_at=timezone.now(),
        )
    logger.warning(
        "CNH lookup %s failed after %d attempt(s): %s", lookup.pk, lookup.attempts, error
    )
    return CnhLookupStatus.FAILED


def _sent_unanswered(error: errors.FleetError) -> bool:
    """Sent, and no answer came back: the API may have done (and charged) the lookup."""
    return isinstance(error, errors.UpstreamUnavailable) and error.sent and error.status is None


def _unreadable_success(error: errors.FleetError) -> bool:
    """A success status whose body cannot be read: the lookup was probably done, and charged."""
    return (
        isinstance(error, errors.InvalidResponse)
        and error.status is not None
        and 200 <= error.status < 300
    )


def _end_unknown(
    lookup: CnhLookup, items: list[CnhLookupItem], error: errors.FleetError, *, code: str
) -> str:
    """End the lookup without sending it again: its items' outcome is unknown (`code` says why)."""
    with transaction.atomic():
        for item in items:
            item.status, item.error_code = CnhItemStatus.UNKNOWN, code
            item.save(update_fields=["status", "error_code"])
        _set_status(
            lookup,
            CnhLookupStatus.UNKNOWN,
            reason=_unknown_reason({code}),
            detail=str(error),
            finished_at=timezone.now(),
        )
    logger.warning(
        "CNH lookup %s: %s at attempt %d, %d CPF(s) with an unknown outcome "
        "(not sent again: it may have been charged): %s",
        lookup.pk,
        "unreadable answer" if code == UNREADABLE else "no answer",
        lookup.attempts,
        len(items),
        error,
    )
    return CnhLookupStatus.UNKNOWN


def _unknown_reason(codes: set[str]) -> CnhReason:
    """The lookup's reason for its items with an unknown outcome, from their codes."""
    if codes == {UNREADABLE}:
        return CnhReason.INVALID_RESPONSE  # answered, but unreadable
    return CnhReason.NO_ANSWER  # no answer reached the portal (or its worker died waiting)


def _set_status(lookup: CnhLookup, status: str, **fields: Any) -> None:
    """Save the lookup's new state; what is not given is cleared (reason, detail, next time)."""
    values: dict[str, Any] = {"reason": "", "detail": "", "next_attempt_at": None} | fields
    values["detail"] = values["detail"][:500]
    lookup.status = status
    for name, value in values.items():
        setattr(lookup, name, value)
    lookup.save(update_fields=["status", "updated_at", *values])


def _backoff(attempts: int) -> float:
    return min(_BACKOFF_MAX, _BACKOFF_BASE * 2.0 ** max(0, attempts - 1))


def _short_code(code: str | None) -> str | None:
    """`not-found` from a v2 type `urn:fleet-api-v2:error:not-found`; v1 codes as they are."""
    return code.rsplit(":", 1)[-1] if code else None


def _lookup_reason(error: errors.FleetError) -> CnhReason:
    """The error's shared `Outcome`, except where what a lookup was charged depends on
    the difference: a 504 (not charged), a 5xx answer, a call sent that got no answer
    and an unreadable answer are told apart, and any other refusal is `REJECTED`."""
    if isinstance(error, errors.GatewayTimeout):
        return CnhReason.UPSTREAM_TIMEOUT
    if isinstance(error, errors.UpstreamUnavailable) and error.status is not None:
        return CnhReason.SERVER_ERROR
    if isinstance(error, errors.UpstreamUnavailable) and error.sent:
        return CnhReason.NO_ANSWER
    if isinstance(error, errors.InvalidResponse):
        return CnhReason.INVALID_RESPONSE
    if error.outcome in CnhReason.values:  # rate limited, unreachable, credentials, permission
        return CnhReason(error.outcome)
    return CnhReason.REJECTED
