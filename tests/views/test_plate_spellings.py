"""One vehicle, two spellings of its plate: the old `JVF-5559` became the Mercosul `JVF5F59`.
A search typed either way finds the vehicle and its records, in every list and the admin."""

from __future__ import annotations

import json
import re

import pytest
from django.urls import reverse

from fleet.models import Fine, FineDriverCorrection
from fleet.webhooks.processing import deliveries_process_received
from tests.services.conftest import envelope, vehicle

pytestmark = pytest.mark.django_db

WEBHOOK = "/webhooks/fleet/dev-webhook-token/"
ENGLISH = {"Accept-Language": "en"}
ROW = re.compile(r'<tr data-testid="(?:fine|notification)" data-key="([^"]*)"')
PLATE_CELL = re.compile(r'<a class="plate" href="/vehicles/([A-Z0-9]+)/">')
SPELLINGS = ["JVF-5559", "jvf5559", "JVF5F59", "jvf 5f59"]


@pytest.fixture
def fleet(fleet_settings, emulator):
    """A list holding one vehicle under its old plate, one under its Mercosul plate."""
    emulator.fault(
        "/key/list-cars",
        body=envelope(
            vehicle(1, "JVF-5559", "Fiat Uno"),
            vehicle(2, "RST2B34", "VW Gol"),  # old RST-2134
            vehicle(3, "ABC1D23", "Chevrolet Onix"),
        ),
    )
    return emulator


def deliver(client, payload) -> None:
    response = client.post(WEBHOOK, data=json.dumps(payload), content_type="application/json")
    assert response.status_code == 202, response.content
    deliveries_process_received()  # the worker's next run


@pytest.fixture
def records(client):
    """Fines and notifications of JVF5F59 issued under either plate, and one of another."""
    for id_, plate in ((1, "JVF-5559"), (2, "JVF5F59"), (3, "ABC1D23")):
        deliver(client, {"frame": {"id": id_, "treated": False, "carPlate": plate}})
        deliver(client, {"notification": {"id": id_, "treated": False, "carPlate": plate}})


@pytest.mark.parametrize("typed", SPELLINGS)
def test_the_vehicles_list_finds_a_vehicle_by_either_spelling(manager_client, fleet, typed):
    response = manager_client.get("/vehicles/", {"q": typed})

    assert PLATE_CELL.findall(response.text) == ["JVF5559"]


@pytest.mark.parametrize("typed", ["RST-2134", "rst2134"])
def test_the_vehicles_list_finds_a_mercosul_vehicle_by_its_old_plate(manager_client, fleet, typed):
    response = manager_client.get("/vehicles/", {"q": typed})

    assert PLATE_CELL.findall(response.text) == ["RST2B34"]


@pytest.mark.parametrize("typed", SPELLINGS)
@pytest.mark.parametrize("path", ["/fines/", "/notifications/"])
def test_a_lists_search_finds_a_vehicles_records_by_either_spelling(
    manager_client, records, path, typed
):
    response = manager_client.get(path, {"q": typed})

    assert sorted(ROW.findall(response.text)) == ["1", "2"]


@pytest.mark.parametrize("typed", SPELLINGS)
@pytest.mark.parametrize("model", ["fine", "notification"])
def test_the_admins_search_finds_a_vehicles_records_by_either_spelling(
    admin_client, records, model, typed
):
    response = admin_client.get(reverse(f"admin:fleet_{model}_changelist"), {"q": typed})

    assert sorted(r.external_id for r in response.context["cl"].result_list) == ["1", "2"]


@pytest.mark.parametrize("typed", SPELLINGS)
def test_the_admins_corrections_of_drivers_are_found_by_either_spelling(
    admin_client, admin_user, records, typed
):
    for fine in Fine.objects.all():
        FineDriverCorrection.objects.create(
            fine=fine, user=admin_user, user_name="admin", to_driver_id=7, reason="seen"
        )
    changelist = reverse("admin:fleet_finedrivercorrection_changelist")

    response = admin_client.get(changelist, {"q": typed}, headers=ENGLISH)

    found = sorted(c.fine.external_id for c in response.context["cl"].result_list)
    assert found == ["1", "2"]
    assert "A plate (ABC-1234 or ABC1C34)" in response.text


def test_a_records_plate_is_its_registration_with_the_plate_it_was_issued_to_muted(
    manager_client, records
):
    fines = manager_client.get("/fines/", headers=ENGLISH).text
    rows = {key: row for key, row in re.findall(r'data-key="(\d)"(.*?)</tr>', fines, re.S)}

    shown = re.compile(r'<a class="plate" href="/vehicles/[A-Z0-9]+/">([^<]+)</a>')
    muted = re.compile(r'<span class="plate plate--other muted"[^>]*>([^<]+)</span>')
    assert [shown.findall(rows[key]) for key in "12"] == [["JVF5F59"], ["JVF5F59"]]
    assert muted.findall(rows["1"]) == ["JVF-5559"]  # issued to the old plate
    assert muted.findall(rows["2"]) == []


def test_the_vehicles_list_shows_an_old_plates_mercosul_form_muted(manager_client, fleet):
    page = manager_client.get("/vehicles/", headers=ENGLISH).text

    muted = re.findall(r'<span class="plate plate--other muted"[^>]*>([^<]+)</span>', page)
    assert muted == ["JVF5F59"]  # RST2B34 and ABC1D23 are Mercosul plates already


def test_a_vehicle_the_list_holds_under_its_mercosul_plate_is_found_by_its_old_one(
    manager_client, fleet
):
    response = manager_client.get("/vehicles/RST2134/")

    assert response.status_code == 302
    assert response["Location"] == "/vehicles/RST2B34/"
