"""Forms of the portal's own pages."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any, ClassVar
from urllib.parse import urlencode

from django import forms
from django.http import QueryDict
from django.utils.formats import date_format
from django.utils.translation import gettext_lazy as _
from django_stubs_ext import StrOrPromise

from fleet.forms_indications import driver_picker, driver_picker_asks, plate_typed
from fleet.models import DriverBasis, MintOutcome
from fleet.services.drivers import DriverChoice, driver_id_typed, drivers_find
from fleet.services.fines import ESTABLISHED
from fleet.services.scopes import WHOLE_FLEET, VehicleScope
from fleet.services.sso import MintFailed
from portal.lib import formatting


class FleetAccountForm(forms.Form):
    email = forms.EmailField(
        label=_("Fleet login e-mail"),
        widget=forms.EmailInput(attrs={"autocomplete": "username"}),
    )
    password = forms.CharField(
        label=_("Fleet password"),
        strip=False,
        # Never sent back to the browser, not even after a failed check.
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}, render_value=False),
        help_text=_(
            "Checked with the fleet application before it is saved, then stored encrypted."
        ),
    )

    def add_failure(self, failure: MintFailed) -> None:
        """Explain why the fleet login could not be checked."""
        if failure.outcome == MintOutcome.LOGIN_REJECTED:
            self.add_error(
                "password",
                _(
                    "The fleet application refused this e-mail or password. "
                    "Check them and try again."
                ),
            )
        elif failure.outcome == MintOutcome.RATE_LIMITED:
            self.add_error(
                None,
                _("The fleet service is busy. Try again in %(seconds)s s.")
                % {"seconds": round(failure.retry_after or 30)},
            )
        elif failure.outcome == MintOutcome.UNAVAILABLE:
            self.add_error(
                None, _("The fleet service did not answer. Nothing was saved; try again.")
            )
        elif failure.outcome == MintOutcome.PERMISSION_DENIED:
            self.add_error(
                None,
                _(
                    "The portal's fleet account has no permission for this company. "
                    "Ask your fleet administrator."
                ),
            )
        elif failure.code or failure.message:
            # A refusal the portal does not know: the vendor's own words, not a guess.
            self.add_error(
                None,
                _(
                    "The fleet application refused this login: “%(message)s” "
                    "(code %(code)s, trace %(trace)s). Nothing was saved."
                )
                % {
                    "message": failure.message or failure.outcome.label,
                    "code": failure.code or "—",
                    "trace": failure.trace_id or "—",
                },
            )
        else:
            self.add_error(
                None,
                _(
                    "The portal could not check your fleet login (%(reason)s). "
                    "Nothing was saved; an administrator has the details."
                )
                % {"reason": failure.outcome.label},
            )


@dataclass(frozen=True)
class FilterChip:
    """A filter a list applies, as its chip shows it (`text`), and the list's address
    without it (`address`): a phone's folded filters are summed up by these."""

    text: str
    address: str


class ListFilterForm(forms.Form):
    """A list's query string read as its filters (`filters`), and written back for the
    links that keep them (`query_string`): one page, or every page (`every_page`); the
    filters applied as chips (`chips`)."""

    PARAMETERS: ClassVar[dict[str, str]] = {}  # a filter's parameter, where the names differ
    DEFAULTS: ClassVar[dict[str, object]] = {}  # values a link leaves out

    def filters(self) -> dict[str, Any]:
        raise NotImplementedError

    @staticmethod
    def every_page(filters: Mapping[str, Any]) -> dict[str, Any]:
        """`filters` without the page: what an export or a total covers."""
        return {name: value for name, value in filters.items() if name != "page"}

    @classmethod
    def query_string(cls, filters: Mapping[str, Any]) -> str:
        """The filters as a query string, the page and defaults left out."""
        params = {
            cls.PARAMETERS.get(name, name): _query_value(name, value)
            for name, value in cls.every_page(filters).items()
            if value is not None and value != "" and cls.DEFAULTS.get(name) != value
        }
        return urlencode(params)

    @classmethod
    def address(cls, path: str, filters: Mapping[str, Any], *, page: int = 1) -> str:
        """The list's own address for `filters` and `page`: what the address bar shows
        after each change (`HX-Push-Url`), a bookmark or a link gives, a reload reads."""
        query = cls.query_string(filters)
        if page > 1:
            query = f"{query}&page={page}" if query else f"page={page}"
        return f"{path}?{query}" if query else path

    def chips(
        self, path: str, filters: Mapping[str, Any], *, names: Mapping[str, Mapping[str, str]] = {}
    ) -> list[FilterChip]:
        """The filters applied (not the sort), each with the address without it; `names`
        shows a value the form has no choice for (a vehicle group's id)."""
        kept = self.every_page(filters)
        return [
            FilterChip(
                self._chip_text(name, value, names.get(name, {})),
                self.address(path, {**kept, name: None}),
            )
            for name, value in kept.items()
            if name != "sort"
            and value is not None
            and value != ""
            and self.DEFAULTS.get(name) != value
        ]

    def _chip_text(self, name: str, value: object, names: Mapping[str, str]) -> str:
        field = self.fields[self.PARAMETERS.get(name, name)]
        written = _query_value(name, value)
        choices = dict(getattr(field, "choices", ()))
        if written in names or written in choices:
            shown = str(names.get(written) or choices[written])
        elif value is True:
            return str(field.label)
        elif isinstance(value, Decimal):
            shown = formatting.amount(value)
        elif isinstance(value, date):
            shown = date_format(
                value, "YEAR_MONTH_FORMAT" if name == "month" else "SHORT_DATE_FORMAT"
            )
        else:
            # A field shows its value as typed or as chosen (a driver by name).
            shown = str(self[self.PARAMETERS.get(name, name)].value() or written).strip()
        return f"{field.label}: {shown}"


def _query_value(name: str, value: object) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, date):
        return value.strftime("%Y-%m") if name == "month" else value.isoformat()
    return str(value)


class VehicleFilterForm(ListFilterForm):
    """The vehicle list's query string: search, active filter, sort and page."""

    PARAMETERS: ClassVar[dict[str, str]] = {"query": "q"}
    DEFAULTS: ClassVar[dict[str, object]] = {"sort": "plate"}

    SORT_CHOICES = [
        ("plate", _("Plate (A-Z)")),
        ("-plate", _("Plate (Z-A)")),
        ("model", _("Model (A-Z)")),
        ("-model", _("Model (Z-A)")),
        ("-active", _("Active first")),
        ("active", _("Inactive first")),
    ]
    ACTIVE_CHOICES = [("", _("All vehicles")), ("1", _("Active")), ("0", _("Inactive"))]

    q = forms.CharField(
        label=_("Search"),
        required=False,
        max_length=60,
        widget=forms.TextInput(
            attrs={
                "type": "search",
                "placeholder": _("Plate, model or driver"),
                "autocomplete": "off",
            }
        ),
    )
    active = forms.ChoiceField(label=_("Status"), choices=ACTIVE_CHOICES, required=False)
    sort = forms.ChoiceField(label=_("Sort by"), choices=SORT_CHOICES, required=False)
    page = forms.IntegerField(min_value=1, required=False, widget=forms.HiddenInput)
    # A vehicle group's id, or "none" (vehicles in no group); the page offers the groups
    # its user sees, and `scopes.scope_within` ignores any other.
    group = forms.RegexField(
        label=_("Group"), regex=r"^(none|[0-9]{1,10})$", required=False, widget=forms.Select
    )

    def filters(self) -> dict[str, Any]:
        """The valid parts of the query; anything malformed falls back to its default."""
        self.is_valid()  # cleaned_data then holds the fields that are valid
        data = self.cleaned_data
        active = data.get("active") or ""
        return {
            "query": (data.get("q") or "").strip(),
            "active": None if active == "" else active == "1",
            "sort": data.get("sort") or "plate",
            "page": data.get("page") or 1,
            "group": data.get("group") or "",
        }


def _yes_no(value: str | None) -> bool | None:
    return None if not value else value == "1"


class NotificationFilterForm(ListFilterForm):
    """The notification list's query string: search, plate and treated filters, and page."""

    field_order = ["q", "plate"]
    SEARCH_PLACEHOLDER = _("Title")

    TREATED_CHOICES = [
        ("", _("All (untreated first)")),
        ("0", _("Untreated")),
        ("1", _("Treated")),
    ]

    q = forms.CharField(label=_("Search"), required=False, max_length=100)
    treated = forms.ChoiceField(label=_("Handling"), choices=TREATED_CHOICES, required=False)
    plate = forms.CharField(
        label=_("Plate"),
        required=False,
        max_length=12,
        widget=forms.TextInput(attrs={"placeholder": "ABC-1234, ABC1D23", "size": 17}),
    )
    page = forms.IntegerField(min_value=1, required=False, widget=forms.HiddenInput)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["q"].widget.attrs.update(
            {"placeholder": self.SEARCH_PLACEHOLDER, "type": "search", "autocomplete": "off"}
        )

    def clean_plate(self) -> str:
        return plate_typed(self.cleaned_data["plate"])

    def filters(self) -> dict[str, Any]:
        """The valid parts of the query; anything malformed falls back to its default."""
        self.is_valid()
        data = self.cleaned_data
        return {
            "q": (data.get("q") or "").strip(),
            "treated": _yes_no(data.get("treated")),
            "plate": data.get("plate") or "",
            "page": data.get("page") or 1,
        }


def _amount_field(label: StrOrPromise) -> forms.DecimalField:
    """A bound of the amount, in reais with centavos."""
    return forms.DecimalField(
        label=label,
        required=False,
        min_value=0,
        max_digits=12,
        decimal_places=2,
        widget=forms.NumberInput(attrs={"step": "0.01", "class": "input--short"}),
    )


class FineFilterForm(NotificationFilterForm):
    """The fine list's query string: search, plate, treated and official-document filters,
    driver, month, amount range, received since, how the driver is known, sort, and page."""

    SEARCH_PLACEHOLDER = _("Notice or infraction")

    DOCUMENT_CHOICES = [
        ("", _("With or without")),
        ("1", _("Available")),
        ("0", _("Not yet available")),
    ]
    SORT_CHOICES = [
        ("", _("Untreated first, latest changed")),
        ("-occurred_at", _("Committed, newest first")),
        ("occurred_at", _("Committed, oldest first")),
        ("-amount", _("Amount, highest first")),
        ("amount", _("Amount, lowest first")),
    ]

    document = forms.ChoiceField(
        label=_("Official document"), choices=DOCUMENT_CHOICES, required=False
    )
    # A name or a part of it, an id, or a picker's choice ("Ana Souza (1234)"): read as
    # one driver's id (`clean_driver`); the page suggests drivers as it is typed.
    driver = driver_picker(_("Driver"), choices="driver-choices", submits=True)
    month = forms.RegexField(
        label=_("Month committed"),
        required=False,
        regex=r"^\d{4}-(0[1-9]|1[0-2])$",
        error_messages={"invalid": _("Choose a month, like 2026-03.")},
        widget=forms.TextInput(attrs={"type": "month", "placeholder": "2026-03"}),
    )
    amount_min = _amount_field(_("From R$"))
    amount_max = _amount_field(_("Up to R$"))
    received_from = forms.DateField(
        label=_("Received since"),
        required=False,
        widget=forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d"),
        input_formats=["%Y-%m-%d"],
    )
    # How the fine's driver is known (`DriverBasis`, `BASIS_MARKS`): a fact (the history,
    # a person) or a guess (probable: the vehicle list's driver when it arrived; uncertain:
    # the vehicle changed hands around then, two candidates).
    BASIS_CHOICES = [
        ("", _("Any way")),
        (ESTABLISHED, _("A fact: had the vehicle, or set by a person")),
        (DriverBasis.HISTORY.value, _("Had the vehicle (the history)")),
        (DriverBasis.MANUAL.value, _("Set by a person")),
        (DriverBasis.LIST.value, _("Probable (the vehicle list's driver)")),
        (DriverBasis.UNCERTAIN.value, _("Uncertain (two candidates)")),
    ]
    basis = forms.ChoiceField(
        label=_("How the driver is known"), choices=BASIS_CHOICES, required=False
    )
    # Before the basis filter, "uncertain who drove" was a checkbox: its links and saved
    # views (`uncertain=1`) still select those fines.
    uncertain = forms.BooleanField(required=False, widget=forms.HiddenInput)
    sort = forms.ChoiceField(label=_("Sort by"), choices=SORT_CHOICES, required=False)

    # Drivers a name that fits several offers to choose from, below the filters.
    CHOICES_SHOWN = 10

    def __init__(self, *args: Any, scope: VehicleScope = WHOLE_FLEET, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.scope = scope
        # The drivers a typed name fits, when it fits several: links to each.
        self.driver_choices: list[tuple[DriverChoice, str]] = []
        self._driver_found: list[DriverChoice] = []
        # Typed into it, the field asks for the drivers it fits, and shows them below.
        driver_picker_asks(self.fields["driver"], choices="driver-choices")

    def clean_driver(self) -> int | None:
        """One driver's id: an id, a picker's choice, or a name only one driver has."""
        text = " ".join(self.cleaned_data["driver"].split())
        if not text:
            return None
        if (driver_id := driver_id_typed(text)) is not None:
            return driver_id
        if text.isascii() and text.isdigit():
            raise forms.ValidationError(
                _("“%(value)s” is no driver id: type a name, or choose a driver."),
                params={"value": text},
            )
        found = drivers_find(text=text, scope=self.scope, limit=self.CHOICES_SHOWN + 1)
        if len(found) == 1:
            return found[0].driver_id
        self._driver_found = found[: self.CHOICES_SHOWN]
        if not found:
            raise forms.ValidationError(
                _("No driver's name begins like “%(value)s”: type part of a name, or an id."),
                params={"value": text},
            )
        raise forms.ValidationError(
            _("“%(value)s” fits more than one driver: choose one."), params={"value": text}
        )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        low, high = cleaned.get("amount_min"), cleaned.get("amount_max")
        if low is not None and high is not None and low > high:
            # Neither bound is applied: a range that holds nothing is a typing slip.
            self.add_error(
                "amount_max",
                _("%(high)s is below %(low)s: the range holds no fine.")
                % {"high": formatting.amount(high), "low": formatting.amount(low)},
            )
            cleaned.pop("amount_min", None)
        return cleaned

    def filters(self) -> dict[str, Any]:
        data = super().filters()  # validates
        cleaned = self.cleaned_data
        month = cleaned.get("month") or ""
        found = data | {
            "document": _yes_no(cleaned.get("document")),
            "driver": cleaned.get("driver"),
            "month": date.fromisoformat(f"{month}-01") if month else None,
            "amount_min": cleaned.get("amount_min"),
            "amount_max": cleaned.get("amount_max"),
            "received_from": cleaned.get("received_from"),
            "basis": cleaned.get("basis")
            or (DriverBasis.UNCERTAIN.value if cleaned.get("uncertain") else ""),
            "sort": cleaned.get("sort") or "",
        }
        self.driver_choices = [
            (choice, self.query_string(found | {"driver": choice.driver_id}))
            for choice in self._driver_found
        ]
        if found["basis"] and not cleaned.get("basis"):
            # An old `uncertain=1`: the field shows the basis it selects.
            data = QueryDict(mutable=True)
            data.update(self.data)
            data[self.add_prefix("basis")] = found["basis"]
            self.data = data
        if (driver_id := found["driver"]) is not None:
            # The field shows the driver chosen by name, whatever was typed to find them.
            shown = drivers_find(text=str(driver_id), scope=self.scope, limit=1)
            data = QueryDict(mutable=True)
            data.update(self.data)
            data[self.add_prefix("driver")] = shown[0].label if shown else str(driver_id)
            self.data = data
        return found


class SavedFineViewForm(forms.Form):
    """The name a user gives the fines list's current filters, to keep them as a tab."""

    name = forms.CharField(
        label=_("Name of the view"),
        max_length=60,
        widget=forms.TextInput(attrs={"autocomplete": "off", "placeholder": _("e.g. Large fines")}),
    )
    query = forms.CharField(required=False, max_length=500, widget=forms.HiddenInput)

    def clean_name(self) -> str:
        return " ".join(self.cleaned_data["name"].split())
