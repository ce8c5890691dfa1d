"""Forms of the portal's own pages."""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from fleet.models import MintOutcome
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
        else:
            self.add_error(
                None,
                _(
                    "The portal could not check your fleet login (%(reason)s). "
                    "Nothing was saved; an administrator has the details."
                )
                % {"reason": failure.outcome.label},
            )


class VehicleFilterForm(forms.Form):
    """The vehicle list's query string: search, active filter, sort and page."""

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
        }


def _yes_no(value: str | None) -> bool | None:
    return None if not value else value == "1"


class NotificationFilterForm(forms.Form):
    """The notification list's query string: treated filter and page."""

    TREATED_CHOICES = [
        ("", _("All (untreated first)")),
        ("0", _("Untreated")),
        ("1", _("Treated")),
    ]

    treated = forms.ChoiceField(label=_("Handling"), choices=TREATED_CHOICES, required=False)
    page = forms.IntegerField(min_value=1, required=False, widget=forms.HiddenInput)

    def filters(self) -> dict[str, Any]:
        """The valid parts of the query; anything malformed falls back to its default."""
        self.is_valid()
        data = self.cleaned_data
        return {"treated": _yes_no(data.get("treated")), "page": data.get("page") or 1}


class FineFilterForm(NotificationFilterForm):
    """The fine list's query string: treated and official-document filters, and page."""

    DOCUMENT_CHOICES = [
        ("", _("With or without")),
        ("1", _("Available")),
        ("0", _("Not yet available")),
    ]

    document = forms.ChoiceField(
        label=_("Official document"), choices=DOCUMENT_CHOICES, required=False
    )

    def filters(self) -> dict[str, Any]:
        return super().filters() | {"document": _yes_no(self.cleaned_data.get("document"))}
