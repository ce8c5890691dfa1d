"""Drivers in the admin: the names of the vehicle list's driver ids, their CPFs and
licences. A CPF is typed (never shown back in the form), by users with
`fleet.change_driver_cpf`, and listed masked; the licence is the newest lookup's. An
action looks up the licences of the drivers chosen, as the administrator's lookups."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import OuterRef, QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from fleet import cpf
from fleet.admin.scoping import Scoped
from fleet.models import Driver
from fleet.services.cnh_privacy import CnhDailyLimitReached
from fleet.services.driver_cpfs import driver_cpf, driver_cpf_allowed, driver_cpf_set
from fleet.services.driver_licences import driver_licence, driver_licences_lookup
from fleet.services.scopes import VehicleScope, scope_drivers
from portal.lib.encryption import UndecryptableSecret


class DriverAdminForm(forms.ModelForm[Driver]):
    """The name, and the CPF typed to enter or change it (empty keeps it)."""

    cpf = forms.CharField(
        label=_("Driver's CPF"),
        required=False,
        max_length=20,
        help_text=_("Typed to enter or change it; empty keeps it. It is stored encrypted."),
    )
    cpf_remove = forms.BooleanField(label=_("Remove the CPF, with the licence"), required=False)

    class Meta:
        model = Driver
        fields = ["driver_id", "name"]

    def clean_cpf(self) -> str:
        value = cpf.normalize(self.cleaned_data["cpf"])
        if value and not cpf.is_valid(value):
            raise forms.ValidationError(
                _("This is not a valid CPF: its check digits do not match. Check for a typo.")
            )
        return value


@admin.register(Driver)
class DriverAdmin(Scoped, admin.ModelAdmin[Driver]):
    """Names for the vehicle list's driver ids: what the dashboard and the driver page show
    (the dashboard reads its figures again once a name changed, by the names' version).
    Scoped staff see the drivers their scope sees (`driver_seen`), as the fines list's
    picker finds them."""

    form = DriverAdminForm
    list_display = ["driver_id", "name", "cpf_masked", "licence_shown", "licence_checked_at"]
    list_select_related = ["licence__lookup"]
    search_fields = ["name", "=driver_id"]
    readonly_fields = ["cpf_masked", "licence_shown", "licence_checked_at"]
    actions = ["licences_look_up"]

    def scoped(self, rows: QuerySet[Any], scope: VehicleScope) -> QuerySet[Any]:
        return rows.filter(scope_drivers(scope, OuterRef("driver_id")))

    def get_fields(self, request: HttpRequest, obj: Driver | None = None) -> Any:
        fields = ["driver_id", "name", "cpf_masked", "licence_shown", "licence_checked_at"]
        if driver_cpf_allowed(user=request.user):
            fields[3:3] = ["cpf", "cpf_remove"]
        return fields

    def save_model(self, request: HttpRequest, obj: Driver, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        if not driver_cpf_allowed(user=request.user):
            return
        if form.cleaned_data.get("cpf_remove"):
            driver_cpf_set(driver=obj, value="")
        elif form.cleaned_data.get("cpf"):
            driver_cpf_set(driver=obj, value=form.cleaned_data["cpf"])

    @admin.display(description=_("CPF"))
    def cpf_masked(self, driver: Driver) -> str:
        if not driver.cpf_encrypted:
            return "—"
        try:
            return cpf.mask(driver_cpf(driver))
        except UndecryptableSecret:  # a key removed too early: still masked
            return cpf.mask("")

    @admin.display(description=_("licence"))
    def licence_shown(self, driver: Driver) -> str:
        licence = driver_licence(driver)
        if licence is None:
            return "—"
        return str(licence.situation_shown if licence.valid else licence.problem)

    @admin.action(description=_("Look up the licences of the selected drivers"))
    def licences_look_up(self, request: HttpRequest, queryset: QuerySet[Driver]) -> None:
        try:
            lookups = driver_licences_lookup(drivers=queryset, user=request.user)  # type: ignore[arg-type]
        except CnhDailyLimitReached as reached:
            self.message_user(
                request,
                _(
                    "These drivers have %(asked)d CPFs, more than the %(remaining)d you may "
                    "still look up today. Nothing was sent: choose fewer drivers, or run "
                    "manage.py driver_licences."
                )
                % {"asked": reached.asked, "remaining": reached.allowance.remaining},
                messages.ERROR,
            )
            return
        self.message_user(
            request,
            ngettext(
                "%(count)d licence lookup was queued; its answers become the drivers' licences.",
                "%(count)d licence lookups were queued; their answers become the drivers' "
                "licences.",
                len(lookups),
            )
            % {"count": len(lookups)},
            messages.SUCCESS,
        )
