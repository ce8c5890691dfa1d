"""Importing plates into vehicle groups: both formats, refused lines by number, nothing lost."""

from __future__ import annotations

import io

import pytest
from django.utils import translation

from fleet.models import VehicleGroup, VehicleGroupPlate
from fleet.services import vehicle_groups
from fleet.services.vehicle_groups import (
    VehicleGroupImportError,
    plate_list_read,
    vehicle_group_plates_remove,
    vehicle_groups_import,
    vehicle_groups_import_bytes,
)

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _in_english():
    """The reasons are translated: these tests read them in English."""
    with translation.override("en"):
        yield


def held(name: str) -> list[str]:
    return sorted(
        VehicleGroupPlate.objects.filter(group__name=name).values_list("registration", flat=True)
    )


def revision(name: str) -> int:
    return VehicleGroup.objects.get(name=name).revision


def test_a_csv_creates_its_groups_and_stores_registrations():
    report = vehicle_groups_import(
        ["plate,group", "abc-1234,Frota Sul", "BRA2E19,Frota Sul", "xyz 9876 , Frota Norte "]
    )

    assert report.groups_created == ["Frota Norte", "Frota Sul"]
    assert (report.plates_added, report.already_present, report.refused) == (3, 0, [])
    assert held("Frota Sul") == ["ABC1C34", "BRA2E19"]
    assert held("Frota Norte") == ["XYZ9I76"]


def test_a_portuguese_header_and_semicolons_as_excel_saves_them_are_read():
    report = vehicle_groups_import_bytes("placa;grupo\r\nABC1234;Região Sul\r\n".encode("cp1252"))

    assert report.refused == []
    assert held("Região Sul") == ["ABC1C34"]


def test_an_old_plate_and_its_mercosul_plate_are_one_vehicle():
    report = vehicle_groups_import(["ABC-1234,Frota", "abc1c34,Frota", "ABC 1234,frota"])

    assert (report.plates_added, report.duplicates) == (1, 2)
    assert held("Frota") == ["ABC1C34"]


def test_a_second_import_counts_what_was_already_there_and_changes_no_revision():
    vehicle_groups_import(["ABC1234,Frota", "BRA2E19,Frota"])
    before = revision("Frota")

    report = vehicle_groups_import(["ABC1C34,frota", "BRA-2E19,Frota"])

    assert (report.groups_created, report.plates_added, report.already_present) == ([], 0, 2)
    assert revision("Frota") == before
    assert VehicleGroup.objects.count() == 1


def test_an_import_that_adds_plates_counts_a_revision_of_those_groups_only():
    vehicle_groups_import(["ABC1234,Frota", "BRA2E19,Outra"])
    frota, outra = revision("Frota"), revision("Outra")

    vehicle_groups_import(["QWE5678,Frota", "BRA2E19,Outra"])

    assert (revision("Frota"), revision("Outra")) == (frota + 1, outra)


def test_refused_lines_are_reported_by_number_and_the_others_imported():
    lines = [
        "plate,group",  # 1
        "ABC1234,Frota",  # 2
        "",  # 3: blank, skipped
        "AB12345,Frota",  # 4: not a plate
        "QWE5678,",  # 5: no group
        ",Frota",  # 6: no plate
        "KLM3F45,Frota,extra",  # 7: too many fields
        "KLM3F45,Frota,,",  # 8: empty spreadsheet columns are fine
        f"XYZ9876,{'x' * 101}",  # 9: the name is too long
        "BRA2E19,Frota\x07",  # 10: a control character
        "QWE5678",  # 11: no group
        "A" * 500,  # 12: too long a line
    ]

    report = vehicle_groups_import(lines)

    assert [line.number for line in report.refused] == [4, 5, 6, 7, 9, 10, 11, 12]
    reasons = {line.number: line.reason for line in report.refused}
    assert "“AB12345” is not a plate" in reasons[4]
    assert "ABC-1234" in reasons[4]
    assert reasons[5] == reasons[11] == "No group's name after the plate."
    assert reasons[6] == "No plate before the group's name."
    assert reasons[7].startswith("Too many fields")
    assert "longer than 100 characters" in reasons[9]
    assert "cannot be shown" in reasons[10]
    assert "longer than 400 characters" in reasons[12]
    assert report.refused[-1].text == "A" * 59 + "…"
    assert held("Frota") == ["ABC1C34", "KLM3F45"]


def test_one_plate_per_line_goes_into_the_group_given():
    group = VehicleGroup.objects.create(name="Diretoria")

    report = vehicle_groups_import(
        io.StringIO("placa\nabc-1234\nABC1C34\nBRA2E19;\nnot-a-plate\nQWE5678,Frota\n"),
        group=group,
    )

    assert held("Diretoria") == ["ABC1C34", "BRA2E19"]
    assert (report.plates_added, report.duplicates, report.groups_created) == (2, 1, [])
    assert [line.number for line in report.refused] == [5, 6]
    assert report.refused[1].reason.startswith("Too many fields: write one plate per line")
    group.refresh_from_db()
    assert group.revision == 1


def test_a_group_named_in_another_case_is_the_same_group():
    VehicleGroup.objects.create(name="Frota Sul")

    report = vehicle_groups_import(["ABC1234,FROTA  sul"])

    assert report.groups_created == []
    assert held("Frota Sul") == ["ABC1C34"]


def test_quoted_names_may_hold_the_delimiter():
    vehicle_groups_import(['ABC1234,"Sul, Oeste"'])

    assert held("Sul, Oeste") == ["ABC1C34"]


def test_a_list_too_long_is_refused_before_anything_is_written(monkeypatch):
    monkeypatch.setattr(vehicle_groups, "MAX_LINES", 3)

    with pytest.raises(VehicleGroupImportError, match="at most 3 lines"):
        vehicle_groups_import(["ABC1234,Frota"] * 4)

    assert not VehicleGroup.objects.exists()


def test_a_binary_file_is_refused_as_a_whole():
    with pytest.raises(VehicleGroupImportError, match="not a text file"):
        vehicle_groups_import_bytes(b"PK\x03\x04\0\0ABC1234,Frota")


def test_plates_are_removed_by_registration_whichever_format_they_are_typed_in():
    group = VehicleGroup.objects.create(name="Frota")
    vehicle_groups_import(["ABC1234", "BRA2E19"], group=group)
    before = revision("Frota")

    typed = plate_list_read(["abc1c34", "QWE5678", "nope"])
    removed = vehicle_group_plates_remove(group=group, registrations=typed.registrations)

    assert (removed, [line.number for line in typed.refused]) == (1, [3])
    assert held("Frota") == ["BRA2E19"]
    assert revision("Frota") == before + 1


def test_plates_the_fleet_does_not_list_are_reported_by_line_and_added(emulator, fleet_settings):
    fleet = [v["car_plate"] for v in emulator.vehicles()[:2]]
    absent = "ZZZ9Z99"
    assert absent not in fleet

    report = vehicle_groups_import([f"{fleet[0]},Sul", f"{absent},Sul", f"{fleet[1]},Sul"])

    assert report.unknown == [(2, absent)]
    assert absent in held("Sul")  # a vehicle the fleet may list tomorrow


def test_without_a_vehicle_list_the_plates_are_not_checked(settings):
    settings.FLEET_BASE_URL = "http://127.0.0.1:9"  # nothing listens there

    report = vehicle_groups_import(["ABC1D23,Sul"])

    assert report.unknown is None
    assert held("Sul") == ["ABC1D23"]
