"""The lists' query strings: read as filters, written back the same way by every list."""

from __future__ import annotations

import pytest
from django.http import QueryDict

from fleet.forms import FineFilterForm, NotificationFilterForm, VehicleFilterForm


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
