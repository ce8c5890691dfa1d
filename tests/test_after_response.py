"""Work left for after the response: the cold vehicles page is sent before the list is
stored for the other workers, who wait for that copy rather than fetch their own."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from django.core.cache import cache
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.test import Client, RequestFactory

from fleet.services import vehicles
from fleet.services.connection import fleet_cache_scope
from fleet.services.vehicle_cache import CacheKeys
from portal.lib import after_response, request_ids
from tests.conftest import Emulator

LIST = "GET /key/list-cars"


def test_outside_a_request_the_work_is_done_at_once() -> None:
    done: list[str] = []

    after_response.later(lambda: done.append("stored"))

    assert done == ["stored"]


def test_in_a_request_the_work_waits_for_the_response_and_a_failure_stops_nothing(
    caplog: Any,
) -> None:
    done: list[str] = []
    after_response.request_started()

    after_response.later(lambda: done.append("first"))
    after_response.later(lambda: 1 / 0)
    after_response.later(lambda: done.append("third"))
    assert done == []
    with caplog.at_level(logging.ERROR, logger="portal.lib.after_response"):
        after_response.request_finished()

    assert done == ["first", "third"]
    assert "work left for after the response failed" in caplog.text
    after_response.later(lambda: done.append("outside"))  # the request is over
    assert done == ["first", "third", "outside"]


def test_the_work_runs_with_the_id_of_the_request_that_left_it() -> None:
    seen: list[str | None] = []
    after_response.request_started()
    with request_ids.bound("req-later-1"):
        after_response.later(lambda: seen.append(request_ids.current()))

    after_response.request_finished()  # the request's id is unbound by then

    assert seen == ["req-later-1"]
    assert request_ids.current() is None


@pytest.fixture
def keep_the_test_connection() -> Any:
    """As Django's test client does: the test's database connection (in its
    transaction) must not be closed at the start and the end of the request."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.mark.django_db
@pytest.mark.usefixtures("keep_the_test_connection")
def test_the_cold_page_is_answered_before_the_list_is_stored_and_the_lock_freed(
    manager: Any, emulator: Emulator
) -> None:
    browser = Client()
    browser.force_login(manager)
    environ = (
        RequestFactory()
        .get("/vehicles/", headers={"cookie": f"sessionid={browser.cookies['sessionid'].value}"})
        .environ
    )
    keys = CacheKeys(fleet_cache_scope())
    answered: list[str] = []

    # What gunicorn does: call the application, write the body, then close it.
    def start_response(status: str, headers: Any, exc_info: Any = None) -> Any:
        answered.append(status)
        return lambda data: None

    body = WSGIHandler()(environ, start_response)
    page = b"".join(body)

    assert answered == ["200 OK"]
    assert b'data-testid="vehicle-table"' in page
    assert cache.get(keys.meta) is None  # not stored yet...
    assert cache.get(keys.lock) is not None  # ...and no other worker fetches meanwhile
    body.close()
    meta = cache.get(keys.meta)
    assert meta is not None
    assert cache.get(keys.data(meta["version"])) is not None
    assert cache.get(keys.lock) is None
    assert emulator.calls(LIST) == 1


@pytest.mark.django_db
def test_the_refresh_button_stores_the_new_list_before_its_redirect(
    fleet_settings: Any, emulator: Emulator
) -> None:
    vehicles.vehicle_search()  # outside a request: stored at once
    keys = CacheKeys(fleet_cache_scope())
    before = cache.get(keys.meta)["version"]
    after_response.request_started()
    try:
        vehicles.vehicles_refresh()

        # The redirect it answers leads to a page another worker may serve.
        assert cache.get(keys.meta)["version"] != before
        assert cache.get(keys.lock) is None
    finally:
        after_response.request_finished()
    assert emulator.calls(LIST) == 2
