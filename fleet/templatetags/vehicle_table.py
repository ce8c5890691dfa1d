"""The vehicle list's hot parts, built in Python: table rows, sort links, filters.

The vehicles page is the one fleet managers open all day, and a page of 50
rows through the template language cost more than everything else the page
does (a `{% url %}` and two `{% translate %}` per row, each a node render and
context lookups; a `<select>` widget renders a template per option). These
tags build the same HTML with one `reverse`, labels translated once and plain
string joins, as the admin's change list builds its rows (`items_for_result`).
Every value that comes from the API or the query string is escaped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any
from urllib.parse import quote

from django import template
from django.forms import BoundField
from django.forms.utils import flatatt
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext

from fleet import plates
from fleet.services.vehicles import VehicleRow
from portal.lib import formatting

register = template.Library()

_SENTINEL = "__plate__"


@register.simple_tag(takes_context=True)
def vehicle_rows(
    context: template.Context, rows: Sequence[VehicleRow], names: Mapping[int, str]
) -> SafeString:
    """`<tr>`s for `rows`: plate (to the vehicle page), model, status, driver (`names`, or
    the id, to the driver page), deep link; on a phone, cards whose cells say what they
    hold (`data-label`)."""
    before, after = escape(reverse("fleet:vehicle", args=[_SENTINEL])).split(_SENTINEL)
    driver_before, driver_after = reverse("fleet:driver", args=[0]).split("0", 1)
    next_page = context["request"].get_full_path()
    # Outside the f-strings: xgettext (makemessages) does not look inside them.
    open_label, active_label, inactive_label = (
        escape(gettext("Open in fleet app")),
        escape(gettext("Active")),
        escape(gettext("Inactive")),
    )
    model_cell, status_cell, driver_cell = (
        f'<td data-label="{escape(label)}">'
        for label in (gettext("Model"), gettext("Status"), gettext("Driver"))
    )
    # A button posting the page's deep-link form (base.html): minting a key is no GET.
    open_cell = (
        f'<td class="actions-cell"><button type="submit" form="app-open" name="next" '
        f'value="{escape(next_page)}" class="link-button">{open_label}</button></td></tr>'
    )
    active = f'{status_cell}<span class="badge badge--ok">{active_label}</span></td>'
    inactive = f'{status_cell}<span class="badge">{inactive_label}</span></td>'

    # An old plate's Mercosul form, muted beside it: what notices and fines name it by.
    registration_title = escape(gettext("Mercosul plate, as notices name the vehicle"))

    def registration(plate: str) -> str:
        mercosul = plates.registration(plate)
        if mercosul == plate:
            return ""
        return (
            f' <span class="plate plate--other muted" title="{registration_title}">'
            f"{escape(mercosul)}</span>"
        )

    def driver_link(driver_id: int) -> str:
        shown = escape(formatting.driver(driver_id, names.get(driver_id, "")))
        return f'<a href="{driver_before}{driver_id}{driver_after}">{shown}</a>'

    html = [
        f'<tr><td><a class="plate" href="{before}{quote(row.plate, safe="")}{after}">'
        f"{escape(row.plate_display)}</a>{registration(row.plate)}</td>"
        f"{model_cell}{escape(row.model)}</td>"
        f"{active if row.active else inactive}"
        f"{driver_cell}{'—' if row.driver_id is None else driver_link(row.driver_id)}</td>"
        f"{open_cell}"
        for row in rows
    ]
    return mark_safe("\n".join(html))  # noqa: S308 -- every interpolated value is escaped above


@register.simple_tag
def input_control(field: BoundField) -> SafeString:
    """`field`'s `<input>` as its widget renders it (attributes, value), without templates."""
    widget = field.field.widget
    attrs = field.build_widget_attrs({**widget.attrs, "id": field.auto_id}, widget)
    value = widget.format_value(field.value())
    shown = "" if value is None else f' value="{escape(str(value))}"'
    return mark_safe(  # noqa: S308 -- escaped above and by flatatt
        f'<input type="{escape(widget.input_type)}" name="{escape(field.html_name)}"'
        f"{shown}{flatatt(attrs)}>"
    )


@register.simple_tag
def select_control(field: BoundField) -> SafeString:
    """`field`'s `<select>` as the Select widget renders it, without a template per option."""
    value = field.value()
    selected = "" if value is None else str(value)
    choices: Sequence[tuple[Any, Any]] = field.field.choices  # type: ignore[attr-defined]
    options = "".join(
        f'<option value="{escape(str(choice))}"'
        f"{' selected' if str(choice) == selected else ''}>{escape(str(label))}</option>"
        for choice, label in choices
    )
    return mark_safe(  # noqa: S308 -- escaped above
        f'<select name="{escape(field.html_name)}" id="{escape(field.auto_id)}">{options}</select>'
    )
