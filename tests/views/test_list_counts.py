"""A list counts no further than it must: whole-fleet totals the dashboard's tallies hold
come from them, exact however many fines there are; any other filter counts ten thousand
at most ("more than 10,000", and that many pages), so that a page of ten million fines
costs what one of ten thousand does."""

from __future__ import annotations

import html
import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from fleet.models import Fine, Notification, WebhookDelivery, Wording
from fleet.services.dashboard import COUNTED
from fleet.services.tallies import fine_tallies_rebuild

pytestmark = pytest.mark.django_db

ENGLISH = {"Accept-Language": "en"}


@pytest.fixture
def many_fines() -> int:
    now = timezone.now()
    count = COUNTED + 1
    Fine.objects.bulk_create(
        Fine(
            key=f"id:{n}",
            external_id=str(n),
            treated=n % 2 == 0,
            payload={"id": n, "carPlate": "ABC1D23"},
            registration="ABC1D23",
            amount=Decimal("10.00"),
            occurred_at=now - timedelta(days=1),
            received_at=now,
            updated_at=now - timedelta(seconds=n),
        )
        for n in range(1, count + 1)
    )
    fine_tallies_rebuild()
    return count


def said(page: str) -> tuple[str, str | None]:
    count = re.search(r'data-testid="result-count"><span>([^<]*)</span>', page)
    amount = re.search(r'data-testid="result-amount">([^<]*)<', page)
    assert count
    return html.unescape(count[1]), html.unescape(amount[1]) if amount else None


def test_the_whole_fleets_totals_come_from_the_tallies_exact(manager_client, many_fines):
    with CaptureQueriesContext(connection) as queries:
        page = manager_client.get("/fines/", headers=ENGLISH).text

    assert said(page) == ("10,001 fines", "R$ 100,010.00 in all")
    assert "Page 1 of 200 or more" in page
    assert not [
        q
        for q in queries.captured_queries
        if 'COUNT("fleet_fine"' in q["sql"] and "LIMIT" not in q["sql"]
    ]
    untreated = manager_client.get("/fines/", {"treated": "0"}, headers=ENGLISH).text
    assert said(untreated) == ("5,001 fines", "R$ 50,010.00 in all")


@pytest.mark.parametrize("query", [{}, {"treated": "0"}, {"document": "0"}], ids=repr)
def test_a_list_the_tallies_count_counts_no_fine(manager_client, many_fines, query):
    """Its pages too come from the tallies: no COUNT over the fines (the fines without
    their document were counted by reading the table: 28 ms at a million)."""
    with CaptureQueriesContext(connection) as queries:
        page = manager_client.get("/fines/", query, headers=ENGLISH).text

    assert "Page 1 of " in page
    counts = [q["sql"] for q in queries.captured_queries if "COUNT(" in q["sql"]]
    assert not [sql for sql in counts if '"fleet_fine"' in sql], counts


def test_a_filter_of_more_than_ten_thousand_says_so_and_counts_no_further(
    manager_client, many_fines
):
    with CaptureQueriesContext(connection) as queries:
        page = manager_client.get("/fines/", {"plate": "ABC1D23"}, headers=ENGLISH).text

    assert said(page) == ("More than 10,000 fines: narrow the filters to count them", None)
    counts = [q["sql"] for q in queries.captured_queries if "COUNT(" in q["sql"]]
    # Counted once, for the page's count: the total knows from it that they are more.
    assert len(counts) == 1, counts
    assert f"LIMIT {COUNTED + 1}" in counts[0]
    last = manager_client.get("/fines/", {"plate": "ABC1D23", "page": 999}, headers=ENGLISH).text
    assert "Page 200 of 200 or more" in last
    assert len(re.findall(r'<tr data-testid="fine"', last)) == 50


def test_a_filter_of_ten_thousand_or_fewer_is_counted_and_summed(manager_client, many_fines):
    page = manager_client.get("/fines/", {"plate": "ABC1D23", "treated": "1"}, headers=ENGLISH)

    assert said(page.text) == ("5,000 fines", "R$ 50,000.00 in all")
    assert "Page 1 of 100" in page.text
    assert "or more" not in page.text


@pytest.mark.parametrize("model", ["fine", "webhookdelivery", "notification"])
@pytest.mark.parametrize("query", [{}, {"q": "1"}], ids=["listed", "searched"])
def test_the_admins_lists_of_large_tables_count_no_further(admin_client, many_fines, model, query):
    """Their pages' count is capped, and a search's count stands alone: no count of the
    whole table for "N in all" (a "Show all" link instead)."""
    with CaptureQueriesContext(connection) as queries:
        page = admin_client.get(f"/admin/fleet/{model}/", query, headers=ENGLISH)

    assert page.status_code == 200
    counts = [q["sql"] for q in queries.captured_queries if "COUNT(" in q["sql"]]
    assert counts
    assert all(f"LIMIT {COUNTED + 1}" in sql for sql in counts), counts
    assert "Show all" in page.text
    if model == "fine" and not query:
        assert "10000" in page.text or "10,000" in page.text  # the capped count


def test_the_dashboard_counts_untreated_notifications_up_to_ten_thousand(manager_client):
    """Notifications have no tallies: the dashboard counts the untreated ones on their
    index, and stops past `COUNTED` ("10000+"), whatever a million would cost."""
    now = timezone.now()
    Notification.objects.bulk_create(
        Notification(
            key=f"id:{n}", external_id=str(n), treated=False, payload={"id": n}, updated_at=now
        )
        for n in range(COUNTED + 1)
    )

    with CaptureQueriesContext(connection) as queries:
        page = manager_client.get("/", headers=ENGLISH).text

    shown = re.search(r'data-testid="count-untreated-notifications">([^<]*)<', page)
    assert shown
    assert shown[1] == f"{COUNTED}+"
    counts = [q["sql"] for q in queries if "fleet_notification" in q["sql"]]
    assert counts
    assert all(f"LIMIT {COUNTED + 1}" in sql for sql in counts), counts


def test_the_admins_list_of_deliveries_reads_no_body(admin_client):
    """A delivery's body (up to FLEET_WEBHOOK_MAX_BYTES, kept 90 days) is read on its own
    page only: a page of the list reads fifty deliveries' columns, not their bodies."""
    body = b'{"frame": {"id": 7, "carPlate": "ABC1D23"}}'
    delivery = WebhookDelivery.objects.create(
        body=body, body_size=len(body), body_sha256="0" * 64, kind="frame", status="received"
    )
    with CaptureQueriesContext(connection) as queries:
        listed = admin_client.get("/admin/fleet/webhookdelivery/", headers=ENGLISH)
    selects = [
        q["sql"] for q in queries.captured_queries if 'FROM "fleet_webhookdelivery"' in q["sql"]
    ]
    assert listed.status_code == 200
    assert selects
    assert not any('"fleet_webhookdelivery"."body"' in sql for sql in selects), selects

    own = admin_client.get(f"/admin/fleet/webhookdelivery/{delivery.pk}/change/", headers=ENGLISH)
    assert own.status_code == 200
    assert "ABC1D23" in own.text


def test_a_search_whose_infraction_alone_is_past_ten_thousand_counts_that_alone(
    manager_client, many_fines
):
    """A search finds in several ways at once (an id, a notice number, an infraction);
    PostgreSQL reads every fine of each into one bitmap before it counts: when the
    fines of the infractions found are past the cap by themselves, only they are
    counted, through their index, and the search says "more than"."""
    speeding = Wording.objects.create(text="Excesso de velocidade", digest="1" * 64)
    Fine.objects.update(infraction=speeding)

    with CaptureQueriesContext(connection) as queries:
        page = manager_client.get("/fines/", {"q": "velocidade"}, headers=ENGLISH).text

    assert said(page) == ("More than 10,000 fines: narrow the filters to count them", None)
    # The list's counts (on SQLite a walk of the list also counts what the search
    # selects, up to what a page would walk, and keeps that an hour).
    counts = [q["sql"] for q in queries.captured_queries if f"LIMIT {COUNTED + 1}" in q["sql"]]
    assert len(counts) == 1, counts
    assert " OR " not in counts[0], counts
    assert '"infraction_id" IN' in counts[0], counts
    treated = manager_client.get("/fines/", {"q": "velocidade", "treated": "1"}, headers=ENGLISH)
    assert said(treated.text) == ("5,000 fines", "R$ 50,000.00 in all")
