"""The forms of a fine's page: its deadlines, its indication and who was driving
(`fleet.services.indications`, `fleet.services.attribution`)."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any, ClassVar, Final

from django import forms
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django_stubs_ext import StrOrPromise

from fleet import plates
from fleet.models import IndicationChannel, IndicationField
from fleet.services.drivers import driver_id_typed, drivers_find
from fleet.services.receipts import CheckedReceipt, ReceiptRefused, receipt_check
from fleet.services.scopes import VehicleScope, driver_seen, scope_groups


def plate_typed(text: str) -> str:
    """A plate typed in a filter, either format, normalized ("" for every vehicle)."""
    plate = text.strip()
    if plate and not plates.is_valid(plate):
        raise forms.ValidationError(
            _("“%(plate)s” is not a plate: type it like ABC-1234 or ABC1D23."),
            params={"plate": plate},
        )
    return plates.normalize(plate)


# How far ahead a typed deadline may be: a notice gives weeks, not years.
LATEST_AHEAD = timedelta(days=730)
REASON_LENGTH = 500


class FineDeadlineForm(forms.Form):
    """A deadline typed from the paper notice: which one (`field`), the day, what the page
    showed (`seen`, to tell a change meanwhile) and from what the person knows it."""

    REASON_LENGTH: ClassVar[int] = REASON_LENGTH

    field = forms.ChoiceField(
        choices=[
            (IndicationField.INDICATION_DUE.value, _("Indicate the driver by")),
            (IndicationField.PAYMENT_DUE.value, _("Payment due")),
        ],
        widget=forms.HiddenInput,
    )
    day = forms.DateField(
        label=_("Day"),
        widget=forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d"),
        error_messages={"invalid": _("Type a day, such as 31/12/2026.")},
    )
    seen = forms.CharField(widget=forms.HiddenInput, required=False, max_length=60)
    reason = forms.CharField(
        label=_("From what"),
        max_length=REASON_LENGTH,
        strip=True,
        help_text=_("The notice as received: by post on 03/12, the authority's site..."),
    )

    def clean_day(self) -> date:
        day: date = self.cleaned_data["day"]
        today = timezone.localdate()
        if day < today:
            raise forms.ValidationError(
                _("That day has passed: a deadline to meet is today or later.")
            )
        if day > today + LATEST_AHEAD:
            raise forms.ValidationError(_("That day is more than two years away: check it."))
        return day

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if "field" in cleaned:
            cleaned["field"] = IndicationField(cleaned["field"])
        return cleaned


class FineIndicationNeedForm(forms.Form):
    """Whether the fine needs an indication (`needed`), as a person decides, and why."""

    needed = forms.TypedChoiceField(
        choices=[("1", "1"), ("0", "0")],
        coerce=lambda value: value == "1",
        widget=forms.HiddenInput,
    )
    seen = forms.CharField(widget=forms.HiddenInput, required=False, max_length=60)
    reason = forms.CharField(label=_("Why"), max_length=REASON_LENGTH, strip=True)


class IndicationQueueForm(forms.Form):
    """The queue's filters (a query string): one of the user's vehicle groups, a plate
    (either format), a driver (an id, or a name only one of the user's drivers has), how
    soon, and where the page starts (`after`, `QueueCursor`)."""

    group = forms.ChoiceField(label=_("Vehicle group"), required=False)
    plate = forms.CharField(label=_("Plate"), required=False, max_length=10)
    driver = forms.CharField(
        label=_("Driver"),
        required=False,
        max_length=100,
        widget=forms.TextInput(attrs={"placeholder": _("Name or driver id")}),
    )
    within = forms.ChoiceField(
        label=_("Deadline"),
        required=False,
        choices=[
            ("", _("Any")),
            ("overdue", _("Overdue")),
            ("7", _("Within 7 days")),
            ("30", _("Within 30 days")),
        ],
    )
    after = forms.CharField(required=False, max_length=40, widget=forms.HiddenInput)

    def __init__(self, *args: Any, scope: VehicleScope, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.scope = scope
        groups = [(str(pk), name) for pk, name in scope_groups(scope)]
        group = self.fields["group"]
        assert isinstance(group, forms.ChoiceField)
        group.choices = [("", _("All my vehicles")), *groups]

    def clean_plate(self) -> str:
        return plate_typed(self.cleaned_data["plate"])

    def clean_driver(self) -> int | None:
        return driver_chosen(self.cleaned_data["driver"], self.scope)

    def filters(self) -> dict[str, Any]:
        """The queue's filters the form holds (those that are valid)."""
        cleaned = self.cleaned_data if self.is_valid() else getattr(self, "cleaned_data", {})
        return {
            "group": cleaned.get("group") or "",
            "plate": cleaned.get("plate") or "",
            "driver": cleaned.get("driver"),
            "within": cleaned.get("within") or "",
        }


def driver_chosen(typed: str, scope: VehicleScope) -> int | None:
    """The driver `typed` names among those `scope` sees: an id, a picker's choice ("Ana
    Souza (1234)"), or a name only one of them has; None for nothing typed."""
    text = " ".join(typed.split())
    if not text:
        return None
    if (driver_id := driver_id_typed(text)) is not None:
        return driver_id
    found = drivers_find(text=text, scope=scope, limit=2)
    if len(found) == 1:
        return found[0].driver_id
    if not found:
        raise forms.ValidationError(
            _("No driver's name begins like “%(value)s”: type part of a name, or an id."),
            params={"value": text},
        )
    raise forms.ValidationError(
        _("“%(value)s” fits more than one driver: type more of the name, or the id."),
        params={"value": text},
    )


def driver_indicated(typed: str, scope: VehicleScope) -> int:
    """The driver an indication names (`driver_chosen`), who must be one of the drivers
    `scope` sees; else a `ValidationError` saying why."""
    driver_id = driver_chosen(typed, scope)
    if driver_id is None:
        raise forms.ValidationError(_("Choose who was driving."))
    if not driver_seen(scope, driver_id):
        raise forms.ValidationError(
            _("No driver of your vehicles has the id %(id)s."), params={"id": driver_id}
        )
    return driver_id


class _HowAndWhen(forms.Form):
    """How an indication was made and on which day (today or before), among the drivers
    `scope` sees: what indicating one fine and several at once share."""

    channel = forms.ChoiceField(label=_("How"), choices=IndicationChannel.choices)
    on = forms.DateField(
        label=_("On"),
        widget=forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d"),
        error_messages={"invalid": _("Type a day, such as 31/12/2026.")},
    )

    def __init__(self, *args: Any, scope: VehicleScope, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.scope = scope

    def clean_on(self) -> date:
        day: date = self.cleaned_data["on"]
        if day > timezone.localdate():
            raise forms.ValidationError(_("That day has not come yet: say when it was done."))
        return day


class FineIndicateForm(_HowAndWhen):
    """A fine's driver as indicated to the authority: who (a name or an id, among the
    drivers the user sees), how, on which day; what the page showed (`seen`); the proof
    it was sent, if any (`receipt`: checked by its content, `fleet.services.receipts`)."""

    driver = forms.CharField(
        label=_("Driver"),
        max_length=100,
        widget=forms.TextInput(attrs={"placeholder": _("Name or driver id")}),
    )
    seen = forms.CharField(widget=forms.HiddenInput, required=False, max_length=60)
    receipt = forms.FileField(
        label=_("Receipt (optional)"),
        required=False,
        widget=forms.ClearableFileInput(attrs={"accept": "application/pdf,image/png,image/jpeg"}),
        help_text=_(
            "The proof it was sent: a PDF, PNG or JPEG (the post office's receipt, "
            "the authority site's confirmation)."
        ),
    )

    field_order = ["driver", "channel", "on", "seen", "receipt"]

    def clean_receipt(self) -> CheckedReceipt | None:
        upload = self.cleaned_data.get("receipt")
        if not upload:
            return None
        try:
            return receipt_check(upload)
        except ReceiptRefused as refused:
            raise forms.ValidationError(refused.message) from refused

    def clean_driver(self) -> int:
        return driver_indicated(self.cleaned_data["driver"], self.scope)


class FineAnswerForm(forms.Form):
    """The authority's answer to an indication: accepted, or refused with its reason."""

    accepted = forms.TypedChoiceField(
        choices=[("1", "1"), ("0", "0")],
        coerce=lambda value: value == "1",
        widget=forms.HiddenInput,
    )
    reason = forms.CharField(
        label=_("The authority's reason"), max_length=REASON_LENGTH, required=False
    )
    seen = forms.CharField(widget=forms.HiddenInput, required=False, max_length=60)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if cleaned.get("accepted") is False and not cleaned.get("reason"):
            self.add_error("reason", _("Say why the authority refused it."))
        return cleaned


# The channels of an indication recorded for several fines at once: the platform's is one
# fine at a time, from its page (each is sent, and may be refused, on its own).
BULK_CHANNELS: Final = [
    (value, label)
    for value, label in IndicationChannel.choices
    if value != IndicationChannel.PLATFORM
]


class BulkIndicateForm(_HowAndWhen):
    """Several fines' drivers as indicated to the authority the same way on the same day:
    each fine's driver in a field of its own (`driver-<fine id>`, with `seen-<fine id>`,
    what the page showed of it), among the drivers the user sees."""

    channel = forms.ChoiceField(label=_("How"), choices=BULK_CHANNELS)

    def __init__(self, *args: Any, scope: VehicleScope, fine_ids: list[int], **kwargs: Any):
        super().__init__(*args, scope=scope, **kwargs)
        for fine_id in fine_ids:
            self.fields[f"driver-{fine_id}"] = forms.CharField(
                label=_("Driver"), max_length=100, required=False
            )
            self.fields[f"seen-{fine_id}"] = forms.CharField(
                widget=forms.HiddenInput, required=False, max_length=60
            )
        self.fine_ids = fine_ids

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        for fine_id in self.fine_ids:
            name = f"driver-{fine_id}"
            try:
                cleaned[name] = driver_indicated(cleaned.get(name, ""), self.scope)
            except forms.ValidationError as error:
                self.add_error(name, error)
        return cleaned

    def driver_of(self, fine_id: int) -> int:
        driver_id: int = self.cleaned_data[f"driver-{fine_id}"]
        return driver_id

    def seen_of(self, fine_id: int) -> str:
        return str(self.cleaned_data.get(f"seen-{fine_id}", ""))


def driver_picker(label: StrOrPromise, *, choices: str, submits: bool = False) -> forms.CharField:
    """A driver's field with its picker (`static/js/pickers.js`): a name or a part of it, an
    id, or a picker's choice ("Ana Souza (1234)"); the drivers it fits shown in the
    element `choices` (`driver_picker_asks`). `submits`: choosing one submits the form
    (the fines filter)."""
    attrs = {
        "type": "search",
        "autocomplete": "off",
        "placeholder": _("Name or driver id"),
        "role": "combobox",
        "aria-autocomplete": "list",
        "aria-controls": choices,
        "aria-expanded": "false",
        "data-driver-picker": "",
    }
    if submits:
        attrs["data-picker-submits"] = ""
    return forms.CharField(
        label=label, required=False, max_length=160, widget=forms.TextInput(attrs=attrs)
    )


def driver_picker_asks(field: forms.Field, *, choices: str) -> None:
    """Typed into, the picker's field asks for the drivers it fits (htmx, `fine_drivers`,
    among the user's) and shows them in `choices`. Set per form: the address is reversed."""
    field.widget.attrs.update(
        {
            "hx-get": reverse("fleet:fine_drivers"),
            "hx-trigger": "input changed delay:250ms, search",
            "hx-target": f"#{choices}",
            "hx-swap": "innerHTML",
            "hx-push-url": "false",
            "hx-indicator": f"#{choices}-loading",
            "hx-sync": "this:replace",
        }
    )


class FineDriverForm(forms.Form):
    """Who was driving, set by hand on a fine's page: one of the candidates the page
    offers (`choice`, a driver id), or another driver (`choice` "other") chosen by name
    through the fines filter's picker (`driver`: a name only one of the user's drivers
    has, a picker's choice, or an id), and why. Only a driver of the vehicles the user
    sees (now or in the history) is taken: any other id, or one nobody has, is refused
    and nothing is written."""

    REASON_LENGTH: ClassVar[int] = 500

    choice = forms.CharField(required=False, max_length=20)
    driver = driver_picker(_("Another driver"), choices="correction-driver-choices")
    reason = forms.CharField(label=_("Why"), max_length=REASON_LENGTH, strip=True)

    def __init__(self, *args: Any, scope: VehicleScope, **kwargs: Any) -> None:
        kwargs.setdefault("auto_id", "correction_%s")
        super().__init__(*args, **kwargs)
        self.scope = scope
        driver_picker_asks(self.fields["driver"], choices="correction-driver-choices")

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        choice = cleaned.get("choice") or ""
        typed = cleaned.get("driver") or ""
        if choice.isdigit() and 0 < int(choice) < 2**63:
            driver_id = int(choice)
            # Whatever the page offered: a driver the user does not see is refused, so that
            # a correction cannot name (and so open) another group's driver, nor an id
            # nobody has. A typed one is checked so by `driver_indicated`.
            if not driver_seen(self.scope, driver_id):
                raise forms.ValidationError(
                    _("No driver of your vehicles has the id %(id)s."), params={"id": driver_id}
                )
        elif typed.strip() and choice in ("", "other"):
            try:
                driver_id = driver_indicated(typed, self.scope)
            except forms.ValidationError as error:
                self.add_error("driver", error)
                return cleaned
        elif "driver" not in self.errors:
            raise forms.ValidationError(_("Choose who was driving, or type the driver's name."))
        else:
            return cleaned
        cleaned["driver_id"] = driver_id
        return cleaned
