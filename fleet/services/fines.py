"""Fines and notifications as the pages show them: lists, filters, totals, saved views.

Records come only from webhooks (`fleet.webhooks.processing`); these are reads, but
for the attribution of fines to their drivers. Untreated records come first, then the
most recently changed.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import date, datetime
from decimal import Decimal
from functools import cached_property
from typing import Any, NamedTuple, cast

from django.contrib.auth.models import User
from django.core.cache import cache
from django.core.paginator import Page, Paginator
from django.db import transaction
from django.db.models import Count, F, Q, QuerySet, Sum

from fleet import plates
from fleet.models import (
    Fine,
    Notification,
    SavedFineView,
    TallyDimension,
    Wording,
    of_vehicle,
)
from fleet.services.dashboard import (
    COUNTED,
    Total,
    fine_figures_prepare,
    fine_tallies_total,
    fine_totals,
    local_midnight,
    month_start,
)
from fleet.services.drivers import prefix_end
from fleet.services.scopes import VehicleScope
from fleet.services.tallies import FINE_FIELDS, FineState, fine_tallies_apply, month_key
from fleet.services.vehicles import vehicle_drivers
from fleet.webhooks.payloads import payload_plate, payload_text

PER_PAGE = 50
# Untreated first, then the latest changed.
LIST_ORDER = ("treated", "-updated_at", "-id")
# Rows an export reads from the database at a time.
EXPORT_CHUNK = 500
# Fines attributed to their drivers in one transaction.
ATTRIBUTION_CHUNK = 500


# Records a vehicle's page lists of each kind; the lists it links to have them all.
VEHICLE_LISTED = 10


@dataclass(frozen=True, slots=True)
class VehicleRecords:
    """A vehicle's fines and notifications, as its page sums them up and lists the first."""

    fines: int
    untreated_fines: int
    fines_amount: Decimal  # R$, the fines whose amount could be read
    untreated_amount: Decimal
    notifications: int
    untreated_notifications: int
    # The first VEHICLE_LISTED of each, in the lists' order (untreated first).
    listed_fines: list[Fine]
    listed_notifications: list[Notification]


def vehicle_records(plate: str, *, scope: VehicleScope) -> VehicleRecords:
    """How many fines and notifications name the vehicle `plate`, in either plate format,
    and the first of each: four queries at most. A vehicle outside `scope` has none."""
    registration = plates.registration(plate)  # the records' key for the vehicle
    if not scope.covers(registration):
        registration = "-"  # no record has it
    untreated = Q(treated=False)
    counts = {
        model: model.objects.filter(of_vehicle(registration)).aggregate(
            all=Count("pk"), untreated=Count("pk", filter=untreated), **sums
        )
        for model, sums in (
            (
                Fine,
                {
                    "amount_all": Sum("amount", default=Decimal(0)),
                    "untreated_amount": Sum("amount", filter=untreated, default=Decimal(0)),
                },
            ),
            (Notification, {}),
        )
    }
    fines = Fine.objects.filter(of_vehicle(registration)).order_by(*LIST_ORDER)
    notifications = Notification.objects.filter(of_vehicle(registration)).order_by(*LIST_ORDER)
    return VehicleRecords(
        fines=counts[Fine]["all"],
        untreated_fines=counts[Fine]["untreated"],
        fines_amount=counts[Fine]["amount_all"],
        untreated_amount=counts[Fine]["untreated_amount"],
        notifications=counts[Notification]["all"],
        untreated_notifications=counts[Notification]["untreated"],
        listed_fines=list(fines[:VEHICLE_LISTED]) if counts[Fine]["all"] else [],
        listed_notifications=(
            list(notifications[:VEHICLE_LISTED]) if counts[Notification]["all"] else []
        ),
    )


# How the fines list may be sorted besides its default (untreated first, latest changed).
FINE_SORTS = {
    "-occurred_at": (F("occurred_at").desc(nulls_last=True), "-id"),
    "occurred_at": (F("occurred_at").asc(nulls_last=True), "id"),
    "-amount": (F("amount").desc(nulls_last=True), "-id"),
    "amount": (F("amount").asc(nulls_last=True), "id"),
}


class CappedPaginator(Paginator[Any]):
    """Django's paginator, counting no further than `COUNTED` records (`capped` says it
    stopped there): the count of a filter that selects millions reads ten thousand.

    A page after the first is read in two steps: the ids of its records, skipping those
    before it in the index that orders them (the index alone, not the rows), then
    those records by id. A page deep in the list reads fifty rows, not ten thousand."""

    capped = False

    @cached_property
    def count(self) -> int:
        records = cast(QuerySet[Any], self.object_list)
        # Unordered: any index that selects them will do, read up to the cap.
        found: int = records.order_by()[: COUNTED + 1].count()
        self.capped = found > COUNTED
        return min(found, COUNTED)

    def page(self, number: int | str) -> Page[Any]:
        number = self.validate_number(number)
        bottom = (number - 1) * self.per_page
        if bottom == 0:
            return super().page(number)
        top = bottom + self.per_page
        if top + self.orphans >= self.count:
            top = self.count
        records = cast(QuerySet[Any], self.object_list)
        ids = list(records.values_list("pk", flat=True)[bottom:top])
        found = {record.pk: record for record in records.filter(pk__in=ids)}
        return Page([found[pk] for pk in ids if pk in found], number, self)


@dataclass(frozen=True, slots=True)
class ListTotal:
    """How many records a list's filters select and their R$: `more` when there are more
    than `count` (`COUNTED`), and `amount` then None (unless the tallies have it)."""

    count: int
    amount: Decimal | None
    more: bool = False


def fine_search(*, scope: VehicleScope, page: int = 1, **filters: Any) -> Page[Fine]:
    """One page of fines; `fine_filtered` says what `filters` select and in which order."""
    return CappedPaginator(fine_filtered(scope=scope, **filters), PER_PAGE).get_page(page)


def fine_list_total(*, scope: VehicleScope, **filters: Any) -> ListTotal:
    """The count and R$ of the fines `filters` select: from the tallies (a few rows) when
    the whole fleet is filtered as the dashboard counts it (nothing, untreated, a month,
    without document); else summed over them if they are `COUNTED` or fewer."""
    chosen = {name: value for name, value in filters.items() if value not in (None, "")}
    chosen.pop("sort", None)
    if scope.whole_fleet and (tallied := _tallied(chosen)) is not None:
        return ListTotal(tallied.count, tallied.amount)
    fines = fine_filtered(scope=scope, **filters).order_by()
    counted = fines[: COUNTED + 1].count()
    if counted > COUNTED:
        return ListTotal(COUNTED, None, more=True)
    return ListTotal(counted, fine_totals(fines).amount)


def _tallied(chosen: dict[str, Any]) -> Total | None:
    """The dashboard's tally of these filters, if one counts exactly them."""
    if not chosen:
        return fine_tallies_total(TallyDimension.DAY)
    if chosen == {"treated": False}:
        return fine_tallies_total(TallyDimension.UNTREATED, "")
    if chosen == {"document": False}:
        return fine_tallies_total(TallyDimension.WITHOUT_DOCUMENT, "")
    if set(chosen) == {"month"}:
        return fine_tallies_total(TallyDimension.MONTH, month_key(chosen["month"]))
    return None


# What an export reads of a fine: its columns, and of its payload (decoded once) what
# only the payload has; no model instances (a million fines in seconds, not minutes).
EXPORT_COLUMNS = (
    "payload",
    "reference",
    "amount",
    "occurred_at",
    "treated",
    "link_frame",
    "link",
    "received_at",
    "updated_at",
    "external_id",
)


class ExportedFine(NamedTuple):
    """A fine as an export writes it: its columns, and what its payload says that no
    column holds (the plate and infraction as sent; the amount and moment as sent, for
    when they could not be read)."""

    plate: str
    description: str
    reference: str
    amount: Decimal | None
    amount_text: str
    occurred_at: datetime | None
    occurred_at_text: str
    treated: bool
    link_frame: str
    link: str
    received_at: datetime
    updated_at: datetime
    external_id: str


def fine_export(*, scope: VehicleScope, **filters: Any) -> Iterator[ExportedFine]:
    """Every fine `fine_search` would list, in its order, read a chunk at a time."""
    rows = fine_filtered(scope=scope, **filters).values_list(*EXPORT_COLUMNS)
    for payload, reference, amount, occurred_at, *rest in rows.iterator(EXPORT_CHUNK):
        amount_text = "" if amount is not None else payload_text(payload, "amount")
        occurred_at_text = "" if occurred_at is not None else payload_text(payload, "occurredAt")
        yield ExportedFine(
            payload_plate(payload),
            payload_text(payload, "description"),
            reference,
            amount,
            amount_text,
            occurred_at,
            occurred_at_text,
            *rest,
        )


def fine_get(*, scope: VehicleScope, fine_id: int) -> Fine | None:
    """The fine `fine_id` if `scope` sees it."""
    return scope.records(Fine.objects.filter(pk=fine_id)).first()


def notification_get(*, scope: VehicleScope, notification_id: int) -> Notification | None:
    """The notification `notification_id` if `scope` sees it."""
    return scope.records(Notification.objects.filter(pk=notification_id)).first()


def fine_filtered(
    *,
    scope: VehicleScope,
    q: str = "",
    treated: bool | None = None,
    document: bool | None = None,
    plate: str = "",
    driver: int | None = None,
    month: date | None = None,
    amount_min: Decimal | None = None,
    amount_max: Decimal | None = None,
    received_from: date | None = None,
    sort: str = "",
) -> QuerySet[Fine]:
    """The fines the list's filters select, in the list's order.

    `q` looks in the notice number, the infraction and the platform's id; `treated`;
    `document` (has its official document); `plate` (the vehicle, in either plate
    format); `driver` (the driver id the fine was attributed to); `month` (committed
    in that month, local time; its first day); `amount_min`/`amount_max` (R$, both
    included); `received_from` (received on or after that local day); `sort`, one of
    `FINE_SORTS` (else the default order); only those `scope` sees.
    """
    fines = _records(Fine, scope=scope, q=q, treated=treated, plate=plate)
    if document is not None:
        fines = fines.exclude(link_frame="") if document else fines.filter(link_frame="")
    if driver is not None:
        fines = fines.filter(driver_id=driver)
    if month is not None:
        fines = fines.filter(
            occurred_at__gte=local_midnight(month),
            occurred_at__lt=local_midnight(month_start(month, back=-1)),
        )
    if amount_min is not None:
        fines = fines.filter(amount__gte=amount_min)
    if amount_max is not None:
        fines = fines.filter(amount__lte=amount_max)
    if received_from is not None:
        fines = fines.filter(received_at__gte=local_midnight(received_from))
    return fines.order_by(*FINE_SORTS.get(sort, LIST_ORDER))


def fine_drivers_attribute() -> int:
    """Give the fines without a driver the driver their vehicle has in the vehicle list
    (fetched if need be); how many got one. A chunk of fines to a transaction: read
    under their locks, one UPDATE per driver, the dashboard's tallies by driver with
    them; then the dashboard's figures prepared."""
    registrations = set(
        Fine.objects.filter(driver_id__isnull=True)
        .exclude(registration="")
        .values_list("registration", flat=True)
        .distinct()
    )
    drivers = vehicle_drivers(registrations=registrations) if registrations else None
    if not drivers:
        return 0
    attributed, last = 0, ""
    while True:
        with transaction.atomic():
            # In key order, as processing locks them: neither waits for the other in a circle.
            fines = list(
                Fine.objects.select_for_update()
                .filter(driver_id__isnull=True, registration__in=list(drivers), key__gt=last)
                .order_by("key")
                .only("key", *FINE_FIELDS)[:ATTRIBUTION_CHUNK]
            )
            by_driver: dict[int, list[int]] = {}
            for fine in fines:
                by_driver.setdefault(drivers[fine.registration], []).append(fine.pk)
            for driver, pks in by_driver.items():
                Fine.objects.filter(pk__in=pks).update(driver_id=driver)
            fine_tallies_apply(
                (
                    FineState.of(fine),
                    replace(FineState.of(fine), driver_id=drivers[fine.registration]),
                )
                for fine in fines
            )
        attributed += len(fines)
        if len(fines) < ATTRIBUTION_CHUNK:
            break
        last = fines[-1].key
    if attributed:
        fine_figures_prepare()
    return attributed


def notification_search(
    *,
    scope: VehicleScope,
    q: str = "",
    treated: bool | None = None,
    plate: str = "",
    page: int = 1,
) -> Page[Notification]:
    """One page of the notifications `scope` sees; `q` (in the title, or the
    platform's id), `treated` and `plate` (the vehicle) filter."""
    notifications = _records(Notification, scope=scope, q=q, treated=treated, plate=plate)
    return CappedPaginator(notifications.order_by(*LIST_ORDER), PER_PAGE).get_page(page)


def notification_export(
    *, scope: VehicleScope, q: str = "", treated: bool | None = None, plate: str = ""
) -> Iterator[Notification]:
    """Every notification `notification_search` would list, in its order."""
    notifications = _records(Notification, scope=scope, q=q, treated=treated, plate=plate)
    return notifications.order_by(*LIST_ORDER).iterator(EXPORT_CHUNK)


# Wordings a search looks for at most: a word most infractions have finds these.
SEARCHED_WORDINGS = 20


def _records[R: (Fine, Notification)](
    model: type[R], *, scope: VehicleScope, q: str, treated: bool | None, plate: str
) -> QuerySet[R]:
    records = scope.records(model.objects.all(), walked=not plate and scope_walked(scope))
    if q:
        records = records.filter(records_searched(model, q))
    if plate:
        records = records.filter(of_vehicle(plates.registration(plate)))
    if treated is not None:
        records = records.filter(treated=treated)
    return records


# How long a part of the fleet's way of being listed is kept (`scope_walked`).
WALKED_SECONDS = 3600


def scope_walked(scope: VehicleScope) -> bool:
    """Whether the lists of a part of the fleet walk the list's index, checking each
    fine against the part's plates (`VehicleScope.records`), rather than find the
    part's fines by their plates and sort them all.

    Finding and sorting costs what the part holds, F; walking costs, for the deepest
    page a list counts to, COUNTED of the whole T for each of the part's F: so a part
    walks once F * F > COUNTED * T. F is counted up to there (an index's entries, once
    an hour per part), T is the dashboard's tally; notifications follow the fines."""
    if scope.whole_fleet or scope.empty:
        return False
    threshold = math.isqrt(COUNTED * fine_tallies_total(TallyDimension.DAY).count)
    key = f"fleet:scope-walked:{scope.key}:{threshold.bit_length()}"
    walked: bool | None = cache.get(key)
    if walked is None:
        held = scope.records(Fine.objects.order_by())[: threshold + 1].count()
        walked = held > threshold
        cache.set(key, walked, timeout=WALKED_SECONDS)
    return walked


def records_searched(model: type[Fine] | type[Notification], q: str) -> Q:
    """The records `q` finds, each way through an index: the platform's id; a fine's
    notice number or its beginning (as typed, or in capitals); a wording (a fine's
    infraction, a notification's title) that has `q` (`Wording`: a few rows, not one per
    record)."""
    found = Q(key=f"id:{q}")
    if model is Fine:
        for typed in dict.fromkeys((q, q.upper())):
            found |= Q(reference__gte=typed, reference__lt=prefix_end(typed))
    wordings = list(
        Wording.objects.filter(text__icontains=q).values_list("pk", flat=True)[:SEARCHED_WORDINGS]
    )
    if wordings:
        found |= Q(**{f"{'infraction' if model is Fine else 'heading'}_id__in": wordings})
    return found


def saved_fine_views(*, user: User) -> list[SavedFineView]:
    """The user's saved views of the fines list, by name."""
    return list(SavedFineView.objects.filter(user=user).order_by("name"))


def saved_fine_view_save(*, user: User, name: str, query: str) -> SavedFineView:
    """Save `query` (the list's filters) under `name`; a view of that name is replaced."""
    view, _created = SavedFineView.objects.update_or_create(
        user=user, name=name, defaults={"query": query}
    )
    return view


def saved_fine_view_delete(*, user: User, view_id: int) -> str | None:
    """Delete the user's view `view_id`; its name, or None if the user has no such view."""
    view = SavedFineView.objects.filter(user=user, pk=view_id).first()
    if view is None:
        return None
    view.delete()
    return view.name
