"""The admin of CNH lookups, and of the record of every display of full CPFs (LGPD).

Lookups are read-only: who looked up how many licences, for what purpose,
and how it went. Their CPFs are shown masked; in full only to users with
`fleet.view_full_cpf`, and each such display is recorded (`CpfDisclosure`),
which is read-only too: nobody edits or deletes that record from here.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.db.models import Count, Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.utils.translation import gettext_lazy as _

from fleet import cpf
from fleet.admin.scoping import AboutPeopleAdministered, WholeFleetOnly
from fleet.models import CnhItemStatus, CnhLookup, CpfDisclosure, CpfDisclosurePlace
from fleet.services.cnh_privacy import cpf_disclosure_record, cpf_full_allowed


@admin.register(CnhLookup)
class CnhLookupAdmin(AboutPeopleAdministered, admin.ModelAdmin[CnhLookup]):
    """Who looked up how many licences, why, and how it went; read-only. Scoped staff see
    the lookups of the people they administer.

    The status "Outcome unknown", and the count of CPFs with one, are lookups
    sent that got no answer: the fleet service may have done them, and
    charged them, without a result reaching the portal.
    """

    person = "owner"
    list_display = [
        "created_at",
        "public_id",
        "owner",
        "kind",
        "purpose",
        "status",
        "unknown_items",
        "attempts",
        "reason",
    ]
    list_filter = ["status", "kind", "purpose", "reason", "created_at"]
    list_select_related = ["owner"]
    search_fields = ["owner__username", "=public_id"]
    date_hierarchy = "created_at"
    fields = [
        "public_id",
        "created_at",
        "owner",
        "kind",
        "purpose",
        "purpose_detail",
        "status",
        "unknown_items",
        "attempts",
        "reason",
        "next_attempt_at",
        "detail",
        "finished_at",
    ]
    readonly_fields = ["public_id", "unknown_items"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[CnhLookup]:
        unknown = Q(items__status=CnhItemStatus.UNKNOWN)
        lookups: QuerySet[CnhLookup] = super().get_queryset(request)
        return lookups.annotate(unknown_count=Count("items", filter=unknown))

    @admin.display(description=_("CPFs with an unknown outcome"), ordering="unknown_count")
    def unknown_items(self, lookup: CnhLookup) -> int:
        count: int = getattr(lookup, "unknown_count", 0)
        return count

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        """The lookup with its CPFs: masked, or in full (recorded) for those allowed."""
        extra_context = dict(extra_context or {})
        lookup = self.get_object(request, unquote(object_id))
        if lookup is not None and self.has_view_permission(request, lookup):
            items = list(lookup.items.order_by("position").values_list("cpf", "status"))
            full = cpf_full_allowed(user=request.user)
            show = cpf.display if full else cpf.mask
            extra_context["cpf_rows"] = [(show(value), status) for value, status in items]
            extra_context["cpfs_in_full"] = full
            if full:
                cpf_disclosure_record(
                    user=request.user,  # type: ignore[arg-type]  # staff: signed in
                    lookup=lookup,
                    place=CpfDisclosurePlace.ADMIN,
                    count=len(items),
                )
        return super().change_view(request, object_id, form_url, extra_context)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: CnhLookup | None = None) -> bool:
        return False


@admin.register(CpfDisclosure)
class CpfDisclosureAdmin(WholeFleetOnly, admin.ModelAdmin[CpfDisclosure]):
    """Every display of full CPFs: who, when, which lookup or driver, where. Read-only, never
    deleted here."""

    list_display = [
        "shown_at",
        "username",
        "lookup_public_id",
        "driver_number",
        "place",
        "cpf_count",
    ]
    list_filter = ["place", "shown_at"]
    search_fields = ["username", "=lookup_public_id", "=driver_number"]
    date_hierarchy = "shown_at"
    fields = ["shown_at", "username", "lookup_public_id", "driver_number", "place", "cpf_count"]
    readonly_fields = [
        "shown_at",
        "username",
        "lookup_public_id",
        "driver_number",
        "place",
        "cpf_count",
    ]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: CpfDisclosure | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: CpfDisclosure | None = None) -> bool:
        return False
