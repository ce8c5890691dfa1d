"""Drivers by name: the fines list's driver filter is a picker that finds a driver by part
of the name or by id, and a vehicle's page links its driver by name; a driver without
one is "Driver 154"."""

from __future__ import annotations

import html
import json
import re
from typing import Any

import pytest
from django.db import connection
from django.db.models.signals import post_save
from django.test.utils import CaptureQueriesContext
from django.utils.html import strip_tags

from fleet.models import Driver, Fine
from fleet.services.drivers import driver_id_typed, driver_words_write
from fleet.services.vehicles import vehicle_search
from fleet.views import fines as fine_views
from fleet.webhooks.processing import deliveries_process_received
from tests.interleave import held_at, start

pytestmark = pytest.mark.django_db

WEBHOOK = "/webhooks/fleet/dev-webhook-token/"
ENGLISH = {"Accept-Language": "en"}
ROW = re.compile(r'<tr data-testid="fine" data-key="([^"]*)"')
CHOICE = re.compile(
    r'data-driver-choice="([^"]*)" data-testid="driver-choice">([^<]*?) <span class="muted">'
)


def deliver(client, *fines: tuple[int, str]) -> None:
    for number, plate in fines:
        payload = {"frame": {"id": number, "treated": False, "carPlate": plate}, "link": None}
        response = client.post(WEBHOOK, data=json.dumps(payload), content_type="application/json")
        assert response.status_code == 202, response.content
    deliveries_process_received()


def keys(response) -> list[str]:
    return sorted(ROW.findall(response.text))


def suggested(client, typed: str) -> list[tuple[int, str]]:
    """The drivers the picker suggests as `typed` is typed: id and name shown, sorted."""
    response = client.get("/fines/drivers/", {"driver": typed}, headers=ENGLISH)
    assert response.status_code == 200
    found = []
    for label, shown in CHOICE.findall(response.text):
        driver_id = driver_id_typed(html.unescape(label))  # as the field reads it back
        assert driver_id is not None, label
        found.append((driver_id, html.unescape(shown)))
    return sorted(found)


def field_value(response) -> str:
    """What the driver field holds."""
    field = re.search(r'<input type="search" name="driver"[^>]*>', response.text)
    assert field
    value = re.search(r' value="([^"]*)"', field[0])
    return html.unescape(value[1]) if value else ""


@pytest.fixture
def drivers(client, emulator, fleet_settings):
    """Three vehicles of three drivers of the emulator's fleet, each with a fine attributed
    to its driver (the portal read the vehicle list first, as any vehicle page does)."""
    vehicle_search()
    chosen: dict[int, dict[str, Any]] = {}
    for vehicle in emulator.vehicles():
        if vehicle["driver_id"] is not None and len(chosen) < 3:
            chosen.setdefault(vehicle["driver_id"], vehicle)
    vehicles = list(chosen.values())
    deliver(client, *((number, v["car_plate"]) for number, v in enumerate(vehicles, start=1)))
    assert set(Fine.objects.values_list("driver_id", flat=True)) == set(chosen)
    return vehicles


def test_the_driver_filter_is_a_text_field_that_suggests_drivers_as_it_is_typed(
    manager_client, drivers
):
    ana, bruno, unnamed = (vehicle["driver_id"] for vehicle in drivers)
    Driver.objects.create(driver_id=bruno, name="Bruno Souza Lima")
    Driver.objects.create(driver_id=ana, name="Ana Souza")
    no_fine = Driver.objects.create(driver_id=99_999, name="Carla Dias")  # named, no fine yet

    page = manager_client.get("/fines/", headers=ENGLISH).text

    assert '<label for="id_driver">Driver</label>' in page
    field = re.search(r'<input type="search" name="driver"[^>]*>', page)
    assert field, "no driver field"
    assert 'hx-get="/fines/drivers/"' in field[0]
    assert 'aria-controls="driver-choices"' in field[0]
    # No list of the drivers in the filters (the fines' rows name their drivers).
    filters = re.search(r'<form class="filters".*?</form>', page, re.DOTALL)
    assert filters
    assert "Souza" not in filters[0]
    assert "Carla" not in page
    # Words that begin words of the names, accents and case aside, in any order.
    assert suggested(manager_client, "sou") == [
        (ana, "Ana Souza"),
        (bruno, "Bruno Souza Lima"),
    ]
    assert suggested(manager_client, "LIMA sóu") == [(bruno, "Bruno Souza Lima")]
    assert suggested(manager_client, "carla") == [(no_fine.driver_id, "Carla Dias")]
    # By id, a driver without a name too.
    assert suggested(manager_client, str(unnamed)) == [(unnamed, f"Driver {unnamed}")]
    assert suggested(manager_client, "ouza") == []  # a word's middle is no beginning
    none = manager_client.get("/fines/drivers/", {"driver": "xyz"}, headers=ENGLISH).text
    assert html.unescape(strip_tags(none)).strip() == "No driver's name begins like “xyz”."


def test_choosing_a_driver_lists_their_fines_and_keeps_the_choice(manager_client, drivers):
    ana = drivers[0]["driver_id"]
    Driver.objects.create(driver_id=ana, name="Ana Souza")

    for typed in (str(ana), f"Ana Souza ({ana})", "ana souza", "  ANA  "):
        response = manager_client.get("/fines/", {"driver": typed}, headers=ENGLISH)

        assert keys(response) == ["1"], typed
        assert field_value(response) == f"Ana Souza ({ana})"
        assert 'data-testid="filter-error"' not in response.text
        # The export and a saved view keep it as `driver=<id>`, as the dashboard links it.
        assert f'href="/fines/export.csv?driver={ana}"' in response.text
    assert manager_client.get(f"/fines/?driver={ana}&treated=0").status_code == 200


def test_the_field_shows_a_renamed_driver_by_their_new_name(manager_client, drivers):
    """The filter form is kept as rendered for what it shows: with a driver, as the driver
    is named when the page is asked for, which an import of names changes."""
    fine_views._filter_forms.clear()
    ana = drivers[0]["driver_id"]
    Driver.objects.create(driver_id=ana, name="Ana Souza")
    for typed in (str(ana), "ana souza"):  # both show the same form, rendered once
        response = manager_client.get("/fines/", {"driver": typed}, headers=ENGLISH)
        assert field_value(response) == f"Ana Souza ({ana})"
        assert len(fine_views._filter_forms) == 1

    Driver.objects.filter(driver_id=ana).update(name="Ana Lima")

    response = manager_client.get("/fines/", {"driver": str(ana)}, headers=ENGLISH)
    assert field_value(response) == f"Ana Lima ({ana})"


def test_a_driver_the_portal_knows_nothing_of_is_filtered_by_id_with_no_fines(
    manager_client, drivers
):
    # The driver page links every driver's fines, a driver without name or fine too.
    response = manager_client.get("/fines/", {"driver": "424242"}, headers=ENGLISH)

    assert response.status_code == 200
    assert 'data-testid="filter-error"' not in response.text
    assert field_value(response) == "424242"
    assert keys(response) == []


@pytest.mark.parametrize(
    ("bogus", "error"),
    [
        ("0", "“0” is no driver id: type a name, or choose a driver."),
        ("99999999999", "“99999999999” is no driver id: type a name, or choose a driver."),
        ("abc", "No driver's name begins like “abc”: type part of a name, or an id."),
        ("-1", "No driver's name begins like “-1”: type part of a name, or an id."),
        ("٣", "No driver's name begins like “٣”: type part of a name, or an id."),
    ],
)
def test_a_driver_filter_that_names_no_driver_is_a_form_error(
    manager_client, drivers, bogus, error
):
    response = manager_client.get("/fines/", {"driver": bogus}, headers=ENGLISH)

    assert response.status_code == 200
    found = re.search(r'data-testid="filter-error">([^<]*)<', response.text)
    assert found, bogus
    assert html.unescape(found[1]) == f"Not filtered by “Driver”: {error}"
    assert keys(response) == ["1", "2", "3"]  # left unfiltered, as the error says


def test_a_name_two_drivers_share_offers_each_by_id(manager_client, drivers):
    first, second = drivers[0]["driver_id"], drivers[1]["driver_id"]
    Driver.objects.create(driver_id=first, name="José Silva")
    Driver.objects.create(driver_id=second, name="José Silva")

    response = manager_client.get(
        "/fines/", {"driver": "jose silva", "treated": "0"}, headers=ENGLISH
    )

    error = re.search(r'data-testid="filter-error">([^<]*)<', response.text)
    assert error
    assert html.unescape(error[1]) == (
        "Not filtered by “Driver”: “jose silva” fits more than one driver: choose one."
    )
    assert keys(response) == ["1", "2", "3"]
    found = re.search(r'<ul class="picker__found"[^>]*>(.*?)</ul>', response.text, re.DOTALL)
    assert found
    links = re.findall(r'<a href="([^"]*)">([^<]*)</a>', found[1])
    # Each link keeps the other filters.
    assert sorted(links) == sorted(
        (html.escape(f"/fines/?treated=0&driver={driver}"), "José Silva")
        for driver in (first, second)
    )
    assert suggested(manager_client, "José") == sorted(
        [(first, "José Silva"), (second, "José Silva")]
    )


def test_the_choices_stay_few_however_many_drivers_a_name_fits(manager_client, drivers):
    """A picker, not a list of the fleet: 3,000 drivers called Ana, ten choices at most."""
    Driver.objects.bulk_create(Driver(driver_id=10_000 + n, name=f"Ana {n}") for n in range(3000))
    driver_words_write(Driver.objects.filter(driver_id__gte=10_000))

    assert len(suggested(manager_client, "ana")) == 10
    page = manager_client.get("/fines/", {"driver": "ana"}, headers=ENGLISH).text
    found = re.search(r'<ul class="picker__found"[^>]*>(.*?)</ul>', page, re.DOTALL)
    assert found
    assert found[1].count("<li>") == 10
    assert page.count("Ana ") < 20
    assert suggested(manager_client, "ana 2999") == [(12_999, "Ana 2999")]


def test_a_name_is_found_in_the_range_of_its_word_in_the_index(manager_client, drivers):
    """A word typed, the whole fleet: the drivers are read from the word's range of the
    index, in its order, and stop at the tenth; no condition over every driver (with
    one, SQLite read all the drivers first: 25 ms at 126,000 names)."""
    Driver.objects.bulk_create(Driver(driver_id=10_000 + n, name=f"Ana {n}") for n in range(300))
    driver_words_write(Driver.objects.filter(driver_id__gte=10_000))

    with CaptureQueriesContext(connection) as queries:
        assert len(suggested(manager_client, "ana")) == 10
    [words] = [query["sql"] for query in queries if "fleet_driverword" in query["sql"]]
    assert "SELECT" not in words.upper().split(" FROM ", 1)[1], words
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN QUERY PLAN {words}")
            plan = [row[3] for row in cursor.fetchall()]
        assert "INDEX fleet_driver_word (word>? AND word<?)" in plan[0], plan
        assert not any("TEMP B-TREE" in line for line in plan), plan


def test_the_vehicle_page_links_its_driver_by_name(manager_client, drivers):
    named, unnamed = drivers[0], drivers[2]
    Driver.objects.create(driver_id=named["driver_id"], name="Ana Souza")

    page = manager_client.get(f"/vehicles/{named['car_plate']}/", headers=ENGLISH).text
    other = manager_client.get(f"/vehicles/{unnamed['car_plate']}/").text  # in Portuguese

    assert (
        f'<a href="/drivers/{named["driver_id"]}/" data-testid="vehicle-driver">Ana Souza</a>'
        in page
    )
    assert (
        f'<a href="/drivers/{unnamed["driver_id"]}/" data-testid="vehicle-driver">'
        f"Condutor {unnamed['driver_id']}</a>" in other
    )


def test_the_lists_name_each_driver_and_follow_a_new_name(
    manager_client, drivers, django_capture_on_commit_callbacks
):
    """The fines and vehicles lists link each driver by name, or as "Driver <id>" where
    the portal knows no name; a row kept from before shows a name given since (once
    committed: the test's transaction never is, the callbacks run as a commit runs them)."""
    named, unnamed = drivers[0], drivers[2]
    Driver.objects.create(driver_id=named["driver_id"], name="Ana Souza")

    for path in ("/fines/", "/vehicles/"):
        page = manager_client.get(path, headers=ENGLISH).text
        assert f'<a href="/drivers/{named["driver_id"]}/">Ana Souza</a>' in page, path
        unnamed_link = (
            f'<a href="/drivers/{unnamed["driver_id"]}/">Driver {unnamed["driver_id"]}</a>'
        )
        assert unnamed_link in page, path

    with django_capture_on_commit_callbacks(execute=True):
        Driver.objects.create(driver_id=unnamed["driver_id"], name="Bruno Lima")
    for path in ("/fines/", "/vehicles/"):
        page = manager_client.get(path, headers=ENGLISH).text
        assert f'<a href="/drivers/{unnamed["driver_id"]}/">Bruno Lima</a>' in page, path


@pytest.mark.django_db(transaction=True)
def test_a_list_read_while_a_new_name_is_saved_shows_the_new_name_once_it_is(
    manager_client, admin_client, drivers
):
    """The names' version moves once the new name is there to read: a list read between the
    admin's save and its commit keeps the old name under the old version, never under the
    new one (where nothing would ever replace it)."""
    named = drivers[0]["driver_id"]
    driver = Driver.objects.create(driver_id=named, name="Ana Souza")
    link = f'<a href="/drivers/{named}/">'
    assert f"{link}Ana Souza</a>" in manager_client.get("/vehicles/", headers=ENGLISH).text
    renamed = {"driver_id": named, "name": "Ana Lima"}

    # The admin's change form saved the name, in its transaction: held there, uncommitted.
    with held_at(post_save, sender=Driver, thread="admin") as hold:
        admin, answered = start(
            "admin", lambda: admin_client.post(f"/admin/fleet/driver/{driver.pk}/change/", renamed)
        )
        hold.wait_held()
        meanwhile = manager_client.get("/vehicles/", headers=ENGLISH).text
        hold.release()
        admin.join()

    assert answered[0].status_code == 302
    assert f"{link}Ana Souza</a>" in meanwhile  # the name committed then
    page = manager_client.get("/vehicles/", headers=ENGLISH).text
    assert f"{link}Ana Lima</a>" in page
