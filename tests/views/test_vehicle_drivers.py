"""The vehicles list and its CSV know the drivers by name: a search by a driver's name finds
their vehicles, and the export has the name beside the driver's id."""

from __future__ import annotations

import csv
import io
import re

import pytest

from fleet.services.drivers import driver_names_add
from fleet.services.vehicles import DRIVERS_SEARCHED
from tests.services.conftest import envelope, vehicle

pytestmark = pytest.mark.django_db

ENGLISH = {"Accept-Language": "en"}
PLATE_CELL = re.compile(r'<a class="plate" href="/vehicles/([A-Z0-9]+)/">')


@pytest.fixture
def fleet(fleet_settings, emulator):
    emulator.fault(
        "/key/list-cars",
        body=envelope(
            vehicle(1, "ABC1D23", "Chevrolet Onix", driver=101),
            vehicle(2, "JVF-5559", "Fiat Uno", driver=102),
            vehicle(3, "XYZ9876", "Fiat Strada", driver=101),
            vehicle(4, "KLM3F45", "VW Gol", driver=103),  # a driver with no name known
            vehicle(5, "BRA2E19", "VW Polo", driver=None),
        ),
    )
    driver_names_add(names={101: "Ana Souza", 102: "Bruno Lima Souza", 104: "Ana Paula"})
    return emulator


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("ana", ["ABC1D23", "XYZ9876"]),
        ("Souza", ["ABC1D23", "JVF5559", "XYZ9876"]),
        ("bruno li", ["JVF5559"]),
        ("ANA SOU", ["ABC1D23", "XYZ9876"]),
        ("paula", []),  # a driver with no vehicle in the list
    ],
)
def test_a_search_by_a_drivers_name_finds_their_vehicles(manager_client, fleet, query, expected):
    response = manager_client.get("/vehicles/", {"q": query}, headers=ENGLISH)

    assert PLATE_CELL.findall(response.text) == expected


def test_a_name_that_fits_too_many_drivers_says_so(manager_client, fleet):
    driver_names_add(names={200 + n: f"Silva {n}" for n in range(DRIVERS_SEARCHED + 1)})

    response = manager_client.get("/vehicles/", {"q": "silva"}, headers=ENGLISH)

    assert 'data-testid="drivers-cut"' in response.text
    assert "Type more of the name" in response.text


def test_the_export_has_the_drivers_name_beside_the_id(manager_client, fleet):
    response = manager_client.get("/vehicles/export.csv", headers=ENGLISH)

    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode("utf-8-sig"))))
    assert rows[0] == ["Plate", "Model", "Status", "Driver ID", "Driver", "Vehicle ID"]
    assert [row[:1] + row[3:5] for row in rows[1:]] == [
        ["ABC1D23", "101", "Ana Souza"],
        ["BRA2E19", "", ""],
        ["JVF-5559", "102", "Bruno Lima Souza"],
        ["KLM3F45", "103", ""],
        ["XYZ-9876", "101", "Ana Souza"],
    ]


def test_the_export_of_a_search_by_name_has_that_drivers_vehicles(manager_client, fleet):
    response = manager_client.get("/vehicles/export.csv", {"q": "bruno"}, headers=ENGLISH)

    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode("utf-8-sig"))))
    assert [row[0] for row in rows[1:]] == ["JVF-5559"]
