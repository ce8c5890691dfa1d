"""The vehicle list page, its htmx fragment and its CSV export, over the real emulator."""

from __future__ import annotations

import csv
import html
import io
import re
from datetime import timedelta

import pytest
import time_machine
from django.contrib.messages import constants
from django.contrib.messages.storage.cookie import CookieStorage
from django.http import HttpResponse
from django.test import RequestFactory
from django.utils import timezone

from fleet import plates

pytestmark = pytest.mark.django_db
ENGLISH = {"Accept-Language": "en"}
HTMX = {"HX-Request": "true"}
PLATE_CELL = re.compile(r'<a class="plate" href="/vehicles/([A-Z0-9]+)/">([^<]+)</a>')


@pytest.fixture
def fleet(fleet_settings, emulator):
    """The emulator's vehicles, as the API lists them."""
    return emulator.vehicles()


def shown_plates(response) -> list[str]:
    return [plate for plate, _ in PLATE_CELL.findall(response.text)]


def test_the_list_shows_the_first_page_and_the_counts(manager_client, fleet):
    response = manager_client.get("/vehicles/", headers=ENGLISH)

    assert response.status_code == 200
    assert f"{len(fleet)} vehicles of {len(fleet)}" in response.text
    assert len(shown_plates(response)) == 50
    assert "Page 1 of 4" in response.text


def test_plates_are_shown_in_their_own_format(manager_client, fleet):
    response = manager_client.get("/vehicles/")

    for plate, shown in PLATE_CELL.findall(response.text):
        assert shown == plates.display(plate)
    assert any("-" in shown for _, shown in PLATE_CELL.findall(response.text))


def test_search_ignores_case_hyphens_and_spaces(manager_client, fleet):
    old = next(v["car_plate"] for v in fleet if plates.display(v["car_plate"]).count("-"))
    typed = f"{old[:3].lower()}-{old[3:5]}"

    response = manager_client.get("/vehicles/", {"q": typed})

    assert old in shown_plates(response)
    assert all(old[:5] in plate for plate in shown_plates(response))


def test_search_finds_models_too(manager_client, fleet):
    model = fleet[0]["model"]
    expected = sorted(v["car_plate"] for v in fleet if model.lower() in v["model"].lower())[:50]

    response = manager_client.get("/vehicles/", {"q": model.upper()})

    assert shown_plates(response) == expected


def test_the_active_filter_keeps_only_inactive_vehicles(manager_client, fleet):
    inactive = sorted(v["car_plate"] for v in fleet if v["active"] != "1")

    response = manager_client.get("/vehicles/", {"active": "0"})

    assert shown_plates(response) == inactive[:50]


@pytest.mark.parametrize(
    ("sort", "key", "reverse"),
    [("plate", lambda v: v["car_plate"], False), ("-plate", lambda v: v["car_plate"], True)],
)
def test_sorting_by_plate_both_ways(manager_client, fleet, sort, key, reverse):
    expected = [v["car_plate"] for v in sorted(fleet, key=key, reverse=reverse)][:50]

    assert shown_plates(manager_client.get("/vehicles/", {"sort": sort})) == expected


def test_sorting_by_model_breaks_ties_by_plate(manager_client, fleet):
    expected = [
        v["car_plate"] for v in sorted(fleet, key=lambda v: (v["model"].lower(), v["car_plate"]))
    ][:50]

    assert shown_plates(manager_client.get("/vehicles/", {"sort": "model"})) == expected


def test_later_pages_and_a_page_past_the_end(manager_client, fleet):
    ordered = sorted(v["car_plate"] for v in fleet)

    assert shown_plates(manager_client.get("/vehicles/", {"page": 2})) == ordered[50:100]
    assert shown_plates(manager_client.get("/vehicles/", {"page": 999})) == ordered[150:200]


def test_malformed_parameters_fall_back_to_defaults(manager_client, fleet):
    response = manager_client.get("/vehicles/", {"sort": "drop table", "page": "x", "active": "7"})

    assert response.status_code == 200
    assert shown_plates(response) == sorted(v["car_plate"] for v in fleet)[:50]


def test_an_empty_result_says_so_and_offers_to_clear(manager_client, fleet):
    response = manager_client.get("/vehicles/", {"q": "no such vehicle"}, headers=ENGLISH)

    assert "No vehicle matches this search." in response.text
    assert 'href="/vehicles/">Clear the search' in response.text


def test_htmx_gets_only_the_results_and_caches_vary_on_it(manager_client, fleet):
    response = manager_client.get("/vehicles/", {"q": "a"}, headers=HTMX)

    assert "<html" not in response.text
    assert 'data-testid="result-count"' in response.text
    assert "HX-Request" in response["Vary"]
    # The export link in the page's head follows the new filter (out of band).
    assert (
        '<a class="button button--quiet" id="vehicles-export" '
        'href="/vehicles/export.csv?q=a" data-testid="export-csv" hx-swap-oob="true">'
    ) in response.text


def test_the_whole_page_has_one_export_link_swapped_in_place(manager_client, fleet):
    response = manager_client.get("/vehicles/", {"q": "a"})

    assert response.text.count('id="vehicles-export"') == 1
    assert 'href="/vehicles/export.csv?q=a"' in response.text
    assert "hx-swap-oob" not in response.text


def test_a_history_restore_gets_the_whole_page(manager_client, fleet):
    response = manager_client.get(
        "/vehicles/", {"q": "a"}, headers=HTMX | {"HX-History-Restore-Request": "true"}
    )

    assert "<html" in response.text


def test_rows_link_to_the_vehicle_and_to_the_fleet_app(manager_client, fleet):
    response = manager_client.get("/vehicles/")

    plate = shown_plates(response)[0]
    assert f'href="/vehicles/{plate}/"' in response.text
    assert (
        '<button type="submit" form="app-open" name="next" value="/vehicles/" '
        'class="link-button">Abrir no aplicativo da frota</button>'
    ) in response.text


def test_what_the_api_and_the_query_hold_is_escaped_not_markup(manager_client, emulator):
    hostile = '<img src=x onerror="alert(1)">'
    emulator.fault(
        "/key/list-cars",
        body={
            "cars": {
                "data": [
                    {
                        "id": 1,
                        "car_plate": "ABC1D23",
                        "model": hostile,
                        "active": "1",
                        "driver_id": None,
                    },
                ],
                "total": 1,
            },
            "error": False,
            "code": "fbk_200",
        },
    )
    query = '"><script>x</script>'

    response = manager_client.get("/vehicles/", {"q": "abc", "sort": query})
    searched = manager_client.get("/vehicles/", {"q": query})

    assert hostile not in response.text
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in response.text
    assert "<script>x</script>" not in searched.text
    assert 'value="&quot;&gt;&lt;script&gt;x&lt;/script&gt;"' in searched.text
    (next_page,) = set(re.findall(r'form="app-open" name="next" value="([^"]+)"', response.text))
    assert html.unescape(next_page) == response.wsgi_request.get_full_path()


def test_export_streams_the_current_filter_as_csv_for_brazilian_excel(manager_client, fleet):
    response = manager_client.get("/vehicles/export.csv", {"active": "1", "sort": "-plate"})

    assert response.status_code == 200
    assert response.streaming
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"].startswith('attachment; filename="vehicles-')
    text = b"".join(response.streaming_content).decode("utf-8")
    assert text.startswith("\ufeff")
    rows = list(csv.reader(io.StringIO(text.lstrip("\ufeff")), delimiter=";"))
    assert rows[0] == ["Placa", "Modelo", "Situação", "ID do condutor", "Condutor", "ID do veículo"]
    active = sorted(
        (v for v in fleet if v["active"] == "1"), key=lambda v: v["car_plate"], reverse=True
    )
    assert [row[0] for row in rows[1:]] == [plates.display(v["car_plate"]) for v in active]


def test_export_uses_commas_in_english(manager_client, fleet):
    response = manager_client.get("/vehicles/export.csv", headers=ENGLISH)

    text = b"".join(response.streaming_content).decode("utf-8")
    header = text.lstrip("\ufeff").splitlines()[0]
    assert header == "Plate,Model,Status,Driver ID,Driver,Vehicle ID"
    assert len(text.splitlines()) == len(fleet) + 1


def test_the_list_is_fetched_once_while_fresh(manager_client, emulator, fleet_settings):
    for _ in range(3):
        manager_client.get("/vehicles/", {"q": "a"})

    assert emulator.calls("GET /key/list-cars") == 1


def test_no_data_and_a_failing_api_say_so_without_a_500(manager_client, emulator, fleet_settings):
    emulator.fault("/key/list-cars", status=503, count=5)

    page = manager_client.get("/vehicles/", headers=ENGLISH)
    fragment = manager_client.get("/vehicles/", headers=HTMX | ENGLISH)

    assert page.status_code == 503
    assert "The fleet service did not answer" in page.text
    assert fragment.status_code == 200
    assert "The fleet service did not answer" in fragment.text


def test_rate_limited_with_no_data_says_how_long_and_retries_by_itself(
    manager_client, emulator, fleet_settings
):
    emulator.fault("/key/list-cars", status=429, retry_after=30)

    with time_machine.travel(timezone.now(), tick=False):  # "30 s" left, not 29.4 on a slow day
        response = manager_client.get("/vehicles/", headers=ENGLISH)

    assert "The fleet service asked us to wait 30 s" in response.text
    assert 'hx-trigger="load delay:30s"' in response.text


def test_stale_data_is_served_with_its_time_and_a_refresh_button(
    manager_client, emulator, fleet_settings, fleet
):
    manager_client.get("/vehicles/")
    emulator.fault("/key/list-cars", status=503, count=5)

    later = timezone.now() + timedelta(seconds=fleet_settings.FLEET_VEHICLES_TTL + 5)
    with time_machine.travel(later, tick=False):
        manager_client.get("/vehicles/")  # served stale; its refresh after the response fails
        response = manager_client.get("/vehicles/", headers=ENGLISH)

    assert response.status_code == 200
    assert "Data as of" in response.text
    assert "this is the last copy we have" in response.text
    assert 'action="/vehicles/refresh"' in response.text
    assert len(shown_plates(response)) == 50


def test_anonymous_visitors_are_sent_to_log_in(client, emulator):
    for path in ("/vehicles/", "/vehicles/export.csv"):
        assert client.get(path)["Location"].startswith("/accounts/login/")
    assert emulator.calls("GET /key/list-cars") == 0


# --- Pages kept per version of the fleet (portal.lib.render_cache) ---------------------------

CSRF_HEADER = re.compile(r'hx-headers=\'\{"X-CSRFToken": "(\w+)"\}\'')
CSRF_FIELD = re.compile(r'name="csrfmiddlewaretoken" value="(\w+)"')
NONCE = re.compile(r'<script [^>]*nonce="([\w-]+)"')


def test_a_kept_page_never_repeats_a_csrf_token_or_nonce_and_its_token_works(
    client, manager, fleet
):
    client = type(client)(enforce_csrf_checks=True)
    client.force_login(manager)
    pages = [client.get("/vehicles/", {"q": "a"}).text for _ in range(3)]

    headers = [CSRF_HEADER.findall(page)[0] for page in pages]
    nonces = [NONCE.findall(page)[0] for page in pages]
    # The logout form's and the deep-link form's, each the page's own token.
    assert [CSRF_FIELD.findall(page) for page in pages] == [[h, h] for h in headers]
    assert len(set(headers)) == len(set(nonces)) == 3
    # The token of the last (kept) page is this session's: the refresh form posts with it.
    refreshed = client.post(
        "/vehicles/refresh", {"query_string": "q=a"}, headers={"X-CSRFToken": headers[-1]}
    )
    assert refreshed.status_code == 302


def test_a_kept_page_is_never_served_to_another_user(client, manager, fleet, django_user_model):
    admin = django_user_model.objects.create_user(
        username="chefe", first_name="Beatriz", is_staff=True
    )
    client.get("/vehicles/")  # anonymous: to the login page
    client.force_login(manager)
    as_manager = client.get("/vehicles/").text
    client.force_login(admin)
    as_admin = client.get("/vehicles/").text

    assert "Marcos" in as_manager
    assert "Beatriz" not in as_manager
    assert 'href="/admin/"' not in as_manager
    assert "Beatriz" in as_admin
    assert "Marcos" not in as_admin
    assert 'href="/admin/"' in as_admin


def test_a_kept_page_is_never_served_in_another_language(manager_client, fleet):
    count = f"{len(fleet)} vehicles of {len(fleet)}"
    for _ in range(2):
        english = manager_client.get("/vehicles/", headers=ENGLISH)
        portuguese = manager_client.get("/vehicles/", headers={"Accept-Language": "pt-BR"})
        fragment = manager_client.get("/vehicles/", headers=HTMX | ENGLISH)

        assert count in english.text
        assert 'lang="en"' in english.text
        assert count not in portuguese.text
        assert f"{len(fleet)} veículos de {len(fleet)}" in portuguese.text
        assert count in fragment.text


def test_kept_results_follow_the_fleet_when_it_changes(manager_client, emulator, fleet):
    manager_client.get("/vehicles/", headers=ENGLISH)
    manager_client.get("/vehicles/", headers=HTMX | ENGLISH)
    emulator.fault(
        "/key/list-cars",
        body={
            "cars": {
                "data": [{"id": 1, "car_plate": "NEW0A01", "model": "Fiat Uno", "active": "1"}],
                "total": 1,
            },
            "error": False,
            "code": "fbk_200",
        },
    )

    manager_client.post("/vehicles/refresh")  # a new version of the fleet
    page = manager_client.get("/vehicles/", headers=ENGLISH)
    fragment = manager_client.get("/vehicles/", headers=HTMX | ENGLISH)

    for response in (page, fragment):
        assert shown_plates(response) == ["NEW0A01"]
        assert "1 vehicle of 1" in response.text


def test_a_page_with_a_message_shows_it_once(manager_client, fleet):
    manager_client.get("/vehicles/")  # kept
    request = RequestFactory().get("/")
    storage = CookieStorage(request)
    storage.add(constants.INFO, "The list was refreshed.")
    response = HttpResponse()
    storage.update(response)
    manager_client.cookies["messages"] = response.cookies["messages"].value

    shown = manager_client.get("/vehicles/")
    after = manager_client.get("/vehicles/")

    assert "The list was refreshed." in shown.text
    assert "The list was refreshed." not in after.text


def test_a_stale_list_is_served_at_once_and_replaced_after_the_response(
    manager_client, emulator, fleet_settings, fleet
):
    manager_client.get("/vehicles/")
    calls = emulator.calls("GET /key/list-cars")

    later = timezone.now() + timedelta(seconds=fleet_settings.FLEET_VEHICLES_TTL + 5)
    with time_machine.travel(later, tick=False):
        first = manager_client.get("/vehicles/", headers=ENGLISH)
        refreshed = emulator.calls("GET /key/list-cars")  # by the time the client has the page
        second = manager_client.get("/vehicles/", headers=ENGLISH)

    # The first page was made from the stale list (at a million vehicles the call takes
    # seconds, which nobody waits for); the call came after it; the next page is new.
    assert "a newer copy is being fetched" in first.text
    assert 'data-testid="refreshing"' in first.text
    assert 'hx-trigger="load delay:3s"' in first.text
    assert refreshed == calls + 1
    assert 'data-testid="stale-notice"' not in second.text
    assert "updated at" in second.text
    assert emulator.calls("GET /key/list-cars") == calls + 1
    assert len(shown_plates(second)) == 50


def test_stale_results_are_rendered_for_each_request(
    manager_client, emulator, fleet_settings, fleet
):
    manager_client.get("/vehicles/", headers=ENGLISH)  # fresh, kept
    emulator.fault("/key/list-cars", status=503, count=5)

    later = timezone.now() + timedelta(seconds=fleet_settings.FLEET_VEHICLES_TTL + 5)
    with time_machine.travel(later, tick=False):
        manager_client.get("/vehicles/")  # served stale; its refresh after the response fails
        pages = [manager_client.get("/vehicles/", headers=ENGLISH).text for _ in range(2)]

    for page in pages:
        assert "Data as of" in page
    tokens = [CSRF_FIELD.findall(page) for page in pages]
    assert all(len(found) == 3 for found in tokens)  # the refresh, logout and deep-link forms
    assert tokens[0][0] != tokens[1][0]


def test_the_rows_speak_portuguese_to_a_brazilian_manager(manager_client, fleet):
    response = manager_client.get("/vehicles/", headers={"Accept-Language": "pt-BR"})

    assert "Abrir no aplicativo da frota" in response.text
    assert "Open in fleet app" not in response.text
    assert ">Ativo<" in response.text
