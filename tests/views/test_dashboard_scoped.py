"""The dashboard of a part of the fleet whose figures are summed from its fines (a
manager of several groups; a region whose own tallies are not counted yet, its plates
just changed): at a region of a large fleet that sum takes longer than a web server
lets a request run, so a page never waits for it. The first page says the figures are
being counted and asks again; the worker sums them; the next page shows them. After a
fine changed, a page shows the figures kept, saying when they were read, while the
worker reads them again. (Once counted, a group's tallies are read:
`tests/services/test_group_tallies.py`.)
"""

from __future__ import annotations

import json
import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from fleet.services.dashboard import fine_figures
from fleet.services.scopes import scope_of
from fleet.services.tallies import fine_tallies_touch
from fleet.webhooks.processing import deliveries_process_received
from portal.lib.caches import caches_off
from tests.conftest import run_tasks
from tests.views.test_vehicle_group_pages import login, regions

__all__ = ["regions"]  # the fixture

# The worker commits as it goes (`run_tasks`).
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.scoped]

WEBHOOK = "/webhooks/fleet/dev-webhook-token/"
ENGLISH = {"Accept-Language": "en"}
COUNTING = 'data-testid="figures-counting"'


def fine(client: Client, number: int, plate: str, amount: str) -> None:
    payload = {"frame": {"id": number, "treated": False, "carPlate": plate, "amount": amount}}
    response = client.post(WEBHOOK, data=json.dumps(payload), content_type="application/json")
    assert response.status_code == 202
    deliveries_process_received()


def page_of(client: Client, **headers: str) -> tuple[str, list[str]]:
    """The dashboard, and the SQL it ran."""
    with CaptureQueriesContext(connection) as queries:
        page = client.get("/", headers=ENGLISH | headers).text
    return page, [query["sql"] for query in queries.captured_queries]


def shown(client: Client) -> tuple[str, list[str]]:
    """The untreated R$ the dashboard shows, and the SQL it ran."""
    amount, _said, sql = shown_and_said(client)
    return amount, sql


def shown_and_said(client: Client) -> tuple[str, str, list[str]]:
    """The untreated R$ the dashboard shows, what it says of when it was read, and the
    SQL it ran."""
    page, sql = page_of(client)
    amount = re.search(r'data-testid="untreated-amount">R\$&nbsp;([^<]*)<', page)
    assert amount, page
    said = re.search(r'data-testid="figures-behind">([^<]*)<', page)
    return amount[1], said[1] if said else "", sql


def reads_the_fines(sql: list[str]) -> bool:
    return any('FROM "fleet_fine"' in statement for statement in sql)


def two_regions(client, django_user_model, regions):
    """Logged in as a manager of both regions (summed from their fines, always); the
    plates of São Paulo, of Rio, and one in no group."""
    fleet, made = regions
    (sp, sp_plates), (rio, rio_plates) = made["São Paulo"], made["Rio"]
    user = login(client, django_user_model, "regina", sp, rio)
    return user, sp_plates, rio_plates, fleet[6]


def test_a_parts_dashboard_never_waits_for_its_sum(client, django_user_model, regions, held_clock):
    user, sp_plates, rio_plates, _outside = two_regions(client, django_user_model, regions)
    fine(Client(), 1, sp_plates[0], "100.00")
    run_tasks()

    page, sql = page_of(client)  # never seen: the worker is asked to sum them
    assert COUNTING in page
    assert "The figures of your vehicle groups are being counted from their fines" in page
    assert 'data-testid="untreated-amount"' not in page
    assert 'hx-select="#dashboard-figures"' in page
    assert '<meta http-equiv="refresh"' in page
    assert not reads_the_fines(sql)
    again, sql = page_of(client, **{"HX-Request": "true", "HX-Target": "dashboard-figures"})
    assert COUNTING in again
    assert not reads_the_fines(sql)

    assert run_tasks() == 1  # the worker sums them
    first, said, sql = shown_and_said(client)
    assert (first, said) == ("100.00", "")
    assert not reads_the_fines(sql)
    polled, _sql = page_of(client, **{"HX-Request": "true", "HX-Target": "dashboard-figures"})
    assert polled.startswith("<!doctype html>")
    assert COUNTING not in polled

    fine(Client(), 2, rio_plates[0], "50.00")
    kept, said, sql = shown_and_said(client)  # the figures kept, said so; summed by the worker
    assert kept == "100.00"
    # When they were read (in São Paulo), and that newer fines are being counted.
    read = timezone.localtime().strftime("%H:%M")
    assert said.startswith(f"Figures of {read}: the fines received since then are being counted")
    assert not reads_the_fines(sql)
    run_tasks()

    new, said, sql = shown_and_said(client)
    assert (new, said) == ("150.00", "")
    assert not reads_the_fines(sql)
    # Outside a request (a task, a shell), nobody waits on a web server: read at once.
    fine(Client(), 3, sp_plates[2], "1.00")
    assert fine_figures(scope=scope_of(user)).untreated.count == 3


def test_a_sum_that_fines_keep_overtaking_shows_as_of_when_it_began(
    client, django_user_model, regions, held_clock
):
    """At a region of a large fleet the worker's sum takes minutes, and fines keep coming:
    figures a write overtook are kept all the same, shown as of when their sum began
    (said so), and summed again; never "being counted" for as long as fines come."""
    _user, sp_plates, rio_plates, _outside = two_regions(client, django_user_model, regions)
    fine(Client(), 1, sp_plates[0], "100.00")
    run_tasks()
    assert COUNTING in page_of(client)[0]

    def a_fine_meanwhile(execute, sql, params, many, context):
        # Each statement of the sum on the fines is followed by a fine's write.
        result = execute(sql, params, many, context)
        if 'FROM "fleet_fine"' in sql:
            fine_tallies_touch()
        return result

    with connection.execute_wrapper(a_fine_meanwhile):
        assert run_tasks() == 1
    amount, said, _sql = shown_and_said(client)
    assert amount == "100.00"
    read = timezone.localtime().strftime("%H:%M")
    assert said.startswith(f"Figures of {read}: the fines received since then are being counted")
    fine(Client(), 2, rio_plates[0], "50.00")
    run_tasks()  # summed again, no fine meanwhile
    assert shown_and_said(client)[:2] == ("150.00", "")


def test_a_region_whose_tallies_are_not_counted_yet_is_counted_by_the_worker(
    client, django_user_model, regions
):
    _fleet, made = regions
    sp, sp_plates = made["São Paulo"]
    login(client, django_user_model, "paula", sp)
    fine(Client(), 1, sp_plates[0], "100.00")

    page, sql = page_of(client)  # its tallies wait for the worker: so does the page
    assert COUNTING in page
    assert "The figures of your vehicle group are being counted" in page
    assert not reads_the_fines(sql)
    run_tasks()  # the group's tallies, and its figures summed
    assert shown(client)[0] == "100.00"


def test_with_the_cache_off_the_page_sums_them_itself(client, django_user_model, regions):
    """Without the cache there is nothing to keep the worker's sum in: the page sums them
    while it waits, as at a small fleet it may (`SPEED_CACHES_OFF`)."""
    _user, sp_plates, _rio, _outside = two_regions(client, django_user_model, regions)
    fine(Client(), 1, sp_plates[0], "100.00")
    with caches_off():
        amount, sql = shown(client)
    assert amount == "100.00"
    assert reads_the_fines(sql)


def test_a_fine_outside_the_part_changes_nothing_it_shows(client, django_user_model, regions):
    _user, sp_plates, _rio, outside = two_regions(client, django_user_model, regions)
    fine(Client(), 1, sp_plates[0], "100.00")
    shown_counting(client)
    assert shown(client)[0] == "100.00"

    fine(Client(), 2, outside, "70.00")
    run_tasks()

    assert shown(client)[0] == "100.00"
    assert shown(client)[0] == "100.00"


def shown_counting(client: Client) -> None:
    """A first page, which asks the worker to sum the figures; the worker's run."""
    assert COUNTING in page_of(client)[0]
    run_tasks()


def notification(client: Client, number: int, plate: str, *, treated: bool = False) -> None:
    payload = {"notification": {"id": number, "treated": treated, "carPlate": plate}}
    response = client.post(WEBHOOK, data=json.dumps(payload), content_type="application/json")
    assert response.status_code == 202
    deliveries_process_received()


def notifications_shown(client: Client) -> tuple[str, list[str]]:
    """The untreated notifications the dashboard's polled counts show, and the SQL run."""
    with CaptureQueriesContext(connection) as queries:
        page = client.get("/", headers=ENGLISH | {"HX-Request": "true"}).text
    count = re.search(r'data-testid="count-untreated-notifications">([^<]*)<', page)
    assert count
    return count[1], [query["sql"] for query in queries.captured_queries]


def counts_notifications(sql: list[str]) -> bool:
    return any('FROM "fleet_notification"' in statement for statement in sql)


def test_a_parts_untreated_notifications_are_counted_once_per_change(
    client, django_user_model, regions
):
    """A part's count looks its plates up in the index of plates (as many looks as it
    has vehicles, when few notifications are untreated): counted with its figures by
    the worker, kept, and counted again by the worker once a notification came or was
    treated, not at every poll."""
    _user, sp_plates, _rio, outside = two_regions(client, django_user_model, regions)
    notification(Client(), 1, sp_plates[0])
    shown_counting(client)

    count, sql = notifications_shown(client)  # kept, not counted
    assert count == "1"
    assert not counts_notifications(sql)

    notification(Client(), 2, sp_plates[1])
    count, sql = notifications_shown(client)  # as kept; the worker counts them again
    assert count == "1"
    assert not counts_notifications(sql)
    run_tasks()
    assert notifications_shown(client)[0] == "2"

    notification(Client(), 1, sp_plates[0], treated=True)
    notifications_shown(client)
    run_tasks()
    count, sql = notifications_shown(client)
    assert count == "1"
    assert not counts_notifications(sql)

    # A notification of a vehicle in no group changes the version too: counted again, the same.
    notification(Client(), 3, outside)
    notifications_shown(client)
    run_tasks()
    assert notifications_shown(client)[0] == "1"
