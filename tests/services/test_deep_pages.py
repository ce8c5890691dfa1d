"""A page deep in the fines list (the last a list counts to: `COUNTED`) is read from an
index in the list's order, whatever the sort the form offers: the database walks the
index to the page, it never reads every fine and sorts them.

The plan is asked of the database the suite runs on: SQLite by default, PostgreSQL in
CI's second leg. PostgreSQL is told to avoid a sequential scan and a sort whenever it
can (its planner chooses them for a table this small): a plan that still has one has
no index to do without it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import date, timedelta
from decimal import Decimal
from typing import Any, cast

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from fleet.models import (
    DriverBasis,
    Fine,
    Notification,
    VehicleGroup,
    VehicleGroupPlate,
    Wording,
    of_vehicle,
)
from fleet.services.dashboard import COUNTED
from fleet.services.fines import (
    FINE_SORTS,
    LIST_ORDER,
    PER_PAGE,
    fine_filtered,
    fine_list_total,
    fine_search,
    notification_search,
)
from fleet.services.list_walks import scope_walked
from fleet.services.paging import CappedPaginator
from fleet.services.scopes import WHOLE_FLEET, VehicleScope
from fleet.services.tallies import fine_tallies_rebuild

pytestmark = pytest.mark.django_db

DEEP = COUNTED - PER_PAGE  # the first fine of the last page a list counts to


# Records PostgreSQL's planner is given statistics of (`planned`).
SAMPLE = 1000


@pytest.fixture
def planned() -> Iterator[None]:
    """On PostgreSQL, sequential scans and sorts only where no index will do, chosen from
    the statistics of a sample of fines and notifications spread as a fleet's are, and
    from indexes of their size: not from an empty table's, whose indexes earlier tests'
    rolled-back rows left larger, some more than others (the planner then sorted every
    untreated fine read from a small index rather than walk a swollen one). Rebuilt
    in the test's transaction, which rolls them back with it."""
    with transaction.atomic():
        if connection.vendor == "postgresql":
            sample()
            with connection.cursor() as cursor:
                for table in ("fleet_fine", "fleet_notification"):
                    cursor.execute(f"REINDEX TABLE {table}")
                cursor.execute("ANALYZE fleet_fine, fleet_notification")
                cursor.execute("SET LOCAL enable_seqscan = off")
                cursor.execute("SET LOCAL enable_sort = off")
        yield


def sample() -> None:
    """SAMPLE fines and as many notifications: a third treated, each changed at its own
    moment, of a hundred vehicles, half attributed, three in ten without their document,
    committed and received over three years, amounts from 0 to 300."""
    now = timezone.now()
    common = [
        {
            "key": f"id:sample-{n}",
            "external_id": f"sample-{n}",
            "payload": {"id": n},
            "treated": n % 3 == 0,
            "registration": f"SMP{n % 100:04d}",
            "received_at": now - timedelta(days=n % 1000),
            "updated_at": now - timedelta(minutes=n),
        }
        for n in range(SAMPLE)
    ]
    Fine.objects.bulk_create(
        Fine(
            **fields,
            amount=Decimal(n * 7 % 300),
            occurred_at=now - timedelta(days=n % 1000, hours=n % 24),
            driver_id=n % 50 + 1 if n % 2 else None,
            driver_basis=DriverBasis.LIST if n % 2 else DriverBasis.PENDING,
            link_frame="" if n % 10 < 3 else f"https://example.com/{n}",
            reference=f"S{n:07d}",
        )
        for n, fields in enumerate(common)
    )
    Notification.objects.bulk_create(Notification(**fields) for fields in common)


def plan(records: Any) -> list[str]:
    """The plan of the page at `DEEP` of `records` (a queryset, or a paginator's list)."""
    return records[DEEP : DEEP + PER_PAGE].explain().splitlines()


def read_from_an_index(lines: list[str]) -> bool:
    """Whether the plan reads the rows in order from an index: SQLite's may sort the
    rows an index gives in the same order of its first columns ("right part": ties of
    one moment), PostgreSQL's likewise ("Incremental Sort")."""
    if connection.vendor == "postgresql":
        # A node is "Name  (cost=…)", after an arrow below the first.
        nodes = [line.strip().removeprefix("->").strip() for line in lines]
        return not any(re.match(r"(Seq Scan|Sort) .*\(cost=", node) for node in nodes)
    return not any(
        ("SCAN fleet_" in line and "INDEX" not in line) or "TEMP B-TREE FOR ORDER BY" in line
        for line in lines
    )


def in_its_order(records: Any, lines: list[str]) -> bool:
    """Whether the index gives the rows in the list's order but for its last key (the id
    that breaks ties of one moment or amount): what is sorted after it is a few ties,
    not every row of a filter. A page of a vehicle's or a driver's fines may sort them
    (hundreds); a list of millions may not."""
    keys = [
        key.lstrip("-") if isinstance(key, str) else key.expression.name
        for key in records.query.order_by
    ]
    if connection.vendor == "postgresql":
        presorted = [line.split("Presorted Key:")[1] for line in lines if "Presorted Key:" in line]
        if not presorted:
            return True  # the index gives the whole order
        have = [key.strip().split(".")[-1].split(" ")[0] for key in presorted[0].split(",")]
    else:
        if not any("RIGHT PART OF ORDER BY" in line for line in lines):
            return True
        index = re.search(r"USING (?:COVERING )?INDEX (\w+)", "\n".join(lines))
        assert index, lines
        with connection.cursor() as cursor:
            cursor.execute(f"PRAGMA index_info({index[1]})")
            have = [row[2] for row in cursor.fetchall()]
    return all(key in have for key in keys[:-1])


@pytest.mark.parametrize("sort", ["", *FINE_SORTS])
def test_a_deep_page_of_every_sort_is_read_from_an_index(planned, sort):
    fines = fine_filtered(scope=WHOLE_FLEET, sort=sort)
    lines = plan(fines)
    assert read_from_an_index(lines), "\n".join(lines)
    assert in_its_order(fines, lines), "\n".join(lines)


@pytest.mark.parametrize(
    "filters",
    [
        {"treated": False},
        {"treated": True, "sort": "-occurred_at"},
        {"document": False},
        {"document": False, "treated": False},
        {"amount_min": Decimal(100), "sort": "-amount"},
        {"amount_max": Decimal(100), "sort": "amount"},
    ],
    ids=repr,
)
def test_a_deep_page_of_a_filtered_list_is_read_from_an_index(planned, filters):
    fines = fine_filtered(scope=WHOLE_FLEET, **filters)
    lines = plan(fines)
    assert read_from_an_index(lines), "\n".join(lines)
    assert in_its_order(fines, lines), "\n".join(lines)


def test_a_drivers_fines_are_read_from_their_index(planned):
    """A driver's fines (hundreds at most) are found by their index, then sorted."""
    lines = plan(fine_filtered(scope=WHOLE_FLEET, driver=4021))
    assert read_from_an_index(lines), "\n".join(lines)


@pytest.mark.parametrize(
    ("listed", "table"),
    [
        (lambda: fine_filtered(scope=WHOLE_FLEET, plate="abc-1c34"), "fleet_fine"),
        (
            lambda: notification_search(scope=WHOLE_FLEET, plate="abc-1c34").paginator.object_list,
            "fleet_notification",
        ),
        # What a vehicle's page reads (`vehicle_records`).
        (lambda: Fine.objects.filter(of_vehicle("ABC1C34")).order_by(*LIST_ORDER), "fleet_fine"),
    ],
    ids=["fines by plate", "notifications by plate", "a vehicle's fines"],
)
def test_a_vehicles_records_are_searched_in_the_plate_index(planned, listed, table):
    """A vehicle's records are looked up in the index of plates, not found by reading a
    whole index: SQLite reads that partial index only when the query says its condition
    (`of_vehicle`)."""
    lines = plan(listed())
    if connection.vendor == "postgresql":
        index = f"Index Scan using {table}_plate on {table}"
    else:
        index = f"SEARCH {table} USING INDEX {table}_plate (registration=?)"
    assert any(index in line for line in lines), "\n".join(lines)
    assert read_from_an_index(lines), "\n".join(lines)


def test_a_deep_page_of_notifications_is_read_from_an_index(planned):
    page = notification_search(scope=WHOLE_FLEET)
    lines = plan(page.paginator.object_list)
    assert read_from_an_index(lines), "\n".join(lines)


def test_the_check_sees_a_sort_of_every_fine(planned):
    """The check itself: a list sorted on a column no index orders (the payment slip's
    address) is a sort of them all, and is refused."""
    lines = plan(Fine.objects.order_by("link", "-id"))
    assert not read_from_an_index(lines), "\n".join(lines)


def test_a_month_is_read_from_its_index(planned):
    """A month's fines are found through the index of when they were committed (their
    order then costs what the month holds, not what the table holds)."""
    lines = plan(fine_filtered(scope=WHOLE_FLEET, month=date(2026, 5, 1)).order_by())
    if connection.vendor == "postgresql":
        assert not any("Seq Scan" in line for line in lines), "\n".join(lines)
    else:
        assert any("USING INDEX fleet_fine_occurred" in line for line in lines), "\n".join(lines)


def region(name: str, registrations: list[str]) -> VehicleScope:
    group = VehicleGroup.objects.create(name=name)
    VehicleGroupPlate.objects.bulk_create(
        VehicleGroupPlate(group=group, registration=registration) for registration in registrations
    )
    return VehicleScope(whole_fleet=False, group_ids=(group.pk,), key=f"test-{name}")


def fines_of(registrations: list[str], count: int, *, moment: int = 1) -> None:
    """`count` fines of these vehicles in turn, `moment` of them changed at each moment,
    of amounts that repeat; the dashboard's tallies rebuilt."""
    now = timezone.now()
    Fine.objects.bulk_create(
        Fine(
            key=f"id:{n}",
            external_id=str(n),
            treated=n % 3 == 0,
            payload={"id": n},
            registration=registrations[n % len(registrations)],
            amount=Decimal(n % 17),
            received_at=now,
            updated_at=now - timedelta(seconds=n // moment),
        )
        for n in range(count)
    )
    fine_tallies_rebuild()


def test_a_page_after_the_first_holds_the_lists_records_in_its_order():
    """Read by ids first, then the records: the same records, in the same order, as the
    list's slice, ties of one moment included."""
    fines_of(["AAA1A11"], 2 * PER_PAGE + 30, moment=3)  # three fines a moment

    for sort in ("", "-amount"):
        listed = list(fine_filtered(scope=WHOLE_FLEET, sort=sort).values_list("pk", flat=True))
        for number in (2, 3):
            page = fine_search(scope=WHOLE_FLEET, sort=sort, page=number)
            start = (number - 1) * PER_PAGE
            assert [fine.pk for fine in page] == listed[start : start + PER_PAGE]


def test_a_deep_page_skips_its_records_in_the_index_alone(planned):
    """What skips ten thousand records reads their ids from the index (SQLite: a covering
    index), then fifty records by id."""
    lines = plan(fine_filtered(scope=WHOLE_FLEET).values_list("pk", flat=True))
    if connection.vendor == "sqlite":
        assert any("USING COVERING INDEX fleet_fine_list_ids" in line for line in lines), lines
    else:
        assert read_from_an_index(lines), "\n".join(lines)


def test_a_region_with_few_fines_finds_them_by_plate():
    """A part of the fleet whose fines are few (here 3 of 300): found by their plates, then
    sorted (walking the list for them would read the whole list)."""
    fines_of(["AAA1A11"] * 99 + ["BBB2B22"], 300)
    scope = region("small", ["BBB2B22"])

    assert not scope_walked(scope)
    if connection.vendor == "sqlite":  # PostgreSQL's planner chooses by its statistics
        lines = plan(fine_filtered(scope=scope))
        assert any("fleet_fine_plate" in line for line in lines), lines


def test_a_region_with_many_fines_walks_the_list_in_its_order():
    """A part of the fleet holding most fines (past the square root of COUNTED times all
    of them): the list's index walked in order, each fine checked against the part's
    plates, and a page stops at its last; the same fines as found by plate."""
    fines_of(["AAA1A11", "BBB2B22", "CCC3C33", "DDD4D44"], 2 * COUNTED)
    scope = region("large", ["AAA1A11", "BBB2B22", "CCC3C33"])

    assert scope_walked(scope)
    fines = fine_filtered(scope=scope)
    if connection.vendor == "sqlite":  # PostgreSQL's planner chooses by its statistics
        lines = plan(fines)
        assert any("USING INDEX fleet_fine_list_ids" in line for line in lines), lines
        assert read_from_an_index(lines), "\n".join(lines)
        assert in_its_order(fines, lines), "\n".join(lines)
        # A deep page skips its entries by their plates in the index: no fine read for each.
        lines = plan(fines.values_list("pk", flat=True))
        assert any("USING COVERING INDEX fleet_fine_list_ids" in line for line in lines), lines
    walked = list(fines.values_list("pk", flat=True)[:200])
    by_plate = scope.records(Fine.objects.order_by(*LIST_ORDER))
    assert walked == list(by_plate.values_list("pk", flat=True)[:200])

    # Its count (to COUNTED) is made through the plates: the walk would read a fine for each.
    paginator = cast(CappedPaginator, fine_search(scope=scope).paginator)
    assert "EXISTS" in str(cast(Any, paginator.object_list).query)
    assert "EXISTS" not in str(paginator.counted.query)
    assert (paginator.count, paginator.capped) == (COUNTED, True)


def test_a_large_regions_uncertain_fines_are_counted_from_their_own_index():
    """The fines whose driver is uncertain are few in any part of the fleet: a large
    part's are read from the index of fines by how their driver is known, each checked
    against its plates, counted too
    (found by the plates, the count read every fine of the part: 37 s at ten million)."""
    fines_of(["AAA1A11", "BBB2B22", "CCC3C33", "DDD4D44"], 2 * COUNTED)
    uncertain = list(Fine.objects.order_by("pk").values_list("pk", flat=True)[::97])
    Fine.objects.filter(pk__in=uncertain).update(driver_basis=DriverBasis.UNCERTAIN)
    scope = region("large", ["AAA1A11", "BBB2B22", "CCC3C33"])
    assert scope_walked(scope)

    paginator = cast(
        CappedPaginator, fine_search(scope=scope, basis=DriverBasis.UNCERTAIN).paginator
    )

    assert "EXISTS" in str(paginator.counted.query)  # each fine checked, not found by plate
    in_part = Fine.objects.filter(pk__in=uncertain).exclude(registration="DDD4D44").count()
    assert paginator.count == in_part > 0
    if connection.vendor == "sqlite":  # PostgreSQL's planner chooses by its statistics
        lines = paginator.counted.order_by().explain().splitlines()
        assert any("INDEX fleet_fine_basis" in line for line in lines), lines


def test_a_search_past_the_count_says_so():
    """A word whose infractions have more fines than a list counts: its list says "more
    than COUNTED", counted up to there through the infractions' index alone; with another
    filter it is counted with that filter."""
    fines_of(["AAA1A11", "BBB2B22"], COUNTED + 10)
    Fine.objects.update(infraction=Wording.objects.create(text="Velocidade", digest="v"))

    for sort in ("", "-amount"):
        with CaptureQueriesContext(connection) as queries:
            page = fine_search(scope=WHOLE_FLEET, q="velocidade", sort=sort)
        assert cast(CappedPaginator, page.paginator).capped
        counts = [query["sql"] for query in queries if "COUNT(" in query["sql"].upper()]
        assert counts, queries
        assert all('"infraction_id" IN' in sql for sql in counts), counts

    with CaptureQueriesContext(connection) as queries:
        page = fine_search(scope=WHOLE_FLEET, q="velocidade", treated=False)
    assert page.paginator.count == Fine.objects.filter(treated=False).count() < COUNTED
    assert [query for query in queries if "COUNT(" in query["sql"].upper()]


def test_a_region_past_the_count_says_so_without_counting_at_each_page():
    """A region holding more fines and notifications than a list counts: its unfiltered
    lists say "more than COUNTED" from what was counted once (an hour); a filter is
    counted as before, and a region below the cap at every page (a new fine counts at
    once)."""
    fines_of(["AAA1A11", "BBB2B22"], COUNTED + 10)
    Notification.objects.bulk_create(
        Notification(
            key=f"n{n}",
            payload={"id": n},
            registration="AAA1A11",
            treated=False,
            received_at=timezone.now(),
            updated_at=timezone.now(),
        )
        for n in range(COUNTED + 1)
    )
    large, small = region("large", ["AAA1A11", "BBB2B22"]), region("small", ["BBB2B22"])
    fine_search(scope=large), fine_list_total(scope=large), notification_search(scope=large)

    with CaptureQueriesContext(connection) as queries:
        fines = fine_search(scope=large)
        total = fine_list_total(scope=large, sort="-amount")
        notifications = notification_search(scope=large)
    assert not [query for query in queries if "COUNT(" in query["sql"].upper()], queries
    assert (fines.paginator.count, cast(CappedPaginator, fines.paginator).capped) == (
        COUNTED,
        True,
    )
    assert (total.count, total.more) == (COUNTED, True)
    assert cast(CappedPaginator, notifications.paginator).capped

    # A filter selects some of them: counted.
    assert fine_list_total(scope=large, treated=True).count == (COUNTED + 10 + 2) // 3
    # Below the cap, counted at each page: the list's count follows a new fine at once.
    before = fine_list_total(scope=small).count
    assert fine_search(scope=small).paginator.count == before == (COUNTED + 10) // 2
    now = timezone.now()
    Fine.objects.create(
        key="new",
        payload={},
        registration="BBB2B22",
        treated=False,
        received_at=now,
        updated_at=now,
    )
    assert fine_list_total(scope=small).count == fine_search(scope=small).paginator.count
    assert fine_search(scope=small).paginator.count == before + 1
