"""The queue of fines to indicate, each of its filters and the daily run's reminders read
the fines still to indicate from their partial indexes, in the queue's order, at any
size: on SQLite, which keeps no statistics, the plan of each is checked to read an index
of those fines and sort nothing (a plan that sorted every untreated fine took 11 s at
ten million). A region holding most of the fines walks the queue's index, each fine
checked against its plates; a small group's are found by their plates. On both
databases each page is checked against the same fines picked out in Python.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

import pytest
from django.db import connection
from django.db.models import Q
from django.utils import timezone

from fleet.models import Fine, Indication, VehicleGroup, VehicleGroupPlate
from fleet.services.dashboard import COUNTED
from fleet.services.indication_sweep import fines_due_from_to
from fleet.services.indications import indication_queue_fines
from fleet.services.list_walks import scope_walked
from fleet.services.scopes import WHOLE_FLEET, VehicleScope
from fleet.services.tallies import fine_tallies_rebuild

pytestmark = pytest.mark.django_db

PLATES = ["AAA1A11", "BBB2B22", "CCC3C33", "DDD4D44"]
PAGE = 51


@pytest.fixture
def today() -> date:
    return timezone.localdate()


@pytest.fixture
def fines(today: date) -> None:
    """2 * COUNTED fines of four vehicles in turn: one in five treated, two in three still
    to indicate (the rest indicated), their deadlines from 20 days past to 39 ahead."""
    Fine.objects.bulk_create(
        Fine(
            key=f"id:{n}",
            external_id=str(n),
            payload={"id": n},
            registration=PLATES[n % 4],
            treated=n % 5 == 0,
            driver_id=n % 7 + 1,
            indication=Indication.NEEDED if n % 3 else Indication.INDICATED,
            indication_due=today + timedelta(days=n % 60 - 20),
        )
        for n in range(2 * COUNTED)
    )
    fine_tallies_rebuild()


def group(name: str, registrations: list[str]) -> VehicleScope:
    made = VehicleGroup.objects.create(name=name)
    VehicleGroupPlate.objects.bulk_create(
        VehicleGroupPlate(group=made, registration=registration) for registration in registrations
    )
    return VehicleScope(whole_fleet=False, group_ids=(made.pk,), key=f"test-{name}")


def expected(today: date, keep: Any) -> list[int]:
    """The first page of the fines still to indicate that `keep` keeps, picked in Python."""
    every = Fine.objects.order_by().values_list(
        "pk", "registration", "treated", "driver_id", "indication", "indication_due"
    )
    kept = [
        (due, pk)
        for pk, plate, treated, driver, state, due in every
        if state == Indication.NEEDED and not treated and keep(plate, driver, due)
    ]
    return [pk for _due, pk in sorted(kept)[:PAGE]]


def plan_ok(records: Any, index: str) -> None:
    """On SQLite: the page is read from `index`, nothing sorted. PostgreSQL chooses from
    its statistics (`bench.scale` measures it at size): its pages are checked alone."""
    if connection.vendor != "sqlite":
        return
    lines = records[:PAGE].explain().splitlines()
    told = "\n".join(lines)
    assert any(f"USING INDEX {index} " in line for line in lines), told
    assert not any("TEMP B-TREE" in line for line in lines), told
    assert not any("SCAN fleet_fine" in line and "INDEX" not in line for line in lines), told


def test_the_queue_and_each_filter_read_the_index_of_the_fines_to_indicate(fines, today):
    cases: list[tuple[dict[str, Any], str, Any]] = [
        ({}, "fleet_fine_to_indicate", lambda plate, driver, due: True),
        ({"within": "overdue"}, "fleet_fine_to_indicate", lambda p, d, due: due < today),
        (
            {"within": "7"},
            "fleet_fine_to_indicate",
            lambda p, d, due: today <= due <= today + timedelta(days=7),
        ),
        ({"plate": "BBB2B22"}, "fleet_fine_to_indicate_plate", lambda p, d, due: p == "BBB2B22"),
        ({"plate": "BBB-2122"}, "fleet_fine_to_indicate_plate", lambda p, d, due: p == "BBB2B22"),
        ({"driver": 3}, "fleet_fine_to_indicate_driver", lambda p, d, due: d == 3),
    ]
    for filters, index, keep in cases:
        records = indication_queue_fines(scope=WHOLE_FLEET, today=today, **filters)
        plan_ok(records, index)
        assert [f.pk for f in records[:PAGE]] == expected(today, keep), filters


def test_a_later_page_reads_on_from_its_cursor(fines, today):
    first = list(indication_queue_fines(scope=WHOLE_FLEET, today=today)[:PAGE])
    last = first[-1]
    after = indication_queue_fines(scope=WHOLE_FLEET, today=today).filter(
        Q(indication_due__gt=last.indication_due)
        | Q(indication_due=last.indication_due, pk__gt=last.pk)
    )

    plan_ok(after, "fleet_fine_to_indicate")
    both = [f.pk for f in first] + [f.pk for f in after[:PAGE]]
    every = expected(today, lambda plate, driver, due: True)
    assert both[:PAGE] == every
    assert len(set(both)) == 2 * PAGE


def test_a_region_walks_the_queue_and_a_small_group_finds_its_fines(fines, today):
    region = group("Sudeste", PLATES[:3])
    small = group("Frota leve", PLATES[3:])
    assert scope_walked(region)
    assert not scope_walked(small)

    records = indication_queue_fines(scope=region, today=today)
    plan_ok(records, "fleet_fine_to_indicate")
    assert [f.pk for f in records[:PAGE]] == expected(today, lambda p, d, due: p in PLATES[:3])
    records = indication_queue_fines(scope=small, today=today)
    assert [f.pk for f in records[:PAGE]] == expected(today, lambda p, d, due: p == PLATES[3])


def test_the_daily_run_reads_the_deadlines_near_from_the_index(fines, today):
    records = fines_due_from_to(today - timedelta(days=7), today + timedelta(days=7))

    plan_ok(records, "fleet_fine_to_indicate")
    assert [f.pk for f in records[:PAGE]] == expected(
        today, lambda p, d, due: today - timedelta(days=7) <= due <= today + timedelta(days=7)
    )


def test_the_indexes_are_led_by_their_condition_on_sqlite_only():
    """SQLite's planner needs the condition's columns first; PostgreSQL's would then read a
    range of deadlines from the index's start (`fleet.schema.ConditionLedIndex`)."""
    with connection.cursor() as cursor:
        found = connection.introspection.get_constraints(cursor, Fine._meta.db_table)
    led = ["indication", "treated"] if connection.vendor == "sqlite" else []
    assert found["fleet_fine_to_indicate"]["columns"] == [*led, "indication_due", "id"]
    assert found["fleet_fine_to_indicate_plate"]["columns"] == [
        *led,
        "registration",
        "indication_due",
        "id",
    ]
