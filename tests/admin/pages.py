"""The admin's pages as the tests send them back."""

from __future__ import annotations

from typing import Any


def form_data(response: Any, **changes: Any) -> dict[str, Any]:
    """What the change page's form would send as it is shown, with `changes`."""
    data: dict[str, Any] = {}
    forms = [response.context["adminform"].form]
    for inline in response.context["inline_admin_formsets"]:
        formset = inline.formset
        forms += [formset.management_form, *formset.forms]
    for form in forms:
        for name in form.fields:
            value = form[name].value()
            if value not in (None, "") and not (name == "DELETE" and value is False):
                data[form.add_prefix(name)] = value
    return data | changes
