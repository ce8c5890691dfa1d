"""Drivers by name: the fines list's driver filter is a list of names, and a vehicle's page
links its driver by name; a driver without one is "Driver 154"."""

from __future__ import annotations

import html
import json
import re
from typing import Any

import pytest

from fleet.models import Driver, Fine
from fleet.services.vehicles import vehicle_search
from fleet.webhooks.processing import deliveries_process_received

pytestmark = pytest.mark.django_db

WEBHOOK = "/webhooks/fleet/dev-webhook-token/"
ENGLISH = {"Accept-Language": "en"}
ROW = re.compile(r'<tr data-testid="fine" data-key="([^"]*)"')
SELECT = re.compile(r'<select name="driver"[^>]*>(.*?)</select>', re.DOTALL)
OPTION = re.compile(r'<option value="([^"]*)"( selected)?>([^<]*)</option>')


def deliver(client, *fines: tuple[int, str]) -> None:
    for number, plate in fines:
        payload = {"frame": {"id": number, "treated": False, "carPlate": plate}, "link": None}
        response = client.post(WEBHOOK, data=json.dumps(payload), content_type="application/json")
        assert response.status_code == 202, response.content
    deliveries_process_received()


def keys(response) -> list[str]:
    return sorted(ROW.findall(response.text))


def options(response) -> list[tuple[str, bool, str]]:
    """The driver select's options: value, selected, label."""
    found = SELECT.search(response.text)
    assert found, "no driver select"
    return [(v, bool(s), html.unescape(label)) for v, s, label in OPTION.findall(found[1])]


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


def test_the_driver_filter_is_a_list_of_names(manager_client, drivers):
    ana, bruno, unnamed = (vehicle["driver_id"] for vehicle in drivers)
    Driver.objects.create(driver_id=bruno, name="Bruno Lima")
    Driver.objects.create(driver_id=ana, name="Ana Souza")
    no_fine = Driver.objects.create(driver_id=99_999, name="Carla Dias")  # named, no fine yet

    response = manager_client.get("/fines/", headers=ENGLISH)

    assert '<label for="id_driver">Driver</label>' in response.text
    assert options(response) == [
        ("", True, "All drivers"),
        (str(ana), False, "Ana Souza"),
        (str(bruno), False, "Bruno Lima"),
        (str(no_fine.driver_id), False, "Carla Dias"),
        (str(unnamed), False, f"Driver {unnamed}"),
    ]


def test_choosing_a_driver_lists_their_fines_and_keeps_the_choice(manager_client, drivers):
    ana = drivers[0]["driver_id"]
    Driver.objects.create(driver_id=ana, name="Ana Souza")

    response = manager_client.get("/fines/", {"driver": ana}, headers=ENGLISH)

    assert keys(response) == ["1"]
    assert (str(ana), True, "Ana Souza") in options(response)
    assert 'data-testid="filter-error"' not in response.text
    # The export and a saved view keep it as `driver=<id>`, as the dashboard links it.
    assert f'href="/fines/export.csv?driver={ana}"' in response.text
    assert manager_client.get(f"/fines/?driver={ana}&treated=0").status_code == 200


def test_a_driver_the_portal_knows_nothing_of_is_listed_by_id_with_no_fines(
    manager_client, drivers
):
    # The driver page links every driver's fines, a driver without name or fine too.
    response = manager_client.get("/fines/", {"driver": "424242"}, headers=ENGLISH)

    assert response.status_code == 200
    assert 'data-testid="filter-error"' not in response.text
    assert re.search(r'<option value="424242" selected>Driver 424242</option>', response.text)
    assert keys(response) == []


def test_a_driver_filter_that_is_no_driver_id_is_a_form_error(manager_client, drivers):
    for bogus in ("abc", "-1", "0", "٣", "99999999999"):
        response = manager_client.get("/fines/", {"driver": bogus}, headers=ENGLISH)

        assert response.status_code == 200
        error = re.search(r'data-testid="filter-error">([^<]*)<', response.text)
        assert error, bogus
        assert html.unescape(error[1]) == (
            f"“{bogus}” is not one of the drivers in the list: choose a driver there."
        )
        assert keys(response) == ["1", "2", "3"]  # left unfiltered, as the error says


def test_two_drivers_of_the_same_name_are_told_apart_by_their_ids(manager_client, drivers):
    first, second = drivers[0]["driver_id"], drivers[1]["driver_id"]
    Driver.objects.create(driver_id=first, name="José Silva")
    Driver.objects.create(driver_id=second, name="José Silva")

    labels = [label for _value, _selected, label in options(manager_client.get("/fines/"))]

    assert f"José Silva ({first})" in labels
    assert f"José Silva ({second})" in labels


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
