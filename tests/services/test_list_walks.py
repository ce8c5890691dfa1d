"""A filter that selects many fines (a month of a few, a word most infractions have, the
fines received lately) is checked fine by fine as the list's index is walked to the
page's last, not found through its own index and every fine it selects sorted; one that
selects few (a notice number, a month nobody was fined in) is found. Decided page by
page (`fleet.services.list_walks`): a deep page of a month reads the month and sorts it,
as walking would read more.

SQLite only: PostgreSQL's planner makes that choice from its statistics, and its lists
keep their filters as they are (checked here too). On both, the lists are compared with
the same filters found without walking, so a walk that lost or reordered a fine fails
here whatever its plan.
"""

from __future__ import annotations

import re
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection
from django.db.models import Q
from django.utils import timezone

from fleet.models import DriverBasis, Fine, Notification, Wording
from fleet.services.fines import (
    LIST_ORDER,
    PER_PAGE,
    fine_filtered,
    fine_list_total,
    fine_search,
    notification_search,
)
from fleet.services.list_walks import conditions_walked
from fleet.services.scopes import WHOLE_FLEET
from fleet.services.tallies import fine_tallies_rebuild
from tests.services.test_deep_pages import in_its_order, read_from_an_index

pytestmark = pytest.mark.django_db

FINES = 8 * PER_PAGE
MAY = date(2026, 5, 1)


def moment(day: date, hour: int = 12) -> datetime:
    return timezone.make_aware(datetime.combine(day, time(hour)))


@pytest.fixture
def fines() -> dict[str, Any]:
    """FINES fines: three in four of one speeding wording, one in two committed in May
    (the rest in 2025), three in four received in the last twelve days, the rest before;
    one a moment, so that the list's order is one."""
    speeding, parking = (
        Wording.objects.create(text=text, digest=str(n))
        for n, text in enumerate(["Transitar em velocidade superior à máxima", "Estacionar"])
    )
    now = timezone.now()
    Fine.objects.bulk_create(
        Fine(
            key=f"id:{n}",
            external_id=str(n),
            reference=f"R{n:06d}",
            treated=n % 5 == 0,
            payload={"id": n},
            registration=f"AAA{n % 10}A11",
            amount=Decimal(n % 23),
            driver_id=n % 7 + 1 if n % 2 == 0 else None,
            driver_basis=DriverBasis.LIST if n % 2 == 0 else DriverBasis.PENDING,
            link_frame=f"https://example.com/{n}" if n % 3 == 1 else "",
            infraction=parking if n % 4 == 3 else speeding,
            occurred_at=moment(
                MAY + timedelta(days=n % 28) if n % 2 else date(2025, 1 + n % 12, 10)
            ),
            received_at=now - timedelta(days=n % 4 * 5 + n % 3),
            updated_at=now - timedelta(seconds=n),
        )
        for n in range(FINES)
    )
    fine_tallies_rebuild()
    return {"speeding": speeding, "parking": parking, "now": now}


def walks(records: Any) -> bool:
    """Whether the first page of `records` is read by walking the list's index: checked
    in an EXISTS on each fine's key, in the index's order, nothing sorted but ties. On
    PostgreSQL, whether the filters are left to its planner (no EXISTS)."""
    if connection.vendor != "sqlite":
        return "EXISTS" not in str(records.query)
    lines = records[:PER_PAGE].explain().splitlines()
    return (
        "EXISTS" in str(records.query)
        and read_from_an_index(lines)
        and in_its_order(records, lines)
    )


def objects(page: Any) -> Any:
    """The queryset a page was read from."""
    return page.paginator.object_list


def listed(page: Any) -> list[int]:
    return [record.pk for record in page]


def found_without_walking(model: type[Fine] | type[Notification], filters: dict[str, Any]):
    """What `filters` select, in the list's order or their sort, picked out in Python from
    every record: what the database's pages are checked against."""
    if model is Fine:
        return [fine.pk for fine in _sorted(filter(_selects(filters), _every_fine()), filters)]
    notifications = Notification.objects.order_by(*LIST_ORDER)
    if "q" in filters:
        notifications = notifications.filter(heading__text__icontains=filters["q"])
    return list(notifications.values_list("pk", flat=True))


def _every_fine() -> list[Fine]:
    return list(Fine.objects.select_related("infraction"))


def _selects(filters: dict[str, Any]) -> Any:
    def selects(fine: Fine) -> bool:
        q = filters.get("q", "")
        wording = fine.infraction.text.lower() if fine.infraction else ""
        local = timezone.localtime
        return all(
            (
                not q
                or fine.key == f"id:{q}"
                or fine.reference.startswith((q, q.upper()))
                or q.lower() in wording,
                filters.get("treated") in (None, fine.treated),
                filters.get("document") in (None, bool(fine.link_frame)),
                filters.get("plate") in (None, fine.registration),
                filters.get("driver") in (None, fine.driver_id),
                "month" not in filters
                or local(fine.occurred_at).date().replace(day=1) == filters["month"],
                (fine.amount or 0) >= filters.get("amount_min", 0),
                (fine.amount or 0) <= filters.get("amount_max", fine.amount or 0),
                local(fine.received_at).date() >= filters.get("received_from", date.min),
            )
        )

    return selects


def _sorted(fines: Any, filters: dict[str, Any]) -> list[Fine]:
    keys = {
        "": lambda fine: (fine.treated, -fine.updated_at.timestamp(), -fine.pk),
        "-amount": lambda fine: (-fine.amount, -fine.pk),
        "amount": lambda fine: (fine.amount, fine.pk),
        "-occurred_at": lambda fine: (-fine.occurred_at.timestamp(), -fine.pk),
    }
    return sorted(fines, key=keys[filters.get("sort", "")])


WALKED_FILTERS = [
    {"month": MAY},
    {"q": "velocidade"},
    {"received_from": timezone.localdate() - timedelta(days=13)},
    {"amount_min": Decimal(3)},
    {"month": MAY, "treated": False},
    {"q": "velocidade", "sort": "-amount"},
]


@pytest.mark.parametrize("filters", WALKED_FILTERS, ids=repr)
def test_a_filter_that_selects_many_walks_the_list_to_its_first_pages(fines, filters):
    read = PER_PAGE
    walked = objects(fine_search(scope=WHOLE_FLEET, page=1, **filters))
    assert walks(walked), str(walked.query)
    if connection.vendor == "sqlite":  # found, they would all be sorted
        found = fine_filtered(scope=WHOLE_FLEET, **filters)
        lines = found[:PER_PAGE].explain().splitlines()
        assert not (read_from_an_index(lines) and in_its_order(found, lines)), lines
    for number in (1, 2, 3):
        page = fine_search(scope=WHOLE_FLEET, page=number, **filters)
        start = (number - 1) * read
        assert listed(page) == found_without_walking(Fine, filters)[start : start + read]


def test_the_same_pages_whichever_way_they_are_read(fines):
    """Every page of a month, walked to the first and found for the deeper: the fines of
    the month, each once, in the list's order; the count from the indexes."""
    filters = {"month": MAY}
    everything = found_without_walking(Fine, filters)
    pages = fine_search(scope=WHOLE_FLEET, page=1, **filters).paginator.num_pages
    assert pages == 4  # 200 fines
    seen = []
    for number in range(1, pages + 1):
        seen += listed(fine_search(scope=WHOLE_FLEET, page=number, **filters))
    assert seen == everything
    assert Fine.objects.filter(pk__in=seen, occurred_at__month=5).count() == len(seen) == 200


def test_a_deep_page_of_a_month_finds_the_month_and_sorts_it(fines):
    """The fourth page of a month of half the fines: walking to it would read 400 fines
    (its 200 and the 200 between), finding reads the month's 200."""
    first = objects(fine_search(scope=WHOLE_FLEET, page=1, month=MAY))
    assert ("EXISTS" in str(first.query)) is (connection.vendor == "sqlite")
    deep = objects(fine_search(scope=WHOLE_FLEET, page=4, month=MAY))
    assert "EXISTS" not in str(deep.query)


@pytest.mark.parametrize(
    "filters",
    [
        {"q": "R000123"},  # a notice number
        {"q": "estacionar"},  # a wording a fine in four has: 100, not enough at T = 400
        {"month": date(2024, 2, 1)},
        {"received_from": timezone.localdate() + timedelta(days=1)},
        {"month": MAY, "sort": "-occurred_at"},  # the month's own index gives the order
        {"amount_min": Decimal(3), "sort": "amount"},
        {"month": MAY, "plate": "AAA1A11"},  # a vehicle's fines: found by plate
    ],
    ids=repr,
)
def test_a_filter_that_selects_few_finds_them(fines, filters):
    page = fine_search(scope=WHOLE_FLEET, page=1, **filters)
    assert "EXISTS" not in str(objects(page).query)
    assert listed(page) == found_without_walking(Fine, filters)[:PER_PAGE]


@pytest.mark.parametrize(
    "filters",
    [
        {"q": "R000123", "treated": False},
        {"q": "R000120", "document": False},
        {"plate": "AAA1A11", "treated": False},
        {"plate": "AAA1A11", "treated": True, "document": True},
        {"driver": 3, "treated": False},
        {"received_from": timezone.localdate() + timedelta(days=1), "treated": False},
        {"amount_min": Decimal(3), "treated": True, "sort": "amount"},
    ],
    ids=repr,
)
def test_what_another_index_finds_is_not_walked_from_its_state(fines, filters):
    """Treated or not, with a document or not: the list's own index starts with that, and
    SQLite's planner walked it for a vehicle's or a notice number's few fines, through
    every untreated one. Those few are found by their own index, their state checked."""
    page = fine_search(scope=WHOLE_FLEET, page=1, **filters)
    expected = found_without_walking(Fine, filters)
    assert listed(page) == expected[:PER_PAGE]
    assert page.paginator.count == len(expected)
    if connection.vendor == "sqlite":
        lines = objects(page)[:PER_PAGE].explain().splitlines()
        walked = [line for line in lines if re.search(r"fleet_fine_(list|without_doc)", line)]
        assert not walked, lines


def test_the_decision_follows_the_page_and_the_share(fines):
    """F fines of T selected: a page walks while its number times PER_PAGE times T / F
    is under F. Two conditions multiply their shares. PostgreSQL: never (its planner)."""
    condition = {"c": Q(pk__gt=0)}  # never counted: `selected` says how many
    if connection.vendor != "sqlite":
        assert not conditions_walked(Fine, read=50, conditions=condition, selected={"c": 400})
        return
    assert conditions_walked(Fine, read=50, conditions=condition, selected={"c": 200})
    assert conditions_walked(Fine, read=90, conditions=condition, selected={"c": 200})
    assert not conditions_walked(Fine, read=100, conditions=condition, selected={"c": 200})
    assert not conditions_walked(Fine, read=50, conditions=condition, selected={"c": 100})
    assert not conditions_walked(Fine, read=50, conditions=condition, selected={"c": 0})
    two = {"a": Q(pk__gt=0), "b": Q(pk__gt=0)}
    assert conditions_walked(Fine, read=50, conditions=two, selected={"a": 400, "b": 400})
    assert not conditions_walked(Fine, read=50, conditions=two, selected={"a": 200, "b": 200})
    assert not conditions_walked(Notification, read=50, conditions=condition, selected={"c": 1})


def test_what_a_search_selects_is_counted_at_each_page_the_same(fines):
    """Not told how many a search selects, the decision counts them through their indexes
    (here 300 of 400), and reads the span of the ids, at each page (on SQLite:
    PostgreSQL's planner decides without either): the same page each time."""
    pages = []
    for _ in range(2):
        page = fine_search(scope=WHOLE_FLEET, page=1, q="velocidade")
        pages.append((listed(page), page.paginator.count))
    assert pages[0] == pages[1]
    assert pages[0][1] == 300


def test_the_total_of_the_fines_received_since_a_day_is_the_tallies(
    fines, django_assert_num_queries
):
    since = timezone.localdate() - timedelta(days=13)
    counted = Fine.objects.filter(
        received_at__gte=timezone.make_aware(datetime.combine(since, datetime.min.time()))
    )
    with django_assert_num_queries(1):
        total = fine_list_total(scope=WHOLE_FLEET, received_from=since)
    assert (total.count, total.more) == (counted.count(), False)
    assert total.amount == sum(fine.amount or 0 for fine in counted)


def test_a_title_most_notifications_have_walks_their_list():
    recall, other = (
        Wording.objects.create(text=text, digest=f"n{n}")
        for n, text in enumerate(["Recall de airbag", "Licenciamento"])
    )
    now = timezone.now()
    Notification.objects.bulk_create(
        Notification(
            key=f"id:{n}",
            external_id=str(n),
            payload={"id": n},
            treated=n % 3 == 0,
            heading=recall if n % 4 else other,
            received_at=now,
            updated_at=now - timedelta(seconds=n),
        )
        for n in range(FINES)
    )
    for q, walked in (("recall", True), ("licenciamento", False)):
        page = notification_search(scope=WHOLE_FLEET, q=q)
        walked_here = walked or connection.vendor != "sqlite"
        assert walks(objects(page)) is walked_here, q
        assert listed(page) == found_without_walking(Notification, {"q": q})[:PER_PAGE]
        second = notification_search(scope=WHOLE_FLEET, q=q, page=2)
        assert listed(second) == found_without_walking(Notification, {"q": q})[50:100]
    assert page.paginator.count == 100
