"""Fines and notifications as the pages show them: lists, filters and the dashboard's counts.

Records come only from webhooks (`fleet.webhooks.processing`); these are reads.
Untreated records come first, then the most recently changed.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from django.core.paginator import Page, Paginator
from django.db.models import Count, Min, Q, QuerySet
from django.db.models.fields.json import KT
from django.db.models.functions import Coalesce

from fleet import plates
from fleet.models import Fine, Notification

PER_PAGE = 50
# Untreated first, then the latest changed.
LIST_ORDER = ("treated", "-updated_at", "-id")
# Rows an export reads from the database at a time.
EXPORT_CHUNK = 500


@dataclass(frozen=True, slots=True)
class FinedVehicle:
    """A vehicle with untreated fines, as the dashboard lists it."""

    registration: str  # its plate in the Mercosul format: the fines list's `?plate=`
    plate: str  # as its fines name it (the old format, for a vehicle that has one)
    untreated: int


@dataclass(frozen=True, slots=True)
class RecordCounts:
    untreated_fines: int
    fines_without_document: int
    untreated_notifications: int
    most_fined: list[FinedVehicle]


# Vehicles the dashboard lists by their untreated fines.
MOST_FINED = 5


def record_counts() -> RecordCounts:
    """What the dashboard shows: four queries at most, whatever the number of records."""
    fines = Fine.objects.aggregate(
        untreated=Count("pk", filter=Q(treated=False)),
        without_document=Count("pk", filter=Q(link_frame="")),
    )
    untreated_notifications = Notification.objects.filter(treated=False).count()
    return RecordCounts(
        untreated_fines=fines["untreated"],
        fines_without_document=fines["without_document"],
        untreated_notifications=untreated_notifications,
        most_fined=_most_fined() if fines["untreated"] else [],
    )


def _most_fined() -> list[FinedVehicle]:
    """The vehicles with the most untreated fines, under either of their plates.

    Counted on the plate index alone; the payloads are read for those few only.
    """
    untreated = Fine.objects.filter(treated=False).exclude(registration="")
    top = list(
        untreated.values_list("registration")
        .annotate(untreated=Count("pk"))
        .order_by("-untreated", "registration")[:MOST_FINED]
    )
    # A plate their fines name; the old one sorts first ("ABC-1234", "ABC1234" < "ABC1C34").
    named = dict(
        untreated.filter(registration__in=[registration for registration, _ in top])
        .values_list("registration")
        .annotate(named_plate=Min(Coalesce(KT("payload__carPlate"), KT("payload__plate"))))
    )
    return [
        FinedVehicle(
            registration=registration,
            plate=named.get(registration) or registration,
            untreated=count,
        )
        for registration, count in top
    ]


# Records a vehicle's page lists of each kind; the lists it links to have them all.
VEHICLE_LISTED = 10


@dataclass(frozen=True, slots=True)
class VehicleRecords:
    """A vehicle's fines and notifications, as its page sums them up and lists the first."""

    fines: int
    untreated_fines: int
    notifications: int
    untreated_notifications: int
    # The first VEHICLE_LISTED of each, in the lists' order (untreated first).
    listed_fines: list[Fine]
    listed_notifications: list[Notification]


def vehicle_records(plate: str) -> VehicleRecords:
    """How many fines and notifications name the vehicle `plate`, in either plate format,
    and the first of each: four queries at most."""
    registration = plates.registration(plate)  # the records' key for the vehicle
    counts = {
        model: model.objects.filter(registration=registration).aggregate(
            all=Count("pk"), untreated=Count("pk", filter=Q(treated=False))
        )
        for model in (Fine, Notification)
    }
    fines = Fine.objects.filter(registration=registration).order_by(*LIST_ORDER)
    notifications = Notification.objects.filter(registration=registration).order_by(*LIST_ORDER)
    return VehicleRecords(
        fines=counts[Fine]["all"],
        untreated_fines=counts[Fine]["untreated"],
        notifications=counts[Notification]["all"],
        untreated_notifications=counts[Notification]["untreated"],
        listed_fines=list(fines[:VEHICLE_LISTED]) if counts[Fine]["all"] else [],
        listed_notifications=(
            list(notifications[:VEHICLE_LISTED]) if counts[Notification]["all"] else []
        ),
    )


def fine_search(
    *,
    q: str = "",
    treated: bool | None = None,
    document: bool | None = None,
    plate: str = "",
    page: int = 1,
) -> Page[Fine]:
    """One page of fines; `q` (in the notice number, the infraction or the platform's
    id), `treated`, `document` (has its official document) and `plate` (the vehicle,
    in either plate format) filter."""
    fines = _fines(q=q, treated=treated, document=document, plate=plate)
    return Paginator(fines, PER_PAGE).get_page(page)


def fine_export(
    *, q: str = "", treated: bool | None = None, document: bool | None = None, plate: str = ""
) -> Iterator[Fine]:
    """Every fine `fine_search` would list, in its order, read a chunk at a time."""
    return _fines(q=q, treated=treated, document=document, plate=plate).iterator(EXPORT_CHUNK)


def _fines(*, q: str, treated: bool | None, document: bool | None, plate: str) -> QuerySet[Fine]:
    fines = _records(Fine, q=q, treated=treated, plate=plate)
    if document is not None:
        fines = fines.exclude(link_frame="") if document else fines.filter(link_frame="")
    return fines.order_by(*LIST_ORDER)


def notification_search(
    *, q: str = "", treated: bool | None = None, plate: str = "", page: int = 1
) -> Page[Notification]:
    """One page of notifications; `q` (in the title, the message or the platform's id),
    `treated` and `plate` (the vehicle) filter."""
    notifications = _records(Notification, q=q, treated=treated, plate=plate)
    return Paginator(notifications.order_by(*LIST_ORDER), PER_PAGE).get_page(page)


def notification_export(
    *, q: str = "", treated: bool | None = None, plate: str = ""
) -> Iterator[Notification]:
    """Every notification `notification_search` would list, in its order."""
    notifications = _records(Notification, q=q, treated=treated, plate=plate)
    return notifications.order_by(*LIST_ORDER).iterator(EXPORT_CHUNK)


# Where `q` is looked for: the payload's keys each model shows (`fleet.models`).
_SEARCHED = {Fine: ("autoInfracao", "description"), Notification: ("title", "message")}


def _records[R: (Fine, Notification)](
    model: type[R], *, q: str, treated: bool | None, plate: str
) -> QuerySet[R]:
    records = model.objects.all()
    if q:
        found = Q(external_id__iexact=q)
        for key in _SEARCHED[model]:
            found |= Q(**{f"payload__{key}__icontains": q})
        records = records.filter(found)
    if plate:
        records = records.filter(registration=plates.registration(plate))
    if treated is not None:
        records = records.filter(treated=treated)
    return records
