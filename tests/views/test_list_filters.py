"""The lists' query strings: read as filters, written back the same way by every list."""

from __future__ import annotations

import html
import json
import re

import pytest
from django.http import QueryDict

from fleet.forms import FineFilterForm, NotificationFilterForm, VehicleFilterForm
from fleet.views import fines as fine_views
from fleet.webhooks.processing import deliveries_process_received
from tests.views.conftest import chips


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


# --- Filters that say what they did ---------------------------------------------------

WEBHOOK = "/webhooks/fleet/dev-webhook-token/"
ROW = re.compile(r'<tr data-testid="fine" data-key="([^"]*)"')
ENGLISH = {"Accept-Language": "en"}


@pytest.fixture
def three_fines(client):
    for number, amount, plate in (
        (71, "80.00", "ABC1D23"),
        (72, "300.00", "ABC1D23"),
        (73, "700.00", "XYZ9876"),
    ):
        payload = {"frame": {"id": number, "amount": amount, "carPlate": plate, "treated": False}}
        response = client.post(WEBHOOK, data=json.dumps(payload), content_type="application/json")
        assert response.status_code == 202
    deliveries_process_received()


def errors(page: str) -> list[str]:
    return [
        html.unescape(re.sub(r"<[^>]+>", "", error))
        for error in re.findall(r'data-testid="filter-error">(.*?)</p>', page, re.S)
    ]


def has_clear_link(page: str) -> bool:
    return 'data-testid="clear-filters"' in page


@pytest.mark.django_db
@pytest.mark.parametrize("htmx", [False, True])
@pytest.mark.parametrize(
    ("query", "said"),
    [
        (
            {"amount_min": "500", "amount_max": "100"},
            "Not filtered by “Up to R$”: R$ 100.00 is below R$ 500.00: the range holds no fine.",
        ),
        (
            {"plate": "abc"},
            "Not filtered by “Plate”: “abc” is not a plate: type it like ABC-1234 or ABC1D23.",
        ),
        (
            {"driver": "Zebedeu"},
            "Not filtered by “Driver”: No driver's name begins like “Zebedeu”: "
            "type part of a name, or an id.",
        ),
    ],
)
def test_a_filter_that_cannot_apply_is_said_not_applied_and_the_list_is_whole(
    manager_client, three_fines, query, said, htmx
):
    headers = ENGLISH | ({"HX-Request": "true"} if htmx else {})
    page = manager_client.get("/fines/", query, headers=headers).text

    assert errors(page) == [said]
    assert sorted(ROW.findall(page)) == ["71", "72", "73"]  # not silently empty, not filtered
    assert has_clear_link(page)


@pytest.mark.django_db
def test_a_range_that_holds_amounts_filters_by_them(manager_client, three_fines):
    page = manager_client.get(
        "/fines/", {"amount_min": "100", "amount_max": "500"}, headers=ENGLISH
    ).text

    assert errors(page) == []
    assert ROW.findall(page) == ["72"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("path", "query", "shown"),
    [
        ("/fines/", {}, False),
        ("/fines/", {"sort": "-amount"}, False),  # an order, not a filter
        ("/fines/", {"treated": "0"}, True),
        ("/fines/", {"q": "radar"}, True),
        ("/notifications/", {}, False),
        ("/notifications/", {"plate": "ABC1D23"}, True),
        ("/vehicles/", {}, False),
        ("/vehicles/", {"sort": "-plate"}, False),
        ("/vehicles/", {"active": "0"}, True),
        ("/vehicles/", {"q": "onix"}, True),
    ],
)
def test_a_clear_filters_link_is_there_whenever_a_filter_is_set(
    manager_client, three_fines, emulator, path, query, shown
):
    page = manager_client.get(path, query, headers=ENGLISH).text

    assert has_clear_link(page) is shown
    if shown:
        assert re.search(
            rf'<a class="chips-bar__clear" href="{path}" data-testid="clear-filters">'
            r"Clear the filters</a>",
            page,
        )


@pytest.mark.django_db
def test_each_filter_applied_is_a_chip_that_removes_it(manager_client, three_fines):
    query = "treated=0&month=2026-06&amount_min=100&basis=uncertain&sort=-amount"
    page = manager_client.get(f"/fines/?{query}", headers=ENGLISH).text

    expected = [
        (
            "Handling: Untreated",
            "/fines/?month=2026-06&amount_min=100&basis=uncertain&sort=-amount",
        ),
        (
            "Month committed: June 2026",
            "/fines/?treated=0&amount_min=100&basis=uncertain&sort=-amount",
        ),
        ("From R$: R$ 100.00", "/fines/?treated=0&month=2026-06&basis=uncertain&sort=-amount"),
        (
            "How the driver is known: Uncertain (two candidates)",
            "/fines/?treated=0&month=2026-06&amount_min=100&sort=-amount",
        ),
    ]
    assert chips(page) == expected
    assert '<span id="filters-count">Filters (4)</span>' in page
    # The checkbox's links and saved views from before the basis filter: the same filter.
    old = query.replace("basis=uncertain", "uncertain=1")
    assert chips(manager_client.get(f"/fines/?{old}", headers=ENGLISH).text) == expected
    # In Portuguese, as the page.
    portuguese = manager_client.get(
        "/vehicles/?active=1&q=onix", headers={"Accept-Language": "pt-BR"}
    )
    assert chips(portuguese.text) == [
        ("Buscar: onix", "/vehicles/?active=1"),
        ("Situação: Ativo", "/vehicles/?q=onix"),
    ]
    # A filter left out (an invalid plate) is no chip; the list says so instead.
    page = manager_client.get("/notifications/?plate=abc", headers=ENGLISH).text
    assert chips(page) == []
    assert '<span id="filters-count">Filters</span>' in page
    assert errors(page)
    assert has_clear_link(page)


@pytest.mark.django_db
def test_an_htmx_result_brings_the_count_of_filters_along(manager_client, three_fines):
    response = manager_client.get(
        "/fines/", {"treated": "0", "plate": "ABC1D23"}, headers=ENGLISH | {"HX-Request": "true"}
    )

    assert '<span id="filters-count" hx-swap-oob="true">Filters (2)</span>' in response.text


SORT_HEADER = re.compile(
    r'<th scope="col"(?: class="num")?( aria-sort="[a-z]+")?><a href="([^"]*)"[^>]*>([^<]*)</a>'
)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("path", "headers"),
    [
        (
            "/fines/?treated=0",
            [
                ("", "?treated=0&sort=-occurred_at", "Committed on"),
                ("", "?treated=0&sort=-amount", "Amount"),
            ],
        ),
        (
            "/fines/?treated=0&sort=-amount",
            [
                ("", "?treated=0&sort=-occurred_at", "Committed on"),
                (' aria-sort="descending"', "?treated=0&sort=amount", "Amount"),
            ],
        ),
        (
            "/vehicles/",
            [
                (' aria-sort="ascending"', "?sort=-plate", "Plate"),
                ("", "?sort=model", "Model"),
                ("", "?sort=-active", "Status"),
            ],
        ),
    ],
)
def test_the_columns_sort_by_their_headers_and_say_how_the_list_is_sorted(
    manager_client, three_fines, emulator, path, headers
):
    page = manager_client.get(path, headers=ENGLISH).text

    assert [
        (sort, html.unescape(href), label) for sort, href, label in SORT_HEADER.findall(page)
    ] == headers
