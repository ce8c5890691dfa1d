"""The lists' searches and filters read columns and indexes, never the payload's JSON: a
fine by its notice number (or its beginning) or its infraction, a notification by its
title, either by the platform's id; what they read is written by processing."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from fleet.models import Fine, Notification, Wording
from tests.views.test_fines import a_fine, deliver, keys

pytestmark = pytest.mark.django_db

BELT = "Deixar o condutor de usar o cinto de segurança"
SPEED = "Transitar em velocidade superior à máxima permitida em até 20%"


@pytest.fixture
def fines(client) -> None:
    deliver(client, a_fine(41, autoInfracao="E010000041", description=BELT))
    deliver(client, a_fine(42, autoInfracao="E010000042", description=SPEED))
    deliver(client, a_fine(43, autoInfracao="R7000001", description=SPEED, treated=True))
    deliver(client, {"notification": {"id": 7, "treated": False, "title": "Licenciamento"}})


@pytest.mark.parametrize(
    ("q", "found"),
    [
        ("E010000042", ["42"]),  # a notice number
        ("e0100000", ["41", "42"]),  # its beginning, in any case
        ("r7", ["43"]),
        ("0000042", []),  # not its middle: the index reads beginnings
        ("cinto", ["41"]),  # a word of the infraction
        ("VELOCIDADE superior", ["42", "43"]),
        ("43", ["43"]),  # the platform's id
        ("nada disso", []),
    ],
)
def test_a_fine_is_found_by_its_notice_number_its_infraction_or_its_id(
    manager_client, fines, q, found
):
    assert sorted(keys(manager_client.get("/fines/", {"q": q}))) == found


def test_processing_writes_what_the_search_reads(fines):
    belt, speed = Wording.objects.get(text=BELT), Wording.objects.get(text=SPEED)
    assert {f.external_id: (f.reference, f.infraction_id) for f in Fine.objects.all()} == {
        "41": ("E010000041", belt.pk),
        "42": ("E010000042", speed.pk),
        "43": ("R7000001", speed.pk),  # one wording, however many fines share it
    }
    heading = Notification.objects.get().heading
    assert heading is not None
    assert heading.text == "Licenciamento"


def test_an_event_that_changes_the_infraction_moves_the_fine(client, manager_client, fines):
    deliver(client, a_fine(41, autoInfracao="E010000041", description=SPEED))

    assert sorted(keys(manager_client.get("/fines/", {"q": "cinto"}))) == []
    assert sorted(keys(manager_client.get("/fines/", {"q": "velocidade"}))) == ["41", "42", "43"]


# Every filter and sort of the lists and their exports.
FILTERED = [
    "/fines/?q=E0100",
    "/fines/?q=cinto",
    "/fines/?treated=0&document=1",
    "/fines/?plate=ABC1D23",
    "/fines/?driver=101",
    "/fines/?driver=ana",
    "/fines/?month=2026-03",
    "/fines/?amount_min=10&amount_max=500&sort=-amount",
    "/fines/?received_from=2026-01-01&sort=occurred_at",
    "/fines/?page=2",
    "/fines/export.csv?q=cinto&treated=1",
    "/notifications/?q=licen&treated=0&plate=ABC1D23",
    "/notifications/export.csv?q=licen",
]
_JSON = re.compile(r"JSON_|->|#>|\"payload\"", re.IGNORECASE)


@pytest.mark.parametrize("path", FILTERED)
def test_no_filter_reads_the_payloads_json(manager_client, fines, path):
    with CaptureQueriesContext(connection) as queries:
        response = manager_client.get(path)
        if getattr(response, "streaming", False):
            b"".join(response.streaming_content)
    assert response.status_code == 200
    conditions = [_conditions(query["sql"]) for query in queries.captured_queries]
    assert conditions
    assert [found for found in conditions if _JSON.search(found)] == []


@pytest.mark.parametrize("path", [path for path in FILTERED if "export" not in path])
def test_a_list_page_asks_the_database_each_thing_once(manager_client, fines, path):
    """A search's wordings, a tally, a count: the page and its total need the same ones."""
    with CaptureQueriesContext(connection) as queries:
        assert manager_client.get(path).status_code == 200
    asked = Counter(query["sql"] for query in queries.captured_queries)
    assert [sql for sql, times in asked.items() if times > 1] == []


def _conditions(sql: str) -> str:
    """What a query selects by and orders by (its WHERE and ORDER BY), not what it reads."""
    where = sql.find(" WHERE ")
    order = sql.find(" ORDER BY ")
    starts = [at for at in (where, order) if at >= 0]
    return sql[min(starts) :] if starts else ""


@pytest.mark.parametrize(
    ("q", "found"),
    [("e0100", {"41", "42"}), ("cinto", {"41"}), ("43", {"43"}), ("id:42", {"42"})],
)
def test_the_admin_searches_as_the_list_does(admin_client, fines, q, found):
    with CaptureQueriesContext(connection) as queries:
        page = admin_client.get("/admin/fleet/fine/", {"q": q}).text
    assert set(re.findall(r'href="/admin/fleet/fine/\d+/change/[^"]*">(\d+)</a>', page)) == found
    assert not [s for s in queries.captured_queries if _JSON.search(_conditions(s["sql"]))]
