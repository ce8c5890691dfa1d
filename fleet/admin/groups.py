"""The admin of vehicle groups: their plates, their members, and the identity provider
groups that give them.

A group may hold tens of thousands of plates: its page lists them a page at a time and
changes them through two lists typed or pasted (plates to add, plates to remove), never
a form row per plate; a CSV file fills many groups at once ("Import plates from CSV").
Every change of plates goes through `fleet.services.vehicle_groups`, which counts a
revision of the group so that its members see it at their next page.

Members given by hand are added and removed here; those an identity provider's groups
give are shown read-only: the provider's groups claim decides them at every sign-in,
through the mappings below them.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.auth import get_permission_codename
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Count, IntegerField, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern, path
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from fleet import plates
from fleet.admin.scoping import AboutGroupsScoped, GroupsScoped, groups_held, people_choosable
from fleet.models import DirectoryGroup, VehicleGroup, VehicleGroupMember, VehicleGroupPlate
from fleet.services.scopes import WHOLE_FLEET, VehicleScope, scope_of
from fleet.services.vehicle_groups import (
    MAX_CHARACTERS,
    RefusedLine,
    VehicleGroupImportError,
    plate_list_read,
    vehicle_group_plates_remove,
    vehicle_groups_import,
    vehicle_groups_import_bytes,
)
from portal.lib.identity import identity_providers

_PLATES_PER_PAGE = 100
_ERRORS_LISTED = 20


class VehicleGroupForm(forms.ModelForm[VehicleGroup]):
    # Whose vehicles the plates typed may be (`VehicleGroupAdmin.get_form` says).
    scope: VehicleScope = WHOLE_FLEET

    plates_add = forms.CharField(
        label=_("Add plates"),
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 5, "spellcheck": "false", "autocomplete": "off"}),
        help_text=_("One plate per line, old (ABC-1234) or Mercosul (ABC1D23)."),
    )
    plates_remove = forms.CharField(
        label=_("Remove plates"),
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false", "autocomplete": "off"}),
        help_text=_("One plate per line, in either format: the vehicle leaves this group."),
    )

    class Meta:
        model = VehicleGroup
        fields = ["name", "description"]

    def clean_name(self) -> str:
        name = " ".join(str(self.cleaned_data["name"]).split())
        others = VehicleGroup.objects.exclude(pk=self.instance.pk or 0)
        # The import finds a group by its name in any case: two must differ by more.
        if any(
            other.casefold() == name.casefold() for other in others.values_list("name", flat=True)
        ):
            raise forms.ValidationError(
                _("There is already a group of this name (in another case)."), code="unique"
            )
        return name

    def clean_plates_add(self) -> list[str]:
        return self._plates("plates_add")

    def clean_plates_remove(self) -> list[str]:
        return self._plates("plates_remove")

    def _plates(self, name: str) -> list[str]:
        """The lines typed, once every one is a plate (nothing is changed otherwise)."""
        lines = str(self.cleaned_data.get(name) or "").splitlines()
        try:
            read = plate_list_read(lines, scope=self.scope)
        except VehicleGroupImportError as exc:
            raise forms.ValidationError(str(exc), code="too_long") from exc
        if read.refused:
            raise forms.ValidationError(_refusals(read.refused), code="invalid_plates")
        return lines


class HandMemberFormSet(forms.BaseInlineFormSet[VehicleGroupMember, VehicleGroup, Any]):
    def clean(self) -> None:
        super().clean()
        seen: set[int] = set()
        for form in self.forms:
            user = form.cleaned_data.get("user") if hasattr(form, "cleaned_data") else None
            if user is None or form.cleaned_data.get("DELETE"):
                continue
            if user.pk in seen:
                raise forms.ValidationError(
                    gettext("%(user)s is listed twice.") % {"user": user}, code="duplicate"
                )
            seen.add(user.pk)


_TABULAR = "admin/fleet/vehiclegroup/tabular.html"


class HandMemberInline(admin.TabularInline[VehicleGroupMember, VehicleGroup]):
    """Members put in the group by hand: kept until removed here (or `vehicle_groups revoke`)."""

    model = VehicleGroupMember
    template = _TABULAR
    formset = HandMemberFormSet
    fields = ["user", "granted_at"]
    readonly_fields = ["granted_at"]
    autocomplete_fields = ["user"]
    extra = 0
    verbose_name = _("member given by hand")
    verbose_name_plural = _("members given by hand")

    def get_queryset(self, request: HttpRequest) -> QuerySet[VehicleGroupMember]:
        return super().get_queryset(request).filter(provider="").order_by("user__username")

    def formfield_for_foreignkey(
        self, db_field: Any, request: HttpRequest, **kwargs: Any
    ) -> forms.ModelChoiceField[Any] | None:
        if db_field.name == "user":
            kwargs["queryset"] = people_choosable(request)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)


class DirectoryMemberInline(admin.TabularInline[VehicleGroupMember, VehicleGroup]):
    """Members an identity provider's groups give: read-only, its next sign-in decides."""

    model = VehicleGroupMember
    template = _TABULAR
    fields = ["user", "provider", "granted_at"]
    readonly_fields = ["user", "provider", "granted_at"]
    extra = 0
    verbose_name = _("member given by an identity provider")
    verbose_name_plural = _("members given by identity providers (applied at each sign-in)")

    def get_queryset(self, request: HttpRequest) -> QuerySet[VehicleGroupMember]:
        queryset = super().get_queryset(request).exclude(provider="")
        return queryset.select_related("user").order_by("provider", "user__username")

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class _ProviderField:
    """The identity provider of a mapping, chosen among those configured; typed when none is."""

    def formfield_for_dbfield(
        self, db_field: Any, request: HttpRequest, **kwargs: Any
    ) -> forms.Field | None:
        if db_field.name == "provider":
            return _provider_field(request)
        if db_field.name == "value":
            kwargs["help_text"] = _(
                "A value of the provider's groups claim: whoever holds it is put in the "
                "vehicle group at their next sign-in."
            )
        field: forms.Field | None = super().formfield_for_dbfield(  # type: ignore[misc]
            db_field, request, **kwargs
        )
        return field


class DirectoryGroupInline(_ProviderField, admin.TabularInline[DirectoryGroup, VehicleGroup]):
    model = DirectoryGroup
    template = _TABULAR
    fields = ["provider", "value"]
    extra = 0
    verbose_name = _("group of an identity provider that gives this group")
    verbose_name_plural = _("groups of identity providers that give this group")


@admin.register(VehicleGroup)
class VehicleGroupAdmin(GroupsScoped, admin.ModelAdmin[VehicleGroup]):
    form = VehicleGroupForm
    change_form_template = "admin/fleet/vehiclegroup/change_form.html"
    change_list_template = "admin/fleet/vehiclegroup/change_list.html"
    import_template = "admin/fleet/vehiclegroup/import.html"
    fieldsets = [
        (None, {"fields": ["name", "description"]}),
        (_("Change the vehicles"), {"fields": ["plates_add", "plates_remove"]}),
    ]
    list_display = ["name", "vehicle_count", "member_count", "description"]
    search_fields = ["name", "description"]
    inlines = [HandMemberInline, DirectoryMemberInline, DirectoryGroupInline]

    def get_form(
        self,
        request: HttpRequest,
        obj: VehicleGroup | None = None,
        change: bool = False,
        **kwargs: Any,
    ) -> Any:
        form = super().get_form(request, obj, change=change, **kwargs)
        return type(form.__name__, (form,), {"scope": scope_of(request.user)})

    def get_fieldsets(self, request: HttpRequest, obj: VehicleGroup | None = None) -> Any:
        if self.has_change_permission(request, obj) or obj is None:
            return super().get_fieldsets(request, obj)
        return self.fieldsets[:1]  # who may only look changes no vehicle

    def get_queryset(self, request: HttpRequest) -> QuerySet[VehicleGroup]:
        # Counted in subqueries: a join of plates and members would multiply them.
        vehicles = _count(VehicleGroupPlate.objects.filter(group=OuterRef("pk")), "pk")
        members = _count(VehicleGroupMember.objects.filter(group=OuterRef("pk")), "user")
        groups: QuerySet[VehicleGroup] = super().get_queryset(request)
        return groups.annotate(
            vehicle_total=Coalesce(Subquery(vehicles), 0, output_field=IntegerField()),
            member_total=Coalesce(Subquery(members), 0, output_field=IntegerField()),
        )

    @admin.display(description=_("vehicles"), ordering="vehicle_total")
    def vehicle_count(self, group: VehicleGroup) -> int:
        count: int = getattr(group, "vehicle_total", 0)
        return count

    @admin.display(description=_("members"), ordering="member_total")
    def member_count(self, group: VehicleGroup) -> int:
        count: int = getattr(group, "member_total", 0)
        return count

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[VehicleGroup], search_term: str
    ) -> tuple[QuerySet[VehicleGroup], bool]:
        """By name or description, and the groups of a vehicle when the term is its plate
        (typed in either format)."""
        found, may_have_duplicates = super().get_search_results(request, queryset, search_term)
        term = search_term.strip()
        if plates.is_valid(term):
            holding = VehicleGroupPlate.objects.filter(registration=plates.registration(term))
            found |= queryset.filter(pk__in=holding.values("group_id"))
        return found, may_have_duplicates

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        super().save_related(request, form, formsets, change)
        group = form.instance
        if added := form.cleaned_data.get("plates_add"):
            report = vehicle_groups_import(added, group=group)
            added_text = (
                ngettext(
                    "%(count)d vehicle added to %(group)s.",
                    "%(count)d vehicles added to %(group)s.",
                    report.plates_added,
                )
                if report.plates_added
                else gettext("No vehicle added to %(group)s.")
            )
            self.message_user(
                request,
                added_text % {"count": report.plates_added, "group": group}
                + _already(report.already_present),
                messages.SUCCESS,
            )
        if removing := form.cleaned_data.get("plates_remove"):
            registrations = plate_list_read(removing).registrations
            removed = vehicle_group_plates_remove(group=group, registrations=registrations)
            self.message_user(
                request,
                (
                    ngettext(
                        "%(count)d vehicle removed from %(group)s.",
                        "%(count)d vehicles removed from %(group)s.",
                        removed,
                    )
                    if removed
                    else gettext("No vehicle removed from %(group)s: none was in it.")
                )
                % {"count": removed, "group": group},
                messages.SUCCESS,
            )

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        """The group's vehicles a page at a time, beside its form."""
        extra_context = dict(extra_context or {})
        if object_id.isdigit():
            held = VehicleGroupPlate.objects.filter(group_id=int(object_id))
            registrations = held.order_by("registration").values_list("registration", flat=True)
            page = Paginator(registrations, _PLATES_PER_PAGE)
            shown = page.get_page(request.GET.get("plates_page"))
            extra_context["plate_page"] = shown
            extra_context["plate_rows"] = [
                (
                    registration,
                    plates.display(old) if (old := plates.old_plate(registration)) else "",
                )
                for registration in shown
            ]
        return super().change_view(request, object_id, form_url, extra_context)

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        extra_context = dict(extra_context or {})
        extra_context["has_import_permission"] = self._may_import(request)
        return super().changelist_view(request, extra_context)

    def get_urls(self) -> list[URLPattern]:
        name = f"{self.opts.app_label}_{self.opts.model_name}_import"
        view = self.admin_site.admin_view(self.import_view)
        return [path("import/", view, name=name), *super().get_urls()]

    def import_view(self, request: HttpRequest) -> HttpResponse:
        """Upload a CSV of `plate,group` rows, or a list of plates into one group; the
        report lists the refused lines by number. Staff limited to their groups import
        into those only (other rows are refused) and create none."""
        if not self._may_import(request):
            raise PermissionDenied
        scope = scope_of(request.user)
        report = None
        sent = (request.POST, request.FILES) if request.method == "POST" else ()
        form = VehicleGroupImportForm(
            *sent, groups=groups_held(request), creates=scope.may_create_groups
        )
        if form.is_valid():
            try:
                report = vehicle_groups_import_bytes(
                    form.cleaned_data["file"].read(MAX_CHARACTERS + 1),
                    group=form.cleaned_data["group"],
                    scope=scope,
                )
            except VehicleGroupImportError as exc:
                form.add_error("file", str(exc))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": gettext("Import plates from CSV"),
            "form": form,
            "report": report,
        }
        return TemplateResponse(request, self.import_template, context)

    def _may_import(self, request: HttpRequest) -> bool:
        # An import creates groups and changes their vehicles: for those with the rights to
        # add and change groups (creating them needs the whole fleet too: the service says).
        add = f"{self.opts.app_label}.{get_permission_codename('add', self.opts)}"
        return request.user.has_perm(add) and self.has_change_permission(request)


@admin.register(DirectoryGroup)
class DirectoryGroupAdmin(_ProviderField, AboutGroupsScoped, admin.ModelAdmin[DirectoryGroup]):
    """Every mapping at a glance: which value of which provider's groups gives which group."""

    list_display = ["provider", "value", "group"]
    list_filter = ["provider"]
    list_select_related = ["group"]
    search_fields = ["value", "group__name"]
    autocomplete_fields = ["group"]


class VehicleGroupImportForm(forms.Form):
    file = forms.FileField(
        label=_("CSV file"),
        help_text=_(
            "One vehicle per line: its plate, a comma (or a semicolon) and its group's name; "
            "groups that do not exist yet are created. A first line “plate,group” is skipped."
        ),
        widget=forms.ClearableFileInput(attrs={"accept": ".csv,.txt,text/csv,text/plain"}),
    )
    group = forms.ModelChoiceField(
        queryset=VehicleGroup.objects.none(),
        required=False,
        label=_("or, all into the group"),
        help_text=_("Then the file lists one plate per line, without a group's name."),
    )

    def __init__(
        self, *args: Any, groups: QuerySet[VehicleGroup], creates: bool, **kwargs: Any
    ) -> None:
        """`groups`: those the file may name or be imported into; `creates`: whether the
        groups it names that do not exist are created."""
        super().__init__(*args, **kwargs)
        group_field = self.fields["group"]
        assert isinstance(group_field, forms.ModelChoiceField)
        group_field.queryset = groups
        if not creates:
            self.fields["file"].help_text = _(
                "One vehicle per line: its plate, a comma (or a semicolon) and the name of "
                "one of your groups (only staff who see the whole fleet create groups). A "
                "first line “plate,group” is skipped."
            )


def _provider_field(request: HttpRequest) -> forms.Field:
    configured = [(sub_id, f"{name} ({sub_id})") for sub_id, name in identity_providers(request)]
    if not configured:
        return forms.CharField(
            label=_("identity provider"),
            max_length=200,
            help_text=_("No identity provider is configured: type the provider's id."),
        )
    known = {value for value, _label in configured}
    stored = DirectoryGroup.objects.exclude(provider__in=known).values_list("provider", flat=True)
    gone = [
        (value, gettext("%(provider)s (not configured)") % {"provider": value})
        for value in sorted(set(stored))
    ]
    return forms.ChoiceField(
        label=_("identity provider"), choices=[("", "---------"), *configured, *gone]
    )


def _count(related: QuerySet[Any], field: str) -> QuerySet[Any]:
    """One row per group: how many distinct `field` values `related` holds for it."""
    counted: QuerySet[Any] = (
        related.order_by().values("group").annotate(n=Count(field, distinct=True)).values("n")
    )
    return counted


def _already(count: int) -> str:
    if not count:
        return ""
    return " " + ngettext(
        "%(count)d was in it already.", "%(count)d were in it already.", count
    ) % {"count": count}


def _refusals(refused: list[RefusedLine]) -> list[str]:
    listed = [
        gettext("Line %(number)d: %(reason)s") % {"number": line.number, "reason": line.reason}
        for line in refused[:_ERRORS_LISTED]
    ]
    if (more := len(refused) - _ERRORS_LISTED) > 0:
        listed.append(
            ngettext("And %(count)d more line.", "And %(count)d more lines.", more)
            % {"count": more}
        )
    return listed
