"""Who was driving: each fine's driver, from the history of who had its vehicle when it was
committed (`fleet.services.driver_history`), with how it is known (`DriverBasis`).

- **A moment inside a period** (`first_seen` to `last_seen`, or an open period): its
  driver (`HISTORY`).
- **A moment between two periods** (after the last refresh that saw one driver, before
  the first that saw the next): no driver, both candidates and the window (`UNCERTAIN`).
- **No moment, or older than the history** (or after the vehicle left the list): the
  driver the vehicle list gives when the fine arrives (`LIST`, today's rule, marked).
- **A person's choice** (`fine_driver_correct`, audited): kept; nothing here overrides it.

The writers, each a chunk of fines to a transaction, read under their locks, the
dashboard's tallies by driver in the same transaction: processing a batch
(`fine_drivers_attribute_in_batch`, inside its transaction), the worker after fines
arrive without a list at hand (`fine_drivers_attribute`), after an observation that may
change recent answers (`fine_drivers_follow`), and the backfill
(`fine_drivers_recompute`, `manage.py fine_drivers --recompute`).
"""

from __future__ import annotations

import logging
from bisect import bisect_right
from collections.abc import Callable, Collection, Sequence
from datetime import datetime
from typing import Final, NamedTuple

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Q, QuerySet

from fleet.models import DriverBasis, DriverObservation, DriverSpan, Fine, FineDriverCorrection
from fleet.services.dashboard import fine_figures_prepare
from fleet.services.driver_history import latest_observation
from fleet.services.drivers import driver_names
from fleet.services.tallies import FINE_FIELDS, FineState, fine_tallies_apply
from fleet.services.vehicles import vehicle_drivers
from portal.lib import formatting, worker

logger = logging.getLogger("fleet.services.attribution")

# Who may set a fine's driver by hand (`Fine`'s Meta), within the vehicles they see.
FINE_DRIVER_PERMISSION = "fleet.change_fine_driver"

# Fines attributed in one transaction.
ATTRIBUTION_CHUNK = 500

_FIELDS = ("key", "registration", "driver_basis", "driver_span_id", *FINE_FIELDS)
# What attributing a fine writes.
FINE_DRIVER_FIELDS: Final = ("driver_basis", "driver_id", "driver_span")
# A fine whose moment or vehicle changed is attributed again (unless a person set it).
_MOVES: Final = frozenset({"occurred_at", "registration"})


class Verdict(NamedTuple):
    """A fine's driver (None: none known, or two candidates), how it is known, and the
    period it was read from (for `UNCERTAIN`, the period after the window, which names
    the driver before it)."""

    basis: DriverBasis
    driver_id: int | None
    span_id: int | None = None


class _Span(NamedTuple):
    id: int
    first_seen: datetime
    last_seen: datetime | None
    next_seen: datetime | None
    driver_id: int | None


def fine_verdicts(
    fines: Sequence[Fine], *, list_drivers: Callable[[set[str]], dict[str, int] | None]
) -> list[Verdict | None]:
    """Each fine's verdict, in order: from the history where it covers the fine's moment,
    else from `list_drivers` (the vehicle list's driver of each registration, None when
    no list is at hand: those fines get None, to be attributed later)."""
    spans = _spans_for(fines)
    found: list[Verdict | None] = [
        _from_history(spans.get(fine.registration, ()), fine.occurred_at) for fine in fines
    ]
    wanted = {fine.registration for fine, v in zip(fines, found, strict=True) if v is None}
    drivers = list_drivers(wanted - {""}) if wanted - {""} else {}
    for n, fine in enumerate(fines):
        if found[n] is None:
            if not fine.registration:
                found[n] = Verdict(DriverBasis.LIST, None)
            elif drivers is not None:
                found[n] = Verdict(DriverBasis.LIST, drivers.get(fine.registration))
    return found


def _spans_for(fines: Sequence[Fine]) -> dict[str, list[_Span]]:
    """The periods that may hold the moments of `fines`, or follow a hand-over around
    them, by vehicle, in order: those not ended before the earliest moment, and begun by
    the latest or handed over to after it began. One query."""
    moments = [fine.occurred_at for fine in fines if fine.occurred_at and fine.registration]
    if not moments:
        return {}
    registrations = {fine.registration for fine in fines if fine.occurred_at and fine.registration}
    earliest, latest = min(moments), max(moments)
    rows = (
        DriverSpan.objects.filter(registration__in=registrations)
        .filter(Q(first_seen__lte=latest) | Q(previous_seen__lt=latest))
        .filter(Q(next_seen__isnull=True) | Q(next_seen__gte=earliest))
        .order_by("registration", "first_seen")
        .values_list("registration", "id", "first_seen", "last_seen", "next_seen", "driver_id")
    )
    found: dict[str, list[_Span]] = {}
    for registration, pk, first_seen, last_seen, next_seen, driver_id in rows:
        found.setdefault(registration, []).append(
            _Span(pk, first_seen, last_seen, next_seen, driver_id)
        )
    return found


def _from_history(spans: Sequence[_Span], moment: datetime | None) -> Verdict | None:
    """What the periods of a vehicle say of `moment`; None when they do not cover it.
    An uncertain verdict names the period after the hand-over: it holds both candidates
    and the window (`DriverSpan.previous_driver_id`, `previous_seen`)."""
    if moment is None or not spans:
        return None
    position = bisect_right(spans, moment, key=lambda span: span.first_seen)
    if position == 0:
        return None  # older than the history
    span = spans[position - 1]
    if span.next_seen is None or (span.last_seen is not None and moment <= span.last_seen):
        return Verdict(DriverBasis.HISTORY, span.driver_id, span.id)
    following = spans[position] if position < len(spans) else None
    if following is not None and following.first_seen == span.next_seen:
        return Verdict(DriverBasis.UNCERTAIN, None, following.id)
    return None  # after the vehicle left the list


# --- The writers ----------------------------------------------------------------------


def _apply(fines: Sequence[Fine], verdicts: Sequence[Verdict | None]) -> int:
    """Write the verdicts that change a fine, inside the caller's transaction (which read
    `fines` under their locks), with the tallies; how many changed."""
    changed = []
    for fine, verdict in zip(fines, verdicts, strict=True):
        if verdict is None or fine.driver_basis == DriverBasis.MANUAL:
            continue
        now = (fine.driver_basis, fine.driver_id, fine.driver_span_id)
        if now != (verdict.basis, verdict.driver_id, verdict.span_id):
            changed.append((fine, verdict))
    if not changed:
        return 0
    before = [FineState.of(fine) for fine, _verdict in changed]
    for fine, verdict in changed:
        fine.driver_basis, fine.driver_id, fine.driver_span_id = verdict
    Fine.objects.bulk_update(
        [fine for fine, _verdict in changed], FINE_DRIVER_FIELDS, batch_size=ATTRIBUTION_CHUNK
    )
    fine_tallies_apply(zip(before, [FineState.of(fine) for fine, _v in changed], strict=True))
    return len(changed)


def _attribute_in_chunks(
    selected: QuerySet[Fine],
    *,
    list_drivers: Callable[[set[str]], dict[str, int] | None],
) -> int:
    """Attribute the fines `selected`, in key order, a chunk to a transaction: read under
    their locks (in key order, as processing locks them: neither waits for the other in
    a circle). How many changed; the dashboard's figures prepared after."""
    changed, last = 0, ""
    while True:
        with transaction.atomic():
            fines = list(
                selected.select_for_update()
                .filter(key__gt=last)
                .order_by("key")
                .only(*_FIELDS)[:ATTRIBUTION_CHUNK]
            )
            changed += _apply(fines, fine_verdicts(fines, list_drivers=list_drivers))
        if len(fines) < ATTRIBUTION_CHUNK:
            break
        last = fines[-1].key
    if changed:
        fine_figures_prepare()
    return changed


def fine_drivers_attribute_in_batch(fines: Sequence[Fine]) -> None:
    """Give the fines a batch of deliveries writes, new or moved (`fine_driver_moved`),
    their driver in memory, inside its transaction and before it writes them: from the
    history, else from a vehicle list already at hand (no API call inside the
    transaction). Without one, they are written not attributed yet, and the worker does
    it after the commit (`fine_drivers_attribute`), fetching the list."""
    if not fines:
        return
    verdicts = fine_verdicts(
        fines, list_drivers=lambda wanted: vehicle_drivers(registrations=wanted, fetch=False)
    )
    for fine, verdict in zip(fines, verdicts, strict=True):
        found = verdict or (DriverBasis.PENDING, None, None)
        fine.driver_basis, fine.driver_id, fine.driver_span_id = found
    if None in verdicts:
        transaction.on_commit(_attribution_ask)


def fine_driver_moved(fine: Fine, fields: Collection[str]) -> bool:
    """Whether a fine whose `fields` changed is to be attributed again: its moment or
    vehicle changed, and no person set its driver."""
    return bool(_MOVES.intersection(fields)) and fine.driver_basis != DriverBasis.MANUAL


def _attribution_ask() -> None:
    try:
        worker.enqueue("fine_drivers_attribute_run")
    except Exception:
        logger.exception("could not ask the worker to attribute new fines to their drivers")


def fine_drivers_attribute() -> int:
    """The fines written without a vehicle list at hand, attributed (the list fetched if
    need be); how many got a verdict."""
    pending = Fine.objects.filter(driver_basis=DriverBasis.PENDING)
    registrations = set(pending.exclude(registration="").values_list("registration", flat=True))
    drivers = vehicle_drivers(registrations=registrations) if registrations else {}
    if drivers is None:
        return 0  # no list to read: the next run tries again
    return _attribute_in_chunks(pending, list_drivers=lambda _wanted: drivers)


def fine_drivers_follow(since: datetime) -> int:
    """After an observation: the fines committed since the one before (`since`), whose
    answer it may change, attributed again; the others cannot change. How many did."""
    # Found by when committed (its index: few), then walked by key as every writer locks.
    keys = list(
        Fine.objects.filter(occurred_at__gt=since)
        .exclude(driver_basis__in=(DriverBasis.MANUAL, DriverBasis.PENDING))
        .order_by()
        .values_list("key", flat=True)
    )
    if not keys:
        return 0
    return _attribute_in_chunks(Fine.objects.filter(key__in=keys), list_drivers=_keep_list_answer)


def fine_drivers_recompute(*, since: datetime | None = None) -> int:
    """Attribute again, from the history, every fine committed since `since` and within
    the history (people's corrections kept); how many changed."""
    first = DriverObservation.objects.order_by("seq").values_list("at", flat=True).first()
    if first is None:
        return 0
    since = max(since, first) if since is not None else first
    covered = Fine.objects.filter(occurred_at__gte=since).exclude(
        driver_basis__in=(DriverBasis.MANUAL, DriverBasis.PENDING)
    )
    return _attribute_in_chunks(covered, list_drivers=_keep_list_answer)


def _keep_list_answer(_wanted: set[str]) -> None:
    """A fine the history does not cover keeps the answer it has (None: no verdict)."""
    return None


# --- A person's choice --------------------------------------------------------------


def fine_driver_correct(*, fine_id: int, driver_id: int, reason: str, user: User) -> Fine:
    """Set fine `fine_id`'s driver to `driver_id` for `reason`, as `user` chose: audited
    (who, when, from, to, why), with the dashboard's tallies, in one transaction. The
    caller has checked that `user` may, and sees the fine."""
    reason = reason.strip()
    with transaction.atomic():
        fine = Fine.objects.select_for_update().only(*_FIELDS).get(pk=fine_id)
        before = FineState.of(fine)
        FineDriverCorrection.objects.create(
            fine=fine,
            user=user,
            user_name=_name_of(user),
            from_driver_id=fine.driver_id,
            from_basis=fine.driver_basis,
            to_driver_id=driver_id,
            reason=reason,
        )
        fine.driver_id, fine.driver_basis = driver_id, DriverBasis.MANUAL
        fine.save(update_fields=["driver_id", "driver_basis"])
        fine_tallies_apply([(before, FineState.of(fine))])
    fine_figures_prepare()
    logger.info("fine %s: driver set by hand (user %s)", fine_id, user.pk)
    return fine


def _name_of(user: User) -> str:
    return user.get_full_name() or user.get_username()


# --- How it is known, as the pages show it ----------------------------------------------


class DriverStory(NamedTuple):
    """What the fine page says of who was driving: the driver (id, name) or the
    candidates, how it is known, the period or window (`since`, `until`; `still`: the
    period is still open at the latest refresh, `until` being that refresh), and the
    correction that set it."""

    basis: DriverBasis
    driver: tuple[int, str] | None
    candidates: list[tuple[int | None, str]]
    since: datetime | None
    until: datetime | None
    still: bool
    correction: FineDriverCorrection | None


def fine_driver_story(fine: Fine) -> DriverStory:
    """How fine `fine`'s driver is known, read from its period and its latest correction."""
    basis = DriverBasis(fine.driver_basis)
    span = (
        DriverSpan.objects.filter(pk=fine.driver_span_id).first() if fine.driver_span_id else None
    )
    correction = fine.driver_corrections.first() if basis == DriverBasis.MANUAL else None
    ids = [fine.driver_id]
    if basis == DriverBasis.UNCERTAIN and span is not None:
        ids = [span.previous_driver_id, span.driver_id]
    names = driver_names([i for i in ids if i is not None])

    def named(driver_id: int | None) -> tuple[int | None, str]:
        return driver_id, names.get(driver_id, "") if driver_id is not None else ""

    since = until = None
    still = False
    if basis == DriverBasis.HISTORY and span is not None:
        since, until = span.first_seen, span.last_seen
        if span.next_seen is None:
            latest = latest_observation()
            still, until = True, latest.at if latest is not None else None
    elif basis == DriverBasis.UNCERTAIN and span is not None:
        since, until = span.previous_seen, span.first_seen
    driver = None
    if fine.driver_id is not None and basis != DriverBasis.UNCERTAIN:
        driver = (fine.driver_id, names.get(fine.driver_id, ""))
    return DriverStory(
        basis=basis,
        driver=driver,
        candidates=[named(i) for i in ids] if basis == DriverBasis.UNCERTAIN else [],
        since=since,
        until=until,
        still=still,
        correction=correction,
    )


def fine_drivers_told(fines: Sequence[Fine]) -> dict[int, dict[str, object]]:
    """Who was driving each fine, as an alert tells it (JSON, by fine id): the driver's id
    and name, how it is known (`DriverBasis`' value) and, where uncertain, both
    candidates; the fines not attributed yet are left out. Two queries for the whole
    batch, whatever its size."""
    fines = [f for f in fines if f.driver_basis != DriverBasis.PENDING]
    uncertain = [f.driver_span_id for f in fines if f.driver_basis == DriverBasis.UNCERTAIN]
    spans = {
        pk: [previous, driver]
        for pk, previous, driver in DriverSpan.objects.filter(
            pk__in=[pk for pk in uncertain if pk is not None]
        ).values_list("pk", "previous_driver_id", "driver_id")
    }
    candidates: dict[int, list[int | None]] = {
        fine.pk: spans[fine.driver_span_id]
        for fine in fines
        if fine.driver_basis == DriverBasis.UNCERTAIN and fine.driver_span_id in spans
    }
    wanted = {fine.driver_id for fine in fines} | {i for c in candidates.values() for i in c}
    names = driver_names([i for i in wanted if i is not None])

    def named(driver_id: int | None) -> dict[str, object]:
        return {"id": driver_id, "name": names.get(driver_id, "") if driver_id else ""}

    return {
        fine.pk: {
            **named(fine.driver_id),
            "basis": fine.driver_basis,
            "candidates": [named(i) for i in candidates.get(fine.pk, [])],
        }
        for fine in fines
    }


# --- What a person choosing the driver is offered, and what was chosen before ----------

# Drivers offered first when a person sets a fine's driver (beside the picker).
CANDIDATES_OFFERED: Final = 4


class DriverCandidate(NamedTuple):
    """A driver offered first on a fine's page: who, and why (`since`, `until`: the
    period they had the vehicle, None where open or not known)."""

    driver_id: int
    name: str
    since: datetime | None
    until: datetime | None


def fine_driver_candidates(fine: Fine, story: DriverStory) -> list[DriverCandidate]:
    """The drivers a person is offered first for `fine`: the two candidates of a hand-over,
    else those who had its vehicle nearest when it was committed (the periods around
    that moment; the earliest ones for a fine older than the history), its present
    driver last. Three queries at most, whatever the history's length."""
    if story.basis == DriverBasis.UNCERTAIN:
        # Their periods end and begin at the hand-over, which the story says above.
        return [
            DriverCandidate(driver_id, name, None, None)
            for driver_id, name in story.candidates
            if driver_id is not None
        ]
    if not fine.registration:
        return []
    spans = DriverSpan.objects.filter(registration=fine.registration, driver_id__isnull=False)
    moment = fine.occurred_at
    near = list(
        spans.filter(first_seen__lte=moment).order_by("-first_seen")[:CANDIDATES_OFFERED]
        if moment is not None
        else []
    )
    later = spans.filter(first_seen__gt=moment) if moment is not None else spans
    near += list(later.order_by("first_seen")[:CANDIDATES_OFFERED])
    found: dict[int, DriverSpan] = {}
    for span in near:
        if span.driver_id is not None and span.driver_id != fine.driver_id:
            found.setdefault(span.driver_id, span)
    chosen = list(found.values())[:CANDIDATES_OFFERED]
    names = driver_names([span.driver_id for span in chosen if span.driver_id is not None])
    return [
        DriverCandidate(
            span.driver_id,
            names.get(span.driver_id, ""),
            span.first_seen,
            span.last_seen if span.next_seen is not None else None,
        )
        for span in chosen
        if span.driver_id is not None
    ]


class CorrectionShown(NamedTuple):
    """A person's choice of a fine's driver as the fine's page and the admin tell it:
    from whom (and how they were known) to whom, by whom, when, why; drivers by name."""

    at: datetime
    user_name: str
    from_driver: str
    from_basis: str
    to_driver: str
    reason: str


def fine_driver_corrections(fine: Fine) -> list[CorrectionShown]:
    """Every correction of `fine`'s driver, newest first, drivers named: two queries."""
    corrections = list(fine.driver_corrections.all())
    ids = {c.from_driver_id for c in corrections} | {c.to_driver_id for c in corrections}
    names = driver_names([i for i in ids if i is not None])

    def shown(driver_id: int | None) -> str:
        if driver_id is None:
            return ""
        return formatting.driver(driver_id, names.get(driver_id, ""))

    return [
        CorrectionShown(
            at=correction.at,
            user_name=correction.user_name,
            from_driver=shown(correction.from_driver_id),
            from_basis=correction.from_basis,
            to_driver=shown(correction.to_driver_id),
            reason=correction.reason,
        )
        for correction in corrections
    ]
