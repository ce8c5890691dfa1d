"""A dashboard left open refreshes its counts without counting as the person's activity."""

from __future__ import annotations

import pytest

from tests.browser.conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_dashboards_own_refresh_says_it_is_one(page, manager, fleet_settings):
    fleet_settings.FLEET_COUNTS_POLL_SECONDS = 1
    log_in(page, "manager", "manager-demo-password")

    with page.expect_request(lambda request: request.headers.get("hx-request") == "true") as poll:
        page.wait_for_timeout(1500)

    headers = poll.value.headers
    assert headers["x-background-refresh"] == "1"
    assert headers["x-csrftoken"]  # the page's own headers still go with it
