"""Who had each vehicle, who set a fine's driver, who changed its deadlines and who
indicated its driver (with the receipt's name, type and size, never its bytes), in the
admin: read-only, as records (the history is written by the refreshes of the vehicle list
alone, the corrections and deadlines by the fine page). A vehicle's periods, and what was
done to its fines, are found by its plate, in either format."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import Model, OuterRef, QuerySet, Subquery
from django.http import HttpRequest
from django.template.defaultfilters import filesizeformat
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from fleet import plates
from fleet.admin import _ReadOnly
from fleet.admin.scoping import WholeFleetOnly
from fleet.models import (
    BASIS_MARKS,
    Driver,
    DriverBasis,
    DriverIndication,
    DriverObservation,
    DriverSpan,
    Fine,
    FineDriverCorrection,
    FineIndicationChange,
    of_vehicle,
)
from portal.lib import formatting


class _ByFine[M: Model](admin.ModelAdmin[M]):
    """A record of something done to a fine, found by its fine's id or by the plate of the
    fine's vehicle (in either format): the fine's plate index, then the record's own of
    fines."""

    search_fields = ["fine__registration"]  # the search box; what it finds: below
    search_help_text = _("A plate (ABC-1234 or ABC1C34) or a fine's id.")

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[M], search_term: str
    ) -> tuple[QuerySet[M], bool]:
        term = search_term.strip()
        if not term:
            return queryset, False
        if term.isdigit():
            return queryset.filter(fine_id=int(term)), False
        if not plates.is_valid(term):
            return queryset.none(), False
        fines = Fine.objects.filter(of_vehicle(plates.registration(term))).values("pk")
        return queryset.filter(fine__in=fines), False


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
class FineDriverCorrectionAdmin(WholeFleetOnly, _ReadOnly, _ByFine[FineDriverCorrection]):
    """Each correction from whom to whom, by name (the ids kept beside, on its page)."""

    list_display = ["at", "user_name", "fine", "from_driver", "to_driver", "reason"]
    list_select_related = ["fine"]
    readonly_fields = [
        "fine",
        "user",
        "user_name",
        "at",
        "from_driver",
        "from_driver_id",
        "to_driver",
        "to_driver_id",
        "reason",
    ]
    raw_id_fields = ["fine"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[FineDriverCorrection]:
        # Both names in the page's one query (a subquery each), not one per row.
        def name_of(field: str) -> Subquery:
            return Subquery(Driver.objects.filter(driver_id=OuterRef(field)).values("name")[:1])

        return (
            super()
            .get_queryset(request)
            .annotate(from_name=name_of("from_driver_id"), to_name=name_of("to_driver_id"))
        )

    @admin.display(description=_("from"))
    def from_driver(self, obj: FineDriverCorrection) -> str:
        known = f" ({BASIS_MARKS[DriverBasis(obj.from_basis)][0]})" if obj.from_basis else ""
        if obj.from_driver_id is None:
            return f"—{known}"
        return (
            f"{formatting.driver(obj.from_driver_id, getattr(obj, 'from_name', '') or '')}{known}"
        )

    @admin.display(description=_("to"))
    def to_driver(self, obj: FineDriverCorrection) -> str:
        return formatting.driver(obj.to_driver_id, getattr(obj, "to_name", "") or "")


@admin.register(FineIndicationChange)
class FineIndicationChangeAdmin(WholeFleetOnly, _ReadOnly, _ByFine[FineIndicationChange]):
    list_display = ["at", "by", "fine", "field", "before_value", "after_value"]
    list_filter = ["field"]
    list_select_related = ["fine"]
    readonly_fields = [
        "fine",
        "user",
        "user_name",
        "at",
        "field",
        "before",
        "before_basis",
        "after",
        "reason",
    ]
    raw_id_fields = ["fine"]

    @admin.display(description=_("by"), ordering="user_name")
    def by(self, obj: FineIndicationChange) -> str:
        """The person, or the portal (a deadline that passed: the worker's daily run)."""
        return obj.user_name or str(_("the portal: the deadline passed"))

    @admin.display(description=_("before"))
    def before_value(self, obj: FineIndicationChange) -> str:
        known = f" ({obj.before_basis_shown})" if obj.before_basis else ""
        return f"{obj.before_shown or '—'}{known}"

    @admin.display(description=_("after"))
    def after_value(self, obj: FineIndicationChange) -> str:
        return obj.after_shown or "—"


@admin.register(DriverIndication)
class DriverIndicationAdmin(WholeFleetOnly, _ReadOnly, _ByFine[DriverIndication]):
    list_display = ["at", "user_name", "fine", "driver_id", "channel", "indicated_on", "outcome"]
    list_filter = ["channel", "outcome"]
    list_select_related = ["fine"]
    readonly_fields = [
        "fine",
        "driver_id",
        "driver_name",
        "channel",
        "indicated_on",
        "user",
        "user_name",
        "at",
        "outcome",
        "outcome_reason",
        "outcome_by",
        "outcome_at",
        "receipt_shown",
    ]
    raw_id_fields = ["fine"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[DriverIndication]:
        # The receipt's name, type and size; its content is only read by its download.
        return super().get_queryset(request).select_related("receipt").defer("receipt__content")

    @admin.display(description=_("receipt"))
    def receipt_shown(self, obj: DriverIndication) -> str:
        """The receipt's name, type and size, linked to its download (the fine page's,
        scoped as the fine is)."""
        receipt = getattr(obj, "receipt", None)
        if receipt is None:
            return "—"
        url = reverse(
            "fleet:fine_indication_receipt",
            kwargs={"fine_id": obj.fine_id, "indication_id": obj.pk},
        )
        return format_html(
            '<a href="{}" download>{}</a> ({}, {})',
            url,
            receipt.name,
            receipt.kind,
            filesizeformat(receipt.size),
        )
