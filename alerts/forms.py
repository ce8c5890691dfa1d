"""The alerts page's forms: a user's choices (the admin's defaults use the same), and a
new webhook subscription."""

from __future__ import annotations

import re
import zoneinfo
from functools import cache
from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from alerts.models import AlertChoices, AlertDefaults, AlertPreferences
from alerts.outbound import WebhookAddressRefused, webhook_url_check
from alerts.services.preferences import CHOICE_FIELDS
from fleet import plates

_PLATE_SEPARATORS = re.compile(r"[,;\n\r]+")  # not spaces: "ABC 1D23" is one plate


# Brazil's time zones by the names people use, first; then every other zone by its id.
BRAZIL_TIME_ZONES = [
    ("America/Sao_Paulo", _("Brasília time (São Paulo, Rio de Janeiro, Brasília…)")),
    ("America/Manaus", _("Amazon time (Manaus, Cuiabá, Porto Velho…)")),
    ("America/Rio_Branco", _("Acre time (Rio Branco)")),
    ("America/Noronha", _("Fernando de Noronha time")),
]


@cache
def _other_time_zones() -> list[tuple[str, str]]:
    brazil = {name for name, _label in BRAZIL_TIME_ZONES}
    return [
        (name, name.replace("_", " "))
        for name in sorted(zoneinfo.available_timezones())
        if name not in brazil
    ]


def _time_zones() -> list[tuple[Any, Any]]:
    return [*BRAZIL_TIME_ZONES, (_("Other time zones"), _other_time_zones())]


class PlatesField(forms.CharField):
    """Plates typed one per line or separated by commas, in either format, with or
    without a hyphen: a list of normalised plates, each once."""

    widget = forms.Textarea(attrs={"rows": 3, "placeholder": "ABC1234, ABC1D23"})

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, list):
            return "\n".join(plates.display(plate) for plate in value)
        return value

    def to_python(self, value: Any) -> list[str]:  # type: ignore[override]
        text = super().to_python(value) or ""
        found: list[str] = []
        for word in _PLATE_SEPARATORS.split(text):
            plate = plates.normalize(word)
            if plate and plate not in found:
                found.append(plate)
        return found

    def validate(self, value: Any) -> None:
        wrong = [plate for plate in value if not plates.is_valid(plate)]
        if wrong:
            raise forms.ValidationError(
                _("Not a plate (ABC1234 or ABC1D23): %(plates)s"),
                params={"plates": ", ".join(wrong)},
            )


class AlertChoicesForm(forms.ModelForm[AlertChoices]):
    plates = PlatesField(label=_("Plates"), required=False)
    digest_hour = forms.TypedChoiceField(
        label=_("Hour of the daily digest"),
        coerce=int,
        choices=[(hour, f"{hour:02d}:00") for hour in range(24)],
    )
    time_zone = forms.ChoiceField(label=_("Time zone of the digest"), choices=_time_zones)
    all_vehicles = forms.TypedChoiceField(
        label=_("Vehicles"),
        coerce=lambda value: value == "True",
        choices=[(True, _("All vehicles")), (False, _("Only these plates"))],
        widget=forms.RadioSelect,
    )

    class Meta:
        model = AlertChoices
        fields = CHOICE_FIELDS
        widgets = {"delivery": forms.RadioSelect, "language": forms.RadioSelect}
        labels = {
            "new_fine": _("A new fine arrives"),
            "fine_document": _("A fine's official document becomes available"),
            "fine_treated": _("A fine is marked treated"),
            "new_notification": _("A new notification arrives"),
            "indication_reminders": _(
                "A fine's deadline to indicate its driver is near, or passed with no indication"
            ),
            "delivery": _("E-mail alerts"),
            "language": _("Language of the e-mails"),
        }

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if cleaned.get("all_vehicles") is False and not cleaned.get("plates"):
            self.add_error("plates", _("Give at least one plate, or choose all vehicles."))
        return cleaned


class AlertPreferencesForm(AlertChoicesForm):
    class Meta(AlertChoicesForm.Meta):
        model = AlertPreferences


class AlertDefaultsForm(AlertChoicesForm):
    class Meta(AlertChoicesForm.Meta):
        model = AlertDefaults


class WebhookSubscriptionForm(forms.Form):
    url = forms.URLField(
        label=_("Webhook address"),
        max_length=500,
        assume_scheme="https",
        help_text=_("The https address of your system that receives the alerts."),
    )
    description = forms.CharField(label=_("What it is for"), max_length=200, required=False)

    def clean_url(self) -> str:
        """The address's form only: where it leads is looked up by the service, which
        counts the attempt first."""
        url: str = self.cleaned_data["url"]
        try:
            webhook_url_check(url)
        except WebhookAddressRefused as refused:
            raise forms.ValidationError(str(refused)) from None
        return url
