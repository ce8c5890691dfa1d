"""The lists' query strings: read as filters, written back the same way by every list."""

from __future__ import annotations

import html
import re

import pytest
from django.http import QueryDict

from fleet.forms import FineFilterForm, NotificationFilterForm, VehicleFilterForm
from fleet.views import fines as fine_views


@pytest.mark.parametrize(
    ("form", "query", "written"),
    [
        (VehicleFilterForm, "q=onix&active=0&sort=-model&page=3", "q=onix&active=0&sort=-model"),
        (VehicleFilterForm, "sort=plate&page=2", ""),  # the default sort is left out
        (NotificationFilterForm, "treated=1&plate=abc1d23&page=4", "treated=1&plate=ABC1D23"),
        (
            FineFilterForm,
            "q=autuado&document=0&month=2026-10&amount_min=100.50&sort=-occurred_at&page=9",
            "q=autuado&document=0&month=2026-10&amount_min=100.50&sort=-occurred_at",
        ),
        (FineFilterForm, "month=13-2026&amount_min=lots", ""),  # malformed: left out
    ],
)
def test_a_lists_filters_are_written_back_without_the_page_and_read_the_same(
    form: type[VehicleFilterForm | NotificationFilterForm], query: str, written: str
) -> None:
    filters = form(QueryDict(query)).filters()

    assert form.query_string(filters) == written
    assert form.every_page(form(QueryDict(written)).filters()) == form.every_page(filters)
    assert "page" not in form.every_page(filters)


def field_values(page: str) -> dict[str, str]:
    """What the filter form's text fields hold."""
    form = re.search(r'<form class="filters".*?</form>', page, re.S)
    assert form
    return {
        name: html.unescape(value)
        for name, value in re.findall(
            r'<input type="[a-z]+" name="([a-z_]+)" value="([^"]*)"', form[0]
        )
    }


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/fines/", "/notifications/"])
def test_a_lists_filter_form_is_rendered_once_for_what_it_shows(manager_client, path):
    """Kept as rendered by what was typed into it (and so its errors), in the page's
    language: each query, each language its own form, never another's."""
    fine_views._filter_forms.clear()
    english, portuguese = {"Accept-Language": "en"}, {"Accept-Language": "pt-BR"}

    first = manager_client.get(
        path, {"q": "<b>radar", "plate": "abc1d23", "page": "2"}, headers=english
    )
    assert field_values(first.text) == {"q": "<b>radar", "plate": "abc1d23"}  # as typed
    kept = len(fine_views._filter_forms)
    assert kept == 1

    # The same values on another page of the list: the same form, not rendered again.
    again = manager_client.get(
        path, {"q": "<b>radar", "plate": "abc1d23", "page": "3"}, headers=english
    )
    assert len(fine_views._filter_forms) == kept
    assert field_values(again.text) == field_values(first.text)

    other = manager_client.get(path, {"q": "multa", "plate": "ABC-1234x"}, headers=english)
    assert field_values(other.text)["q"] == "multa"
    assert "<b>radar" not in other.text
    assert 'aria-invalid="true"' in other.text  # the malformed plate's field
    assert 'aria-invalid="true"' not in first.text

    translated = manager_client.get(path, {"q": "<b>radar", "plate": "abc1d23"}, headers=portuguese)
    assert ">Search<" in first.text
    assert ">Search<" not in translated.text
    assert len(fine_views._filter_forms) == kept + 2
