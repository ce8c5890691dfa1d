"""A fine as work with a deadline: its deadlines typed by a person from the paper notice,
and whether it needs an indication, set by a person with a reason; each change audited
(`FineIndicationChange`: who, when, from what to what, from what they know it).

A person's entry is a fact the platform's later events never undo
(`fleet.webhooks.deadlines`); it changes the dashboard's tallies in its transaction
(`fleet.services.tallies`), as every writer of fines does. Each change is made under
the fine's lock, against what the person saw: when someone else changed it meanwhile,
nothing is written and the caller is told (`ChangedMeanwhile`), so that two people
typing at once never silently overwrite each other. The caller has checked that the
user may, and sees the fine.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal
from itertools import batched
from typing import Any, Final

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from fleet import plates
from fleet.models import (
    DeadlineBasis,
    DriverIndication,
    Fine,
    FineIndicationChange,
    Indication,
    IndicationChannel,
    IndicationField,
    IndicationOutcome,
    NeedBasis,
    Notification,
    of_vehicle,
)
from fleet.services.dashboard import INDICATE_SOON_DAYS, fine_figures_prepare
from fleet.services.drivers import driver_names, fines_named
from fleet.services.figures import NIC_MULTIPLIER
from fleet.services.indication_sweep import after_deadline
from fleet.services.list_walks import scope_walked
from fleet.services.paging import EXPORT_CHUNK, streamed
from fleet.services.receipts import CheckedReceipt, receipt_keep
from fleet.services.scopes import VehicleScope, scope_narrowed
from fleet.services.tallies import FineState, fine_tallies_apply
from fleet.webhooks.deadlines import indication_days, notice_says
from fleet.webhooks.facts import folded

logger = logging.getLogger(__name__)

FINE_INDICATION_PERMISSION: Final = "fleet.change_fine_indication"


class ChangedMeanwhile(Exception):
    """The fine's value is no longer the one the person saw: someone changed it."""

    def __init__(self, by: str) -> None:
        super().__init__(by)
        self.by = by  # who changed it last ("" when the platform did)


@dataclass(frozen=True, slots=True)
class Deadlines:
    """What a fine's page says of its deadlines and indication, each with how it is known;
    `days_left` to the indication deadline (negative: overdue), None when none applies."""

    indication: str | None
    indication_basis: str | None
    indication_due: date | None
    indication_due_basis: str | None
    payment_due: date | None
    payment_due_basis: str | None
    notice: date | None  # the notice's day, as sent
    days_left: int | None
    estimate_days: int  # FLEET_INDICATION_DAYS, for the estimate's explanation
    nic: Decimal | None  # the second fine (NIC) to expect if not indicated: twice this one

    @property
    def to_indicate(self) -> bool:
        """Whether its driver is still to be indicated: in time, or late (missed)."""
        return self.indication == Indication.NEEDED

    @property
    def missed(self) -> bool:
        """Still to indicate, its deadline passed: the NIC is to be expected."""
        return self.days_left is not None and self.days_left < 0

    @property
    def days_overdue(self) -> int:
        return -self.days_left if self.days_left is not None and self.days_left < 0 else 0


def fine_deadlines(fine: Fine, *, today: date | None = None) -> Deadlines:
    """`fine`'s deadlines as its page, the list and the exports tell them."""
    today = today or timezone.localdate()
    days_left = None
    if fine.indication == Indication.NEEDED and fine.indication_due is not None:
        days_left = (fine.indication_due - today).days
    return Deadlines(
        indication=fine.indication,
        indication_basis=fine.indication_basis,
        indication_due=fine.indication_due,
        indication_due_basis=fine.indication_due_basis,
        payment_due=fine.payment_due,
        payment_due_basis=fine.payment_due_basis,
        notice=notice_says(fine.payload).notice,
        days_left=days_left,
        estimate_days=indication_days(),
        nic=nic_amount(fine.amount) if fine.indication == Indication.NEEDED else None,
    )


def nic_amount(amount: Decimal | None) -> Decimal | None:
    """The NIC (CTB art. 257 §8) a fine whose driver is not indicated in time brings: twice
    its amount (more for a company that repeats the infraction within twelve months)."""
    return amount * NIC_MULTIPLIER if amount is not None else None


def fine_deadline_type(
    *,
    fine_id: int,
    field: IndicationField,
    day: date,
    seen: str,
    reason: str,
    user: User,
) -> Fine:
    """Set `fine_id`'s `field` (its indication deadline or its payment due date) to `day`,
    as `user` typed it from the notice (`reason`: from what); `seen` is the value the
    user's page showed (`seen_value`), else `ChangedMeanwhile`."""
    basis_field = f"{field.value}_basis"
    with transaction.atomic():
        fine = Fine.objects.select_for_update().get(pk=fine_id)
        counted = FineState.of(fine)
        before: date | None = getattr(fine, field.value)
        before_basis = getattr(fine, basis_field) or ""
        if seen_value(before, before_basis) != seen:
            raise ChangedMeanwhile(_last_by(fine, field, before_basis))
        FineIndicationChange.objects.create(
            fine=fine,
            user=user,
            user_name=_name_of(user),
            field=field,
            before=before.isoformat() if before else "",
            before_basis=before_basis,
            after=day.isoformat(),
            reason=reason.strip(),
        )
        setattr(fine, field.value, day)
        setattr(fine, basis_field, DeadlineBasis.TYPED)
        # A later deadline from the notice ends a missed one (`Fine.indication_missed`).
        fine.save(update_fields=[field.value, basis_field])
        fine_tallies_apply([(counted, FineState.of(fine))])
    fine_figures_prepare()
    logger.info("fine %s: %s typed (user %s)", fine_id, field.value, user.pk)
    return fine


def fine_indication_need_set(
    *, fine_id: int, needed: bool, seen: str, reason: str, user: User
) -> Fine:
    """Mark `fine_id` as needing an indication or not, as `user` decided for `reason`;
    `seen` is the state the user's page showed, else `ChangedMeanwhile`."""
    with transaction.atomic():
        fine = Fine.objects.select_for_update().get(pk=fine_id)
        after = Indication.NEEDED if needed else Indication.NOT_NEEDED
        counted = FineState.of(fine)
        decided = fine.indication in (Indication.NEEDED, Indication.NOT_NEEDED)
        if seen_value(fine.indication, fine.indication_basis or "") != seen or not decided:
            basis = fine.indication_basis or ""
            raise ChangedMeanwhile(_last_by(fine, IndicationField.INDICATION, basis))
        FineIndicationChange.objects.create(
            fine=fine,
            user=user,
            user_name=_name_of(user),
            field=IndicationField.INDICATION,
            before=fine.indication or "",
            before_basis=fine.indication_basis or "",
            after=after,
            reason=reason.strip(),
        )
        fine.indication, fine.indication_basis = after, NeedBasis.TYPED
        fine.save(update_fields=["indication", "indication_basis"])
        fine_tallies_apply([(counted, FineState.of(fine))])
    fine_figures_prepare()
    logger.info("fine %s: indication %s by hand (user %s)", fine_id, after, user.pk)
    return fine


def fine_indicate(
    *,
    fine_id: int,
    driver_id: int,
    channel: IndicationChannel,
    on: date,
    seen: str,
    user: User,
    answer: str = "",
    receipt: CheckedReceipt | None = None,
) -> DriverIndication:
    """Record that `user` indicated `driver_id` as `fine_id`'s driver, `on` that day,
    `channel`: the fine is indicated (out of the queue, its NIC no longer at risk),
    audited. `seen`: the indication state the user's page showed, else `ChangedMeanwhile`
    (two people indicating at once: one wins). `answer`: the platform's, when it was
    sent through it (its id and status), kept in the audit. `receipt`: the proof it was
    sent (`fleet.services.receipts`), kept with it, in the same transaction. The caller
    has checked that the user sees both the fine and the driver."""
    names = driver_names([driver_id])
    with transaction.atomic():
        fine = Fine.objects.select_for_update().get(pk=fine_id)
        counted = FineState.of(fine)
        basis = fine.indication_basis or ""
        fine_indication_as_seen(fine, seen)
        indication = DriverIndication.objects.create(
            fine=fine,
            driver_id=driver_id,
            driver_name=names.get(driver_id, ""),
            channel=channel,
            indicated_on=on,
            user=user,
            user_name=_name_of(user),
        )
        if receipt is not None:
            receipt_keep(indication=indication, receipt=receipt, user=user)
        FineIndicationChange.objects.create(
            fine=fine,
            user=user,
            user_name=_name_of(user),
            field=IndicationField.INDICATION,
            before=fine.indication or "",
            before_basis=basis,
            after=Indication.INDICATED,
            reason=f"{IndicationChannel(channel).label}, {on.isoformat()}"
            + (f"; {answer}" if answer else ""),
        )
        fine.indication, fine.indication_basis = Indication.INDICATED, NeedBasis.TYPED
        fine.save(update_fields=["indication", "indication_basis"])
        fine_tallies_apply([(counted, FineState.of(fine))])
    fine_figures_prepare()
    logger.info("fine %s: driver indicated (user %s)", fine_id, user.pk)
    return indication


def fine_indication_as_seen(fine: Fine, seen: str) -> None:
    """Raise `ChangedMeanwhile` unless `fine` is still to indicate as the user's page
    showed it (`seen`): checked before an indication is sent to the platform, which no
    later refusal here could take back."""
    basis = fine.indication_basis or ""
    if seen_value(fine.indication, basis) != seen or fine.indication != Indication.NEEDED:
        raise ChangedMeanwhile(_last_by(fine, IndicationField.INDICATION, "typed"))


def fine_indication_answer(
    *, fine_id: int, accepted: bool, reason: str, seen: str, user: User
) -> Fine:
    """Record the authority's answer to `fine_id`'s indication: accepted, or refused for
    `reason` (the fine is to indicate again, by the same deadline). `seen` as above."""
    with transaction.atomic():
        fine = Fine.objects.select_for_update().get(pk=fine_id)
        counted = FineState.of(fine)
        basis = fine.indication_basis or ""
        if seen_value(fine.indication, basis) != seen or fine.indication != Indication.INDICATED:
            raise ChangedMeanwhile(_last_by(fine, IndicationField.INDICATION, "typed"))
        indication = fine.indications.first()
        if indication is not None:
            indication.outcome = (
                IndicationOutcome.ACCEPTED if accepted else IndicationOutcome.REFUSED
            )
            indication.outcome_reason = reason.strip()
            indication.outcome_by = _name_of(user)
            indication.outcome_at = timezone.now()
            indication.save(update_fields=["outcome", "outcome_reason", "outcome_by", "outcome_at"])
        after = Indication.ACCEPTED if accepted else Indication.NEEDED
        FineIndicationChange.objects.create(
            fine=fine,
            user=user,
            user_name=_name_of(user),
            field=IndicationField.INDICATION,
            before=fine.indication or "",
            before_basis=basis,
            after=after,
            reason=reason.strip(),
        )
        fine.indication = after
        fine.save(update_fields=["indication"])
        fine_tallies_apply([(counted, FineState.of(fine))])
    fine_figures_prepare()
    logger.info("fine %s: indication %s (user %s)", fine_id, after, user.pk)
    return fine


def fine_indications(fine: Fine) -> list[DriverIndication]:
    """The indications of `fine`'s driver recorded, latest first, each with its receipt's
    name, type and size (not its content)."""
    return list(fine.indications.select_related("receipt").defer("receipt__content"))


def seen_value(value: date | str | None, basis: str) -> str:
    """What a form carries of the value its page showed, to tell a change meanwhile."""
    shown = value.isoformat() if isinstance(value, date) else (value or "")
    return f"{shown}:{basis}"


def fine_indication_changes(fine: Fine) -> list[FineIndicationChange]:
    """The changes people made to `fine`'s deadlines and indication, latest first."""
    return list(fine.indication_changes.all())


def _last_by(fine: Fine, field: IndicationField, basis: str) -> str:
    """Who set `field` as it is now: the person of its last change, when a person's entry
    is what it holds; "" when the platform's or the portal's is."""
    if basis != "typed":
        return ""
    change = fine.indication_changes.filter(field=field).first()
    return change.user_name if change is not None else ""


def _name_of(user: User) -> str:
    return user.get_full_name() or user.get_username()


# --- The queue: the fines still to indicate, by deadline -------------------------------

QUEUE_PAGE: Final = 50
# "Within" filters: the overdue ones, or those due within these many days (today's included).
WITHIN_DAYS: Final = (INDICATE_SOON_DAYS, 30)


@dataclass(frozen=True, slots=True)
class QueueCursor:
    """Where a page of the queue starts: after this deadline and fine (a keyset)."""

    due: date
    fine_id: int

    def __str__(self) -> str:
        return f"{self.due.isoformat()}.{self.fine_id}"

    @classmethod
    def parse(cls, text: str) -> QueueCursor | None:
        """The cursor `str` wrote; None for anything else (the first page)."""
        day, _, fine_id = text.partition(".")
        try:
            return cls(date.fromisoformat(day), int(fine_id)) if fine_id.isdigit() else None
        except ValueError:
            return None


@dataclass(frozen=True, slots=True)
class QueuePage:
    rows: list[tuple[Fine, Deadlines]]
    next_cursor: QueueCursor | None  # None: the last page


def indication_queue_fines(
    *,
    scope: VehicleScope,
    group: str = "",
    plate: str = "",
    driver: int | None = None,
    within: str = "",
    today: date | None = None,
) -> QuerySet[Fine]:
    """The fines of `scope` (narrowed to one of its vehicle `group`s) still to indicate,
    untreated, by deadline (the overdue first): of one vehicle (`plate`, either format),
    of one attributed `driver`, overdue (`within` "overdue") or due within `WITHIN_DAYS`
    days (`within` "7", "30")."""
    today = today or timezone.localdate()
    fines = Fine.objects.filter(
        indication=Indication.NEEDED, treated=False, indication_due__isnull=False
    )
    # A part of the fleet holding many fines walks the queue's index, each fine checked
    # against its plates (a region's first page reads a few hundred); a small one's are
    # found by their plates and sorted (`scope_walked`).
    narrowed = scope_narrowed(scope, group)
    walked = not plate and driver is None and scope_walked(narrowed)
    fines = narrowed.records(fines, walked=walked)
    if plate:
        fines = fines.filter(registration=plates.registration(plate))
    if driver is not None:
        fines = fines.filter(driver_id=driver)
    if within == "overdue":
        fines = fines.filter(indication_due__lt=today)
    elif within.isdigit() and int(within) in WITHIN_DAYS:  # from today, as the dashboard's
        last = today + timedelta(days=int(within))
        fines = fines.filter(indication_due__gte=today, indication_due__lte=last)
    return fines.order_by("indication_due", "pk")


def indication_queue(
    *, after: QueueCursor | None = None, today: date | None = None, **filters: Any
) -> QueuePage:
    """A page of `indication_queue_fines` after `after`, each fine with its deadlines and
    its driver's name (`fines_named`)."""
    today = today or timezone.localdate()
    fines = indication_queue_fines(today=today, **filters)
    if after is not None:
        fines = fines.filter(after_deadline(after.due, after.fine_id))
    found = list(fines[: QUEUE_PAGE + 1])
    page, more = found[:QUEUE_PAGE], len(found) > QUEUE_PAGE
    fines_named(page)
    last = page[-1] if more else None
    cursor = QueueCursor(last.indication_due, last.pk) if last and last.indication_due else None
    return QueuePage([(fine, fine_deadlines(fine, today=today)) for fine in page], cursor)


def indication_queue_export(*, today: date | None = None, **filters: Any) -> Iterator[Fine]:
    """Every fine of the queue, read a chunk at a time, each with its driver's name."""
    fines = indication_queue_fines(today=today, **filters)
    for block in batched(streamed(fines), EXPORT_CHUNK, strict=False):
        fines_named(block)
        yield from block


# --- The platform's "Indicação de condutor" notifications and their fines -------------

# How a notification's fine is found: the notice number it names, or a guess (the nearest
# fine still to indicate of the same vehicle).
BY_NOTICE: Final = "notice"
NEAREST: Final = "nearest"
# The notifications of a vehicle a fine's page looks through for those about it.
NOTIFICATIONS_LOOKED_AT: Final = 20


@dataclass(frozen=True, slots=True)
class NotifiedFine:
    """The fine an indication notification is about, and how it was found."""

    fine: Fine
    how: str  # BY_NOTICE or NEAREST
    deadlines: Deadlines


def asks_for_indication(notification: Notification) -> bool:
    """Whether `notification` is the platform's "Indicação de condutor" (its `type`
    "driver", or that title in any case or accents)."""
    payload = notification.payload if isinstance(notification.payload, dict) else {}
    if payload.get("type") == "driver":
        return True
    return "indicacao de condutor" in folded(notification.title)


def notification_fine(*, scope: VehicleScope, notification: Notification) -> NotifiedFine | None:
    """The fine an indication notification is about, among those `scope` sees: the one
    of the notice number it names (`autoInfracao`), else the same vehicle's fine still to
    indicate whose deadline is nearest (a guess, said so); None when there is none."""
    if not asks_for_indication(notification):
        return None
    payload = notification.payload if isinstance(notification.payload, dict) else {}
    reference = str(payload.get("autoInfracao") or "").strip()
    if reference:
        named = scope.records(Fine.objects.filter(reference=reference)).first()
        if named is not None:
            fines_named([named])
            return NotifiedFine(named, BY_NOTICE, fine_deadlines(named))
    if not notification.registration:
        return None
    nearest = (
        scope.records(
            Fine.objects.filter(
                registration=notification.registration,
                indication=Indication.NEEDED,
                treated=False,
                indication_due__isnull=False,
            )
        )
        .order_by("indication_due", "pk")
        .first()
    )
    if nearest is None:
        return None
    fines_named([nearest])
    return NotifiedFine(nearest, NEAREST, fine_deadlines(nearest))


def fine_notifications(*, scope: VehicleScope, fine: Fine) -> list[Notification]:
    """The indication notifications about `fine` (`notification_fine`), among its
    vehicle's latest `NOTIFICATIONS_LOOKED_AT`."""
    if not fine.registration:
        return []
    # Through the plate index (`of_vehicle`): by a registration's equality alone, SQLite
    # walked the notifications by when received, 70 ms at a million of them.
    latest = scope.records(Notification.objects.filter(of_vehicle(fine.registration)))
    found = []
    for notification in latest.order_by("-received_at", "-pk")[:NOTIFICATIONS_LOOKED_AT]:
        notified = notification_fine(scope=scope, notification=notification)
        if notified is not None and notified.fine.pk == fine.pk:
            found.append(notification)
    return found
