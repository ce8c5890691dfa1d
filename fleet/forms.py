"""Forms of the portal's own pages."""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Mapping
from datetime import date
from functools import partial
from typing import Any, ClassVar
from urllib.parse import urlencode

from django import forms
from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from fleet import cpf, formatting, plates
from fleet.models import CnhPurpose, MintOutcome
from fleet.services.drivers import fine_drivers
from fleet.services.scopes import WHOLE_FLEET, VehicleScope
from fleet.services.sso import MintFailed


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


class ListFilterForm(forms.Form):
    """A list's query string read as its filters (`filters`), and written back for the
    links that keep them (`query_string`): one page, or every page (`every_page`)."""

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
                "placeholder": _("Plate or model, e.g. ABC-1234, ABC1D23, Onix"),
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


class _CnhPurposeForm(forms.Form):
    """What every lookup states (LGPD): its purpose, from a short list, and in words."""

    purpose = forms.ChoiceField(
        label=_("Purpose of the lookup"),
        choices=[("", _("Choose one…")), *CnhPurpose.choices],
    )
    purpose_detail = forms.CharField(
        label=_("Details of the purpose"),
        required=False,
        max_length=200,
        help_text=_("For example the fine's number or the driver's hiring process."),
        widget=forms.TextInput(attrs={"autocomplete": "off"}),
    )

    def __init__(self, *args: Any, prefix_ids: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if prefix_ids:  # both forms share a page: their purpose fields need their own ids
            for name in ("purpose", "purpose_detail"):
                self.fields[name].widget.attrs["id"] = f"id_{prefix_ids}_{name}"

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("purpose") == CnhPurpose.OTHER and not data.get("purpose_detail", "").strip():
            self.add_error("purpose_detail", _("Say in a few words what this lookup is for."))
        return data


class CnhLookupForm(_CnhPurposeForm):
    """One CPF, with or without its mask, for an individual licence lookup."""

    field_order = ["cpf", "purpose", "purpose_detail"]

    cpf = forms.CharField(
        label=_("CPF"),
        max_length=20,
        widget=forms.TextInput(
            attrs={"inputmode": "numeric", "autocomplete": "off", "placeholder": "000.000.000-00"}
        ),
    )

    def clean_cpf(self) -> str:
        value = cpf.normalize(self.cleaned_data["cpf"])
        if len(value) != cpf.LENGTH or not value.isdigit():
            raise forms.ValidationError(
                _("A CPF has 11 digits, like 123.456.789-09."), code="digits"
            )
        if not cpf.is_valid(value):
            raise forms.ValidationError(
                _("This is not a valid CPF: its check digits do not match. Check for a typo."),
                code="check",
            )
        return value


# An upload larger than this is not a list of CPFs someone means to look up.
_MAX_UPLOAD_BYTES = 1024 * 1024
_DELIMITERS = (";", ",", "\t")


class CnhBatchForm(_CnhPurposeForm):
    """A list of CPFs, pasted (one per line) or in a CSV file, for a batch lookup.

    Invalid lines are reported and never sent; the person may fix them or
    leave them out (`skip_invalid`). A CSV's CPFs are copied into the text
    area, so that a page shown again with errors keeps them.
    """

    cpfs = forms.CharField(
        label=_("CPFs, one per line"),
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 8, "autocomplete": "off", "spellcheck": "false"}),
    )
    file = forms.FileField(
        label=_("or a CSV file"),
        required=False,
        help_text=_(
            "The column named “CPF”, or else the first column. "
            "Semicolons, commas or tabs between columns."
        ),
        widget=forms.ClearableFileInput(attrs={"accept": ".csv,text/csv,text/plain"}),
    )
    skip_invalid = forms.BooleanField(
        label=_("Leave out the invalid lines and look up the others"), required=False
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, prefix_ids="batch", **kwargs)
        self.read = cpf.CpfList()

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        upload = data.get("file")
        if upload:
            lines = _csv_column(upload)
            if lines is None:
                self.add_error(
                    "file", _("This file could not be read as a CSV list. Save it as CSV.")
                )
                return data
            # Shown again in the text area, should the page come back with errors.
            self.data = {**dict(self.data.items()), "cpfs": "\n".join(lines)}
        else:
            lines = (data.get("cpfs") or "").splitlines()
        self.read = cpf.read_list(lines)
        if not self.read.cpfs and not self.read.invalid:
            raise forms.ValidationError(
                _("Paste one or more CPFs, one per line, or choose a CSV file."), code="empty"
            )
        if self.read.invalid and not data.get("skip_invalid"):
            raise forms.ValidationError(
                ngettext(
                    "%(count)d line is not a valid CPF (listed below). Correct it, or tick "
                    "the box to leave it out. Nothing was sent.",
                    "%(count)d lines are not valid CPFs (listed below). Correct them, or tick "
                    "the box to leave them out. Nothing was sent.",
                    len(self.read.invalid),
                )
                % {"count": len(self.read.invalid)},
                code="invalid_lines",
            )
        if not self.read.cpfs:
            raise forms.ValidationError(_("There is no valid CPF to look up."), code="none")
        limit = settings.FLEET_CNH_BATCH_LIMIT
        if len(self.read.cpfs) > limit:
            raise forms.ValidationError(
                _(
                    "One batch takes at most %(limit)d CPFs; this list has %(count)d. "
                    "Split it into smaller lists."
                )
                % {"limit": limit, "count": len(self.read.cpfs)},
                code="too_many",
            )
        return data


def _csv_column(upload: UploadedFile[Any]) -> list[str] | None:
    """The values of the CPF column of an uploaded CSV, one per row; None if unreadable."""
    raw = upload.read(_MAX_UPLOAD_BYTES + 1)
    if len(raw) > _MAX_UPLOAD_BYTES or b"\0" in raw:
        return None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = raw.decode("cp1252", errors="replace")  # what Excel saves in Brazil
    first = text.split("\n", 1)[0]
    delimiter = max(_DELIMITERS, key=first.count)
    try:
        rows = list(csv.reader(io.StringIO(text), delimiter=delimiter))
    except csv.Error:
        return None
    column = 0
    if rows:
        header = [cell.strip().lower() for cell in rows[0]]
        if "cpf" in header:
            column, rows = header.index("cpf"), rows[1:]
    return [row[column].strip() if len(row) > column else "" for row in rows]


def _yes_no(value: str | None) -> bool | None:
    return None if not value else value == "1"


class NotificationFilterForm(ListFilterForm):
    """The notification list's query string: search, plate and treated filters, and page."""

    field_order = ["q", "plate"]
    SEARCH_PLACEHOLDER = _("Title or message")

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
        """A vehicle's plate in either format, normalized; "" for every vehicle."""
        plate = self.cleaned_data["plate"].strip()
        if plate and not plates.is_valid(plate):
            raise forms.ValidationError(
                _("“%(plate)s” is not a plate: type it like ABC-1234 or ABC1D23."),
                params={"plate": plate},
            )
        return plates.normalize(plate)

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


def _driver_choices(
    *, scope: VehicleScope = WHOLE_FLEET, asked: int | None = None
) -> list[tuple[int | str, str]]:
    """The drivers the fines list filters by (those `scope` sees), by name
    (`formatting.driver`); a name two drivers share comes with their ids. `asked`, a
    driver the portal knows nothing of yet (the driver page links every driver's fines,
    none or not), is listed by id."""
    drivers = fine_drivers(scope=scope)
    if asked is not None and asked not in {driver_id for driver_id, _name in drivers}:
        drivers.append((asked, ""))
    shared = {name for name, n in Counter(name for _id, name in drivers if name).items() if n > 1}

    def label(driver_id: int, name: str) -> str:
        return f"{name} ({driver_id})" if name in shared else formatting.driver(driver_id, name)

    return [("", gettext("All drivers")), *((id_, label(id_, name)) for id_, name in drivers)]


class FineFilterForm(NotificationFilterForm):
    """The fine list's query string: search, plate, treated and official-document filters,
    driver, month, amount range, received since, sort, and page."""

    SEARCH_PLACEHOLDER = _("Notice number or infraction")

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
    driver = forms.TypedChoiceField(
        label=_("Driver"),
        required=False,
        choices=_driver_choices,
        coerce=int,
        empty_value=None,
        error_messages={
            "invalid_choice": _(
                "“%(value)s” is not one of the drivers in the list: choose a driver there."
            )
        },
    )
    month = forms.RegexField(
        label=_("Month committed"),
        required=False,
        regex=r"^\d{4}-(0[1-9]|1[0-2])$",
        error_messages={"invalid": _("Choose a month, like 2026-03.")},
        widget=forms.TextInput(attrs={"type": "month", "placeholder": "2026-03"}),
    )
    amount_min = forms.DecimalField(
        label=_("From R$"),
        required=False,
        min_value=0,
        max_digits=12,
        decimal_places=2,
        widget=forms.NumberInput(attrs={"step": "0.01", "class": "input--short"}),
    )
    amount_max = forms.DecimalField(
        label=_("Up to R$"),
        required=False,
        min_value=0,
        max_digits=12,
        decimal_places=2,
        widget=forms.NumberInput(attrs={"step": "0.01", "class": "input--short"}),
    )
    received_from = forms.DateField(
        label=_("Received since"),
        required=False,
        widget=forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d"),
        input_formats=["%Y-%m-%d"],
    )
    sort = forms.ChoiceField(label=_("Sort by"), choices=SORT_CHOICES, required=False)

    def __init__(self, *args: Any, scope: VehicleScope = WHOLE_FLEET, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        asked = str(self.data.get(self.add_prefix("driver"), "")).strip()
        wanted = int(asked) if asked.isascii() and asked.isdigit() and asked[:10] else None
        if wanted is not None and not 0 < wanted < 2**31:
            wanted = None
        if wanted is not None or not scope.whole_fleet:
            self.fields["driver"].choices = partial(_driver_choices, scope=scope, asked=wanted)  # type: ignore[attr-defined]

    def filters(self) -> dict[str, Any]:
        data = super().filters()  # validates
        cleaned = self.cleaned_data
        month = cleaned.get("month") or ""
        return data | {
            "document": _yes_no(cleaned.get("document")),
            "driver": cleaned.get("driver"),
            "month": date.fromisoformat(f"{month}-01") if month else None,
            "amount_min": cleaned.get("amount_min"),
            "amount_max": cleaned.get("amount_max"),
            "received_from": cleaned.get("received_from"),
            "sort": cleaned.get("sort") or "",
        }


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
