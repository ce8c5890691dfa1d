"""Who had each vehicle and who set a fine's driver, in the admin: read-only, as records
(the history is written by the refreshes of the vehicle list alone, the corrections by
the fine page). A vehicle's periods are found by its plate, in either format."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from fleet import plates
from fleet.admin import _ReadOnly
from fleet.admin.scoping import WholeFleetOnly
from fleet.models import DriverObservation, DriverSpan, FineDriverCorrection


@admin.register(DriverSpan)
class DriverSpanAdmin(WholeFleetOnly, _ReadOnly, admin.ModelAdmin[DriverSpan]):
    list_display = [
        "registration",
        "driver_id",
        "first_seen",
        "last_seen",
        "next_seen",
        "previous_driver_id",
        "previous_seen",
    ]
    search_fields = ["registration"]  # a plate: `get_search_results`
    show_full_result_count = False

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[DriverSpan], search_term: str
    ) -> tuple[QuerySet[DriverSpan], bool]:
        term = search_term.strip()
        if not term:
            return queryset, False
        if term.isdigit():
            return queryset.filter(driver_id=int(term)), False
        return queryset.filter(registration=plates.registration(term)), False


@admin.register(DriverObservation)
class DriverObservationAdmin(WholeFleetOnly, _ReadOnly, admin.ModelAdmin[DriverObservation]):
    list_display = ["seq", "at", "vehicles", "opened", "closed", "took_ms"]
    show_full_result_count = False


@admin.register(FineDriverCorrection)
class FineDriverCorrectionAdmin(WholeFleetOnly, _ReadOnly, admin.ModelAdmin[FineDriverCorrection]):
    list_display = ["at", "user_name", "fine", "from_driver_id", "from_basis", "to_driver_id"]
    list_select_related = ["fine"]
    readonly_fields = [
        "fine",
        "user",
        "user_name",
        "at",
        "from_driver_id",
        "from_basis",
        "to_driver_id",
        "reason",
    ]
    raw_id_fields = ["fine"]
