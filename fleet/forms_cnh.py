"""Forms of the driver licence (CNH) lookups: one CPF, or a list typed or uploaded, each
with the purpose every lookup states (LGPD); and a driver's own CPF."""

from __future__ import annotations

import csv
import io
from typing import Any

from django import forms
from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from fleet import cpf
from fleet.models import CnhPurpose
from portal.lib.spreadsheets import NotText, list_delimiter, spreadsheet_text


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
        return _cpf_checked(self.cleaned_data["cpf"])


def _cpf_checked(text: str) -> str:
    """The CPF's eleven digits; a `ValidationError` saying what is wrong otherwise."""
    value = cpf.normalize(text)
    if len(value) != cpf.LENGTH or not value.isdigit():
        raise forms.ValidationError(_("A CPF has 11 digits, like 123.456.789-09."), code="digits")
    if not cpf.is_valid(value):
        raise forms.ValidationError(
            _("This is not a valid CPF: its check digits do not match. Check for a typo."),
            code="check",
        )
    return value


class DriverCpfForm(forms.Form):
    """A driver's CPF, with or without its mask; empty forgets it."""

    cpf = forms.CharField(
        label=_("Driver's CPF"),
        max_length=20,
        required=False,
        help_text=_("Leave it empty to remove the CPF. It is stored encrypted."),
        widget=forms.TextInput(
            attrs={"inputmode": "numeric", "autocomplete": "off", "placeholder": "000.000.000-00"}
        ),
    )

    def clean_cpf(self) -> str:
        text = self.cleaned_data["cpf"].strip()
        return _cpf_checked(text) if text else ""


# An upload larger than this is not a list of CPFs someone means to look up.
_MAX_UPLOAD_BYTES = 1024 * 1024


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
    if len(raw) > _MAX_UPLOAD_BYTES:
        return None
    try:
        text = spreadsheet_text(raw)
    except NotText:
        return None
    delimiter = list_delimiter(text.splitlines())
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
