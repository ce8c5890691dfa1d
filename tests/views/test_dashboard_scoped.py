"""A region's dashboard at any size while its own tallies are not counted (its plates
just changed, or before the worker ran; also a manager of several groups): its figures
are summed from its fines, which at a region of a large fleet takes seconds; so a page
never waits for that once the region has been seen. After a fine changed, the next page
shows the figures kept and reads them again after its response; the page after shows
them new. (Once counted, a group's tallies are read: `tests/services/test_group_tallies.py`.)
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
from fleet.webhooks.processing import deliveries_process_received
from tests.views.test_vehicle_group_pages import login, regions

__all__ = ["regions"]  # the fixture

pytestmark = [pytest.mark.django_db, pytest.mark.scoped]

WEBHOOK = "/webhooks/fleet/dev-webhook-token/"
ENGLISH = {"Accept-Language": "en"}


def fine(client: Client, number: int, plate: str, amount: str) -> None:
    payload = {"frame": {"id": number, "treated": False, "carPlate": plate, "amount": amount}}
    response = client.post(WEBHOOK, data=json.dumps(payload), content_type="application/json")
    assert response.status_code == 202
    deliveries_process_received()


def shown(client: Client) -> tuple[str, list[str]]:
    """The untreated R$ the dashboard shows, and the SQL it ran."""
    amount, _said, sql = shown_and_said(client)
    return amount, sql


def shown_and_said(client: Client) -> tuple[str, str, list[str]]:
    """The untreated R$ the dashboard shows, what it says of when it was read, and the
    SQL it ran."""
    with CaptureQueriesContext(connection) as queries:
        page = client.get("/", headers=ENGLISH).text
    amount = re.search(r'data-testid="untreated-amount">R\$&nbsp;([^<]*)<', page)
    assert amount
    said = re.search(r'data-testid="figures-behind">([^<]*)<', page)
    return amount[1], said[1] if said else "", [query["sql"] for query in queries.captured_queries]


def reads_the_fines(sql: list[str]) -> bool:
    return any('FROM "fleet_fine"' in statement for statement in sql)


def test_a_regions_dashboard_never_waits_for_its_sum_once_seen(
    client, django_user_model, regions, held_clock
):
    _fleet, made = regions
    sp, sp_plates = made["São Paulo"]
    user = login(client, django_user_model, "regina", sp)
    fine(Client(), 1, sp_plates[0], "100.00")

    first, said, sql = shown_and_said(client)  # never seen: summed while the page waits
    assert (first, said) == ("100.00", "")
    assert reads_the_fines(sql)

    fine(Client(), 2, sp_plates[1], "50.00")
    kept, said, sql = shown_and_said(client)  # the figures kept; summed again after the response
    assert kept == "100.00"
    # When they were read (in São Paulo), and that newer fines are being counted.
    read = timezone.localtime().strftime("%H:%M")
    assert said.startswith(f"Figures of {read}: the fines received since then are being counted")
    assert reads_the_fines(sql)  # the test client runs what follows a response in its call

    new, said, sql = shown_and_said(client)
    assert (new, said) == ("150.00", "")
    assert not reads_the_fines(sql)
    # Outside a request (a task, a shell), nobody waits: read at once.
    fine(Client(), 3, sp_plates[2], "1.00")
    assert fine_figures(scope=scope_of(user)).untreated.count == 3


def test_a_fine_outside_the_region_changes_nothing_it_shows(client, django_user_model, regions):
    _fleet, made = regions
    (sp, sp_plates), (_rio, rio_plates) = made["São Paulo"], made["Rio"]
    login(client, django_user_model, "regina", sp)
    fine(Client(), 1, sp_plates[0], "100.00")
    assert shown(client)[0] == "100.00"

    fine(Client(), 2, rio_plates[0], "70.00")

    assert shown(client)[0] == "100.00"
    assert shown(client)[0] == "100.00"


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


def test_a_regions_untreated_notifications_are_counted_once_per_change(
    client, django_user_model, regions
):
    """A region's count looks its plates up in the index of plates (as many looks as it
    has vehicles, when few notifications are untreated): counted with its figures, kept,
    and counted again after a page's response once a notification came or was treated,
    not at every poll."""
    _fleet, made = regions
    (sp, sp_plates), (_rio, rio_plates) = made["São Paulo"], made["Rio"]
    login(client, django_user_model, "regina", sp)
    notification(Client(), 1, sp_plates[0])

    count, sql = notifications_shown(client)  # never seen: counted while the page waits
    assert count == "1"
    assert counts_notifications(sql)
    count, sql = notifications_shown(client)  # nothing changed: kept, not counted
    assert count == "1"
    assert not counts_notifications(sql)

    notification(Client(), 2, sp_plates[1])
    count, sql = notifications_shown(client)  # as kept; counted after the response
    assert count == "1"
    assert counts_notifications(sql)
    assert notifications_shown(client)[0] == "2"

    notification(Client(), 1, sp_plates[0], treated=True)
    notifications_shown(client)
    count, sql = notifications_shown(client)
    assert count == "1"
    assert not counts_notifications(sql)

    # Another region's notification changes the version too: counted again, the same.
    notification(Client(), 3, rio_plates[0])
    notifications_shown(client)
    assert notifications_shown(client)[0] == "1"
