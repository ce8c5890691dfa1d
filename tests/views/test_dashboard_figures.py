"""The dashboard's money figures, the fines list's new filters, totals and saved views, and
the driver page: fines fed through the real receiver and processing, vehicles from the
emulator's list."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from fleet import plates
from fleet.models import Driver, Fine, SavedFineView
from fleet.services.attribution import fine_drivers_attribute
from fleet.services.dashboard import fine_figures, month_start
from fleet.services.vehicles import vehicle_search
from fleet.webhooks.processing import deliveries_process_received

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("held_clock")]

WEBHOOK = "/webhooks/fleet/dev-webhook-token/"
ENGLISH = {"Accept-Language": "en"}
ROW = re.compile(r'<tr data-testid="fine" data-key="([^"]*)"')


def deliver(client, payload) -> None:
    response = client.post(WEBHOOK, data=json.dumps(payload), content_type="application/json")
    assert response.status_code == 202, response.content
    deliveries_process_received()


def a_fine(id, *, plate="ABC1D23", amount="100.00", months_ago=0, treated=False, **fields):
    committed = month_start(timezone.localdate(), back=months_ago) + timedelta(days=3)
    occurred = datetime.combine(committed, datetime.min.time(), tzinfo=UTC) + timedelta(hours=15)
    return {
        "frame": {
            "id": id,
            "treated": treated,
            "carPlate": plate,
            "description": f"Infração {id}",
            "occurredAt": occurred.isoformat().replace("+00:00", "Z"),
            "amount": amount,
            **fields,
        },
        "linkFrame": None,
        "link": "https://boletos.example/1",
    }


def keys(response) -> list[str]:
    return ROW.findall(response.text)


@pytest.fixture
def fleet(emulator, fleet_settings):
    """The emulator's vehicles with a driver, the list already read by the portal (as any
    page that shows vehicles does), so that processing attributes fines to drivers."""
    vehicle_search()
    return [v for v in emulator.vehicles() if v["driver_id"] is not None]


def test_amounts_and_dates_become_columns_and_a_malformed_amount_is_kept_as_sent(client):
    deliver(client, a_fine(1, amount="293.47"))
    deliver(client, a_fine(2, amount="a lot"))
    deliver(client, a_fine(3, amount="1e40"))
    deliver(client, a_fine(4, amount=88.5))

    fines = {fine.external_id: fine for fine in Fine.objects.all()}
    assert fines["1"].amount == Decimal("293.47")
    assert fines["1"].occurred_at is not None
    assert fines["2"].amount is None
    assert fines["2"].amount_text == "a lot"
    assert fines["3"].amount is None
    assert fines["4"].amount == Decimal("88.50")


def test_a_malformed_date_is_null_and_the_fine_is_still_written(client):
    deliver(client, a_fine(1, occurredAt="yesterday"))

    fine = Fine.objects.get()
    assert fine.occurred_at is None
    assert fine.occurred_at_text == "yesterday"


def test_an_update_changes_the_amount(client):
    deliver(client, a_fine(1, amount="100.00", updatedAt="2026-01-01T00:00:00Z"))
    deliver(client, a_fine(1, amount="130.16", updatedAt="2026-01-02T00:00:00Z"))

    assert Fine.objects.get().amount == Decimal("130.16")


def test_fines_get_their_vehicles_driver(client, fleet):
    first, second = fleet[0], fleet[1]
    deliver(client, a_fine(1, plate=first["car_plate"]))
    deliver(client, a_fine(2, plate=second["car_plate"]))
    deliver(client, a_fine(3, plate="ZZZ9Z99"))  # not in the fleet

    drivers = dict(Fine.objects.values_list("external_id", "driver_id"))
    assert drivers == {"1": first["driver_id"], "2": second["driver_id"], "3": None}


def test_fines_written_without_a_vehicle_list_get_their_driver_later(client, emulator, settings):
    settings.FLEET_BASE_URL = emulator.url
    vehicle = next(v for v in emulator.vehicles() if v["driver_id"] is not None)
    deliver(client, a_fine(1, plate=vehicle["car_plate"]))
    assert Fine.objects.get().driver_id is None  # no list at hand: no API call in processing

    assert fine_drivers_attribute() == 1  # the worker's task, which fetches the list

    assert Fine.objects.get().driver_id == vehicle["driver_id"]


def test_the_figures_sum_the_fines(client, fleet):
    a, b = fleet[0], fleet[1]
    deliver(client, a_fine(1, plate=a["car_plate"], amount="100.10"))
    deliver(client, a_fine(2, plate=a["car_plate"], amount="200.20", months_ago=1))
    deliver(client, a_fine(3, plate=b["car_plate"], amount="50.00", months_ago=1))
    deliver(client, a_fine(4, plate=b["car_plate"], amount="999.99", treated=True))
    deliver(client, a_fine(5, plate=b["car_plate"], amount="1.00", months_ago=13))

    figures = fine_figures()

    assert (figures.untreated.count, figures.untreated.amount) == (4, Decimal("351.30"))
    months = {m.query: (m.count, m.amount) for m in figures.months}
    assert len(months) == 12
    this_month = month_start(timezone.localdate())
    last_month = month_start(timezone.localdate(), back=1)
    assert months[this_month.strftime("%Y-%m")] == (2, Decimal("1100.09"))
    assert months[last_month.strftime("%Y-%m")] == (2, Decimal("250.20"))
    assert figures.months_total.count == 4  # the fine of 13 months ago is not in the chart
    assert [(v.registration, v.count, v.amount) for v in figures.top_vehicles] == [
        (plates.registration(a["car_plate"]), 2, Decimal("300.30")),
        (plates.registration(b["car_plate"]), 2, Decimal("51.00")),
    ]
    # No history yet: each fine's driver is the vehicle list's when it arrived, a guess.
    # None is ranked; they are counted apart, as probable.
    assert figures.top_drivers == []
    assert (figures.probable.count, figures.probable.amount) == (4, Decimal("351.30"))
    assert figures.uncertain.count == 0
    assert (figures.recent.count, figures.recent.amount) == (5, Decimal("1351.29"))


def test_the_dashboard_shows_the_figures_with_links_and_a_text_alternative(
    client, manager_client, fleet
):
    a = fleet[0]
    Driver.objects.create(driver_id=a["driver_id"], name="Ana Souza")
    deliver(client, a_fine(1, plate=a["car_plate"], amount="1234.56"))

    response = manager_client.get("/", headers=ENGLISH)

    text = response.text
    assert 'data-testid="untreated-amount">R$&nbsp;1,234.56<' in text
    assert "in 1 untreated fine" in text
    month = month_start(timezone.localdate()).strftime("%Y-%m")
    assert f'href="/fines/?month={month}" data-testid="month-amount">1,234.56<' in text
    assert '<svg class="chart__svg"' in text
    assert "1 fine committed in the last 12 months, R$ 1,234.56 in all." in text
    # The vehicle list's driver is a guess: not ranked, but said and linked to the list.
    assert f'href="/fines/?driver={a["driver_id"]}&amp;treated=0"' not in text
    assert "Ana Souza" not in text
    assert "No untreated fine has an established driver yet." in text
    assert '<a href="/fines/?basis=list&amp;treated=0" data-testid="left-out-probable"' in text
    assert "1 fine whose driver is probable (R$ 1,234.56)" in text
    listed = manager_client.get("/fines/?basis=list&treated=0", headers=ENGLISH).text
    assert listed.count('data-testid="fine"') == 1
    assert 'data-basis="list"' in listed
    assert ">probable</span>" in listed
    assert 'style="' not in text  # the CSP has no unsafe-inline


def test_the_dashboard_reads_the_figures_from_the_cache_until_a_fine_changes(
    client, manager_client
):
    deliver(client, a_fine(1))
    manager_client.get("/")
    with CaptureQueriesContext(connection) as first:
        manager_client.get("/")
    deliver(client, a_fine(2, amount="5.00"))

    assert fine_figures().untreated.count == 2
    # Warm: session, user, the record counts and the cache key's index read, no figure.
    assert not any("GROUP BY" in q["sql"] and "occurred_at" in q["sql"] for q in first)


def test_the_dashboard_asks_a_fixed_number_of_queries(client, manager_client, fleet):
    from django.core.cache import cache

    for number, vehicle in enumerate(fleet[:3]):
        deliver(client, a_fine(number + 1, plate=vehicle["car_plate"]))
    cache.clear()  # the figures processing prepared: read them again
    with CaptureQueriesContext(connection) as few:
        manager_client.get("/")
    for number, vehicle in enumerate(fleet[3:12]):
        deliver(client, a_fine(number + 10, plate=vehicle["car_plate"], months_ago=number))
    cache.clear()
    with CaptureQueriesContext(connection) as many:
        manager_client.get("/")

    assert len(many) == len(few)


def test_the_list_filters_by_vehicle_driver_month_amount_and_sorts(client, manager_client, fleet):
    a, b = fleet[0], fleet[1]
    deliver(client, a_fine(1, plate=a["car_plate"], amount="10.00"))
    deliver(client, a_fine(2, plate=a["car_plate"], amount="300.00", months_ago=2))
    deliver(client, a_fine(3, plate=b["car_plate"], amount="75.50"))
    month = month_start(timezone.localdate(), back=2).strftime("%Y-%m")

    assert sorted(keys(manager_client.get("/fines/", {"plate": a["car_plate"]}))) == ["1", "2"]
    assert keys(manager_client.get("/fines/", {"month": month})) == ["2"]
    assert keys(manager_client.get("/fines/", {"amount_min": "50", "amount_max": "100"})) == ["3"]
    assert keys(manager_client.get("/fines/", {"sort": "-amount"})) == ["2", "3", "1"]
    assert keys(manager_client.get("/fines/", {"sort": "amount"})) == ["1", "3", "2"]
    if a["driver_id"] != b["driver_id"]:
        by_driver = manager_client.get("/fines/", {"driver": a["driver_id"]})
        assert sorted(keys(by_driver)) == ["1", "2"]
    # Nonsense falls back to no filter, and says why.
    response = manager_client.get("/fines/", {"month": "2026-13"}, headers=ENGLISH)
    assert len(keys(response)) == 3
    assert "Choose a month" in response.text


def test_the_list_shows_the_totals_of_the_filtered_fines(client, manager_client):
    deliver(client, a_fine(1, amount="10.25"))
    deliver(client, a_fine(2, amount="1000.00"))
    deliver(client, a_fine(3, amount="5.00", treated=True))

    response = manager_client.get("/fines/", {"treated": "0"}, headers=ENGLISH)

    assert "2 fines" in response.text
    assert 'data-testid="result-amount">R$ 1,010.25 in all<' in response.text


def test_the_received_since_filter_is_what_the_dashboard_links_to(client, manager_client):
    deliver(client, a_fine(1))
    Fine.objects.update(received_at=timezone.now() - timedelta(days=10))
    deliver(client, a_fine(2))

    dashboard = manager_client.get("/").text
    link = re.search(r'href="(/fines/\?received_from=[\d-]+)" data-testid="recent-link"', dashboard)

    assert link is not None
    assert keys(manager_client.get(link[1])) == ["2"]


def test_a_saved_view_is_the_users_own_and_comes_back(manager_client, django_user_model):
    response = manager_client.post(
        "/fines/views/", {"name": " Large  fines ", "query": "amount_min=500&nonsense=1&treated=0"}
    )

    view = SavedFineView.objects.get()
    assert (view.name, view.query) == ("Large fines", "treated=0&amount_min=500")
    assert response.url == "/fines/?treated=0&amount_min=500"
    page = manager_client.get("/fines/").text
    assert 'href="/fines/?treated=0&amp;amount_min=500" data-testid="saved-view"' in page
    # Another user sees none of it, and cannot delete it.
    other = Client()
    other.force_login(django_user_model.objects.create_user("other", password="pw-123456"))
    assert 'data-testid="saved-view"' not in other.get("/fines/").text
    assert other.post(f"/fines/views/{view.pk}/delete").status_code == 404
    assert manager_client.post(f"/fines/views/{view.pk}/delete").status_code == 302
    assert not SavedFineView.objects.exists()


def test_the_driver_page_lists_their_vehicles_and_fines(client, manager_client, fleet):
    driver = fleet[0]["driver_id"]
    theirs = [v for v in fleet if v["driver_id"] == driver]
    deliver(client, a_fine(1, plate=theirs[0]["car_plate"], amount="40.00"))
    deliver(client, a_fine(2, plate=theirs[0]["car_plate"], amount="2.00", treated=True))

    response = manager_client.get(f"/drivers/{driver}/", headers=ENGLISH)

    assert response.status_code == 200
    assert response.text.count('data-testid="driver-fine"') == 2
    assert 'data-testid="driver-fines">2<' in response.text
    assert "R$ 42.00" in response.text
    assert 'data-testid="driver-untreated">1<' in response.text
    assert all(v["model"] in response.text for v in theirs)


def test_the_driver_page_does_not_take_the_cnh_pages(manager_client, fleet):
    assert manager_client.get("/drivers/cnh/").status_code == 200
    assert manager_client.get("/drivers/cnh/").resolver_match.url_name == "cnh"
    assert manager_client.get("/drivers/12/").resolver_match.url_name == "driver"
    assert manager_client.get("/drivers/abc/").status_code == 404


def test_the_chart_draws_and_writes_one_measure_the_count_of_fines(client, manager_client):
    """A month of few costly fines stands lower than a month of many cheap ones: the bars
    and the numbers on them are counts; the R$ is in each bar's tooltip and the table."""
    deliver(client, a_fine(1, amount="2000.00", months_ago=1))
    for number in (2, 3, 4):
        deliver(client, a_fine(number, amount="10.00"))

    bars = {bar.month.query: bar for bar in fine_figures().chart().bars}
    this_month = month_start(timezone.localdate()).strftime("%Y-%m")
    last_month = month_start(timezone.localdate(), back=1).strftime("%Y-%m")
    assert abs(bars[this_month].height - 3 * bars[last_month].height) <= 1  # rounded
    assert bars[last_month].height > 0
    page = manager_client.get("/", headers=ENGLISH).text
    svg = re.search(r'<svg class="chart__svg".*?</svg>', page, re.S)
    assert svg
    written = re.findall(r'<text class="chart__value"[^>]*>(\d+)</text>', svg[0])
    assert sorted(written, key=int)[-2:] == ["1", "3"]
    assert re.search(r"<title>[^<]*: 1 fine, R\$ 2,000\.00</title>", svg[0])
    assert re.search(r"<title>[^<]*: 3 fines, R\$ 30\.00</title>", svg[0])
    assert "Number of fines by month committed" in page
