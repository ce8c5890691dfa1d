"""A flood of requests without a token to /scim/v2/, over real HTTP: refused requests
cost nothing. They are counted against their address's minute (one row), not stored a
row each nor logged a line each; past SCIM_REQUESTS_PER_MINUTE they are answered 429
with nothing written at all, and the limit holds across the deployment's processes
(counted in the database, whatever the cache)."""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

import pytest
import requests
from django.apps import apps

from signin.models import ScimCall, ScimMinute
from tests.signin.conftest import USER_SCHEMA

pytestmark = pytest.mark.django_db(transaction=True)

FLOOD = 10_000


def rows() -> int:
    """Every row of every table the portal's models have."""
    return sum(model._default_manager.count() for model in apps.get_models())


@pytest.mark.timeout(600)
def test_ten_thousand_requests_without_a_token_write_a_row_and_a_line_a_minute(
    live_server: Any, providers: Any, settings: Any, log_records: Any, time_machine: Any
) -> None:
    settings.FLEET_ENVIRONMENT = "emulator"  # plain http on loopback
    time_machine.move_to("2026-11-27T12:00:05Z", tick=False)  # one minute, however slow
    before = rows()
    records_before = len(log_records.records)
    body = b'{"schemas": ["' + USER_SCHEMA.encode() + b'"], "userName": "eve"}'

    statuses: Counter[int] = Counter()
    with requests.Session() as http:
        for number in range(FLOOD):
            headers = {"Authorization": f"Bearer scim_guess{number}_x"} if number % 2 else {}
            answer = http.post(
                f"{live_server.url}/scim/v2/Users", data=body, headers=headers, timeout=30
            )
            statuses[answer.status_code] += 1

    minutes = list(ScimMinute.objects.order_by("minute"))
    assert minutes, "the refusals are counted"
    assert {minute.who for minute in minutes} == {"address:127.0.0.1"}
    assert set(statuses) <= {401, 429}
    assert statuses[401] == sum(min(m.count, settings.SCIM_REQUESTS_PER_MINUTE) for m in minutes)
    assert statuses[429] == FLOOD - statuses[401] > 0
    assert not ScimCall.objects.exists()
    written = rows() - before
    assert written == len(minutes) == 1, (written, minutes)
    # The portal's lines as its handlers write them (INFO and up), not the client's.
    lines = [
        log_records.format(record)
        for record in log_records.records[records_before:]
        if record.levelno >= logging.INFO and not record.name.startswith("urllib3")
    ]
    assert len(lines) == 1, lines[:5]
    assert "SCIM refused POST /scim/v2/Users from 127.0.0.1 (401)" in lines[0]
    print(f"\n{FLOOD} requests: {dict(statuses)}; rows written {written}; log lines {len(lines)}")
