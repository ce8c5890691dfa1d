"""What the vehicle pages ask the list: search, filter, sort, pages, export, one plate."""

from __future__ import annotations

import unicodedata
from typing import Any

import pytest

from fleet import plates
from fleet.services.vehicle_cache import decoded_snapshot
from fleet.services.vehicle_index import PAGES_KEPT
from fleet.services.vehicles import (
    MAX_PER_PAGE,
    SORTS,
    VehicleRow,
    vehicle_drivers,
    vehicle_export,
    vehicle_get,
    vehicle_search,
)
from tests.conftest import Emulator
from tests.services.conftest import envelope, vehicle

# A search by a word reads the drivers' names too (`drivers_named`).
pytestmark = [pytest.mark.usefixtures("small_fleet"), pytest.mark.django_db]


def plates_of(query: str = "", **filters: Any) -> list[str]:
    return [row.plate for row in vehicle_search(query=query, **filters).rows]


def test_rows_carry_the_normalized_plate_its_display_form_and_the_vehicle_fields() -> None:
    assert vehicle_search(query="ABC1234").rows == (
        VehicleRow(
            id=2,
            plate="ABC1234",
            plate_display="ABC-1234",
            model="Toyota Hilux",
            active=False,
            driver_id=None,
        ),
    )
    mercosul = vehicle_search(query="ABC1D23").rows[0]
    assert (mercosul.plate, mercosul.plate_display, mercosul.active) == ("ABC1D23", "ABC1D23", True)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("abc-1", ["ABC1234", "ABC1D23"]),
        ("ABC 1D", ["ABC1D23"]),
        ("abc1d23", ["ABC1D23"]),
        ("ABC-1234", ["ABC1234"]),
        ("qwe-5678", ["QWE5678"]),  # the API held it as "QWE 5678"
        ("  e19 ", ["BRA2E19"]),
        ("3", ["ABC1234", "ABC1D23", "KLM3F45", "XYZ9876"]),  # "Citroën C3" too
        ("zzz", []),
    ],
)
def test_the_query_matches_plates_ignoring_case_hyphens_and_spaces(
    query: str, expected: list[str]
) -> None:
    assert plates_of(query) == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("ABC1C34", ["ABC1234"]),  # the list holds its old plate, "abc-1234"
        ("qwe5g78", ["QWE5678"]),
        ("KLM-3545", ["KLM3F45"]),  # the list holds its Mercosul plate
        ("BRA 2419", ["BRA2E19"]),
    ],
)
def test_a_plate_finds_its_vehicle_under_the_other_format_too(
    query: str, expected: list[str]
) -> None:
    assert plates_of(query) == expected
    assert [row.plate for row in vehicle_export(query=query)[0]] == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("onix", ["ABC1D23"]),
        ("HILUX", ["ABC1234", "QWE5678"]),
        ("citroen", ["KLM3F45", "XYZ9876"]),
        ("CITROËN c4", ["KLM3F45"]),
        ("toyota  hilux", ["ABC1234", "QWE5678"]),
        ("fiat strada", ["BRA2E19"]),
    ],
)
def test_the_query_matches_models_ignoring_case_and_accents(
    query: str, expected: list[str]
) -> None:
    assert plates_of(query) == expected


def test_a_query_matching_no_plate_and_no_model_is_an_empty_first_page() -> None:
    page = vehicle_search(query="volvo")
    assert (page.rows, page.total, page.page, page.pages, page.fleet_total) == ((), 0, 1, 1, 6)


def test_a_blank_query_lists_the_whole_fleet() -> None:
    assert (
        plates_of("   ")
        == plates_of("")
        == [
            "ABC1234",
            "ABC1D23",
            "BRA2E19",
            "KLM3F45",
            "QWE5678",
            "XYZ9876",
        ]
    )


def test_the_active_filter_keeps_only_active_or_only_inactive_vehicles() -> None:
    assert plates_of(active=True) == ["ABC1D23", "BRA2E19", "KLM3F45", "XYZ9876"]
    assert plates_of(active=False) == ["ABC1234", "QWE5678"]
    assert plates_of("hilux", active=False) == ["ABC1234", "QWE5678"]
    assert plates_of("hilux", active=True) == []
    assert vehicle_search(query="abc", active=True).total == 1


@pytest.mark.parametrize(
    ("sort", "expected"),
    [
        ("plate", ["ABC1234", "ABC1D23", "BRA2E19", "KLM3F45", "QWE5678", "XYZ9876"]),
        ("-plate", ["XYZ9876", "QWE5678", "KLM3F45", "BRA2E19", "ABC1D23", "ABC1234"]),
        # chevrolet onix, citroën c3, citroën c4 cactus, fiat strada, toyota hilux (two)
        ("model", ["ABC1D23", "XYZ9876", "KLM3F45", "BRA2E19", "ABC1234", "QWE5678"]),
        ("-model", ["ABC1234", "QWE5678", "BRA2E19", "KLM3F45", "XYZ9876", "ABC1D23"]),
        ("active", ["ABC1234", "QWE5678", "ABC1D23", "BRA2E19", "KLM3F45", "XYZ9876"]),
        ("-active", ["ABC1D23", "BRA2E19", "KLM3F45", "XYZ9876", "ABC1234", "QWE5678"]),
        ("driver", ["ABC1234", "ABC1D23", "BRA2E19", "KLM3F45", "QWE5678", "XYZ9876"]),
    ],
)
def test_every_sort_orders_by_its_field_then_by_plate(sort: str, expected: list[str]) -> None:
    assert plates_of(sort=sort) == expected


def test_sorting_applies_to_search_results() -> None:
    assert plates_of("3", sort="-plate") == ["XYZ9876", "KLM3F45", "ABC1D23", "ABC1234"]
    assert plates_of("3", sort="model", active=True) == ["ABC1D23", "XYZ9876", "KLM3F45"]


def test_pages_split_the_matches_and_count_them() -> None:
    pages = [vehicle_search(per_page=4, page=n) for n in (1, 2)]
    assert [[r.plate for r in p.rows] for p in pages] == [
        ["ABC1234", "ABC1D23", "BRA2E19", "KLM3F45"],
        ["QWE5678", "XYZ9876"],
    ]
    assert {(p.total, p.fleet_total, p.pages, p.per_page) for p in pages} == {(6, 6, 2, 4)}
    assert [p.page for p in pages] == [1, 2]


def test_a_page_asked_again_is_kept_not_searched_again() -> None:
    first = vehicle_search(query="3", sort="-plate", per_page=2, page=2)

    again = vehicle_search(query="3", sort="-plate", per_page=2, page=2)

    assert again.rows is first.rows
    assert [r.plate for r in again.rows] == ["ABC1D23", "ABC1234"]
    assert vehicle_search(query="3", sort="plate", per_page=2, page=2).rows is not first.rows


def test_the_pages_kept_are_bounded() -> None:
    for n in range(PAGES_KEPT + 50):  # each a page of its own
        vehicle_search(per_page=1 + n % 100, page=1 + n // 100)

    snapshot = decoded_snapshot()
    assert snapshot is not None
    assert snapshot.pages_kept == PAGES_KEPT
    assert vehicle_search(per_page=1).rows[0].plate == "ABC1234"  # dropped, searched again


@pytest.mark.parametrize(("asked", "given"), [(0, 1), (-3, 1), (3, 3), (4, 3), (99, 3)])
def test_the_page_number_is_clamped_to_the_pages_there_are(asked: int, given: int) -> None:
    page = vehicle_search(per_page=2, page=asked)
    assert page.page == given
    assert len(page.rows) == 2


@pytest.mark.parametrize(("asked", "given"), [(0, 1), (-1, 1), (1, 1), (10_000, MAX_PER_PAGE)])
def test_the_page_size_is_capped(asked: int, given: int) -> None:
    assert vehicle_search(per_page=asked).per_page == given


def test_the_export_yields_every_match_in_the_page_order() -> None:
    rows, freshness = vehicle_export(query="3", sort="-plate")
    assert [r.plate for r in rows] == ["XYZ9876", "KLM3F45", "ABC1D23", "ABC1234"]
    assert not freshness.stale

    everything, _freshness = vehicle_export(active=False, sort="nonsense")
    assert list(everything) == list(vehicle_search(active=False).rows)


@pytest.mark.parametrize("typed", ["ABC1234", "abc-1234", "ABC 1234", "abc1234"])
def test_a_vehicle_is_found_by_its_plate_typed_any_way(typed: str) -> None:
    found = vehicle_get(plate=typed)
    assert found is not None
    assert (found.id, found.plate_display) == (2, "ABC-1234")


def test_a_plate_outside_the_fleet_is_none() -> None:
    assert vehicle_get(plate="AAA0A00") is None
    assert vehicle_get(plate="ZZZ9999") is None


def test_sorts_are_the_documented_ones() -> None:
    assert SORTS == ("plate", "-plate", "model", "-model", "active", "-active")


def test_the_emulator_fleet_is_listed_whole_in_plate_order(
    fleet_settings: Any, emulator: Emulator
) -> None:
    emulator.control("DELETE", "faults")  # the real fleet, not the small one
    expected = sorted(plates.normalize(v["car_plate"]) for v in emulator.vehicles())

    page = vehicle_search(per_page=MAX_PER_PAGE)
    rows, _freshness = vehicle_export()

    assert page.fleet_total == page.total == 200
    assert [r.plate for r in page.rows] == expected
    assert [r.plate for r in rows] == expected
    assert all(r.plate_display == plates.display(r.plate) for r in page.rows)


def test_the_first_pages_of_a_new_list_are_found_without_sorting_the_fleet(
    fleet_settings: Any, emulator: Emulator
) -> None:
    emulator.control("DELETE", "faults")  # the real fleet, not the small one
    expected = sorted(plates.normalize(v["car_plate"]) for v in emulator.vehicles())

    listed = [r.plate for n in range(1, 30) for r in vehicle_search(per_page=7, page=n).rows]

    snapshot = decoded_snapshot()
    assert snapshot is not None
    assert listed == expected
    assert "plate" not in snapshot.orders_built  # each page came from a heap, no order was built
    assert vehicle_search(per_page=7, page=99).rows[-1].plate == expected[-1]  # clamped: 29
    vehicle_search(query="a")  # a search scans the columns in plate order: now sorted
    assert "plate" in snapshot.orders_built
    assert [r.plate for r in vehicle_search(per_page=9, page=3).rows] == expected[18:27]


def _fold(text: str) -> str:
    bare = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    return " ".join(bare.casefold().split())


def _scan(vehicles: list[dict[str, Any]], query: str, active: bool | None) -> set[str]:
    """The plates a search must find, by looking at every vehicle."""
    text = _fold(query)
    return {
        plates.normalize(v["car_plate"])
        for v in vehicles
        if (plates.normalize(text) in plates.normalize(v["car_plate"]) or text in _fold(v["model"]))
        and (active is None or (v["active"] == "1") == active)
    }


def _queries(vehicles: list[dict[str, Any]]) -> list[str]:
    """Parts of plates of every length (a few matches to most of the fleet) and models."""
    some = [plates.normalize(v["car_plate"]) for v in vehicles[::37]]
    parts = {plate[i : i + n] for plate in some for n in range(1, 8) for i in range(0, 8 - n)}
    return [*sorted(parts), "onix", "C3", "-12", "zzz9"]


@pytest.mark.usefixtures("fleet_settings")
def test_every_search_page_holds_what_a_scan_of_every_vehicle_finds(emulator: Emulator) -> None:
    emulator.control("DELETE", "faults")  # the emulator's fleet of 200
    vehicles = emulator.vehicles()
    for query in _queries(vehicles):
        for active in (None, True, False):
            expected = _scan(vehicles, query, active)
            rows, _freshness = vehicle_export(query=query, active=active, sort="-model")
            in_order = [r.plate for r in rows]
            assert set(in_order) == expected, (query, active)
            for page in (1, 2, 5):
                found = vehicle_search(
                    query=query, active=active, sort="-model", page=page, per_page=7
                )
                assert found.total == len(expected), (query, active)
                start = (found.page - 1) * 7
                assert [r.plate for r in found.rows] == in_order[start : start + 7], (query, page)


def test_a_plate_holding_the_query_twice_is_listed_once(emulator: Emulator) -> None:
    emulator.control("DELETE", "faults")
    many = [vehicle(n, f"AAA{n:04d}", "Fiat Uno") for n in range(1, 101)]
    emulator.fault("/key/list-cars", body=envelope(*many, vehicle(101, "BBB1A11", "Fiat Uno")))

    assert plates_of("A") == sorted(v["car_plate"] for v in many)[:50]
    assert vehicle_search(query="1A1").total == 1
    assert plates_of("1A1") == ["BBB1A11"]


def test_plates_of_other_lengths_are_searched_too(emulator: Emulator) -> None:
    """Plates the API holds in neither format (foreign, typos) are kept and found."""
    emulator.control("DELETE", "faults")
    odd = [vehicle(1, "AB-123", "Fiat Uno"), vehicle(2, "XYZ98765", "Fiat Uno")]
    fleet = [*odd, *(vehicle(n, f"CDE{n:04d}", "Fiat Uno") for n in range(3, 203))]
    emulator.fault("/key/list-cars", body=envelope(*fleet))

    assert plates_of("b12") == ["AB123"]
    assert plates_of("98765") == ["XYZ98765"]
    assert plates_of("E0007") == ["CDE0007"]


def test_the_drivers_of_registrations_are_found_by_plate_in_either_format(
    small_fleet: Emulator,
) -> None:
    """Fines name a vehicle by its registration (the Mercosul form): a vehicle the list
    holds under its old plate is found through it; one without a driver, or not in the
    list, is left out."""
    found = vehicle_drivers(
        registrations=[
            plates.registration("QWE-5678"),  # the list's "QWE 5678", an old plate
            "ABC1D23",
            "ABC1C34",  # ABC-1234: no driver
            "KLM3F45",  # no driver
            "ZZZ9Z99",  # not in the list
        ]
    )

    assert found == {"QWE5G78": 105, "ABC1D23": 101}


def test_a_drivers_rows_are_found_by_their_id_whole_never_by_bytes_across_two_rows():
    """`rows_of_driver` looks for the id's bytes in the column: a match that straddles two
    rows' ids, or a row without a driver (its id a placeholder), is not one of its rows;
    and a straddling match does not hide a row's own match that overlaps it."""
    from fleet.api.resources import VehicleColumns
    from fleet.services.vehicle_index import Snapshot

    straddling = int.from_bytes(
        (7).to_bytes(8, "little")[4:] + (9).to_bytes(8, "little")[:4], "little"
    )
    # Its low and high halves alike: after a row whose high half is the same, it is also
    # found four bytes before its row, across the two, overlapping its row's own find.
    halves = (5 << 32) | 5
    driver_ids: list[int | None] = [7, 9, 7, None, 123_456_789, 7, 1 << 40, (5 << 32) | 1, halves]
    fleet = VehicleColumns.of(
        ids=list(range(1, 10)),
        plates=[f"ABC1D{n:02d}" for n in range(1, 10)],
        models=["Onix"] * 9,
        actives=bytes(9),
        driver_ids=driver_ids,
        total=9,
    )
    snapshot = Snapshot.from_columns(fleet, scope="test", version="1", fetched_at=0.0)

    assert snapshot.rows_of_driver(7) == [0, 2, 5]
    assert snapshot.rows_of_driver(123_456_789) == [4]
    assert snapshot.rows_of_driver(1 << 40) == [6]
    assert snapshot.rows_of_driver(straddling) == []
    assert snapshot.rows_of_driver(0) == []  # the row without a driver holds a placeholder
    assert snapshot.rows_of_driver(halves) == [8]
    # Several drivers in one search: their rows in order, straddling finds still none.
    assert snapshot.rows_of_drivers([123_456_789, 7, straddling, halves]) == [0, 2, 4, 5, 8]


def test_a_driver_id_wider_than_the_column_is_nobodys():
    from fleet.api.resources import VehicleColumns
    from fleet.services.vehicle_index import Snapshot

    fleet = VehicleColumns.of(
        ids=[1, 2],
        plates=["ABC1D01", "ABC1D02"],
        models=["Onix"] * 2,
        actives=bytes(2),
        driver_ids=[7, 8],
        total=2,
    )
    snapshot = Snapshot.from_columns(fleet, scope="test", version="1", fetched_at=0.0)

    assert snapshot.drivers.itemsize == 4
    assert snapshot.rows_of_driver(8) == [1]
    assert snapshot.rows_of_driver(1 << 40) == []
    assert snapshot.rows_of_driver(-1) == []
    assert snapshot.rows_of_drivers([1 << 40, 8]) == [1]
