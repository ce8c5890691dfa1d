"""The lists' rows are rendered once per version of their record and kept
(`fleet.views.rows`): a row shows its record as it is now, in the reader's language and
time, and a page seen again renders none of its rows."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.template.loader import get_template
from django.test.signals import template_rendered

from fleet.views import rows
from tests.views.test_fines import ENGLISH, a_fine, deliver

pytestmark = pytest.mark.django_db

PORTUGUESE = {"Accept-Language": "pt-br"}


@pytest.fixture
def rows_rendered():
    """The names of the templates rendered, as Django's test instrumentation reports them."""
    names: list[str] = []

    def seen(sender, template, context, **kwargs):
        names.append(template.name)

    template_rendered.connect(seen)
    yield names
    template_rendered.disconnect(seen)


def test_a_page_seen_again_renders_none_of_its_rows(manager_client, client, rows_rendered):
    for fine_id in range(1, 4):
        deliver(client, a_fine(fine_id))
    deliver(client, {"notification": {"id": 7, "treated": False, "title": "Licenciamento"}})

    for path in ("/fines/", "/notifications/"):
        rows_rendered.clear()
        manager_client.get(path)
        first = rows_rendered.count("row")  # the partial's name
        manager_client.get(path)
        again = rows_rendered.count("row") - first
        assert (first, again) == ((3, 0) if path == "/fines/" else (1, 0))


def test_a_row_shows_its_record_as_it_is_now(manager_client, client):
    deliver(client, a_fine(1, updatedAt="2026-11-20T10:00:00Z"))
    assert 'data-testid="untreated"' in manager_client.get("/fines/", headers=ENGLISH).text

    deliver(client, a_fine(1, treated=True, updatedAt="2026-11-21T15:30:00Z"))
    page = manager_client.get("/fines/", headers=ENGLISH).text

    assert 'data-testid="treated"' in page
    assert "2 changes" in page


def test_a_late_observation_that_changes_only_the_history_is_shown(manager_client, client):
    """An older event that arrives late leaves the record (and its `updated_at`) as it
    was and adds to its history of `treated`: the row shows the history as it is."""
    deliver(client, a_fine(1, treated=True, updatedAt="2026-11-21T15:30:00Z"))
    assert "changes" not in manager_client.get("/fines/", headers=ENGLISH).text

    deliver(client, a_fine(1, treated=False, updatedAt="2026-11-20T10:00:00Z"))
    page = manager_client.get("/fines/", headers=ENGLISH).text

    assert 'data-testid="treated"' in page  # the later event's state stays
    assert "2 changes" in page


def test_a_row_is_in_the_readers_language(manager_client, client):
    deliver(client, a_fine(1, amount="1234.5"))

    english = manager_client.get("/fines/", headers=ENGLISH).text
    portuguese = manager_client.get("/fines/", headers=PORTUGUESE).text

    assert "Untreated" in english
    assert "Não tratada" in portuguese
    assert "Untreated" not in portuguese


def test_an_edited_template_renders_the_rows_again():
    """A row's template as deployed is part of its key, read at each page: an edit while
    developing, or a deployment, renders the rows again."""
    name = "fleet/fines.html#row"
    before = rows._template_version(name)
    origin = Path(get_template(name).origin.name)  # type: ignore[attr-defined]
    stat = origin.stat()
    try:
        os.utime(origin, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
        assert rows._template_version(name) != before
    finally:
        os.utime(origin, ns=(stat.st_atime_ns, stat.st_mtime_ns))
