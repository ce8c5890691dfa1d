"""Several worker processes sharing one cache (Redis): one API call, one pause for all.

These need a cache that processes share, so they run in the Redis leg
(`CACHE_URL=redis://…`); with the local-memory cache each process has its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

import pytest
from django.conf import settings

from fleet.services.vehicles import FleetDataUnavailable, vehicle_search
from tests.conftest import ROOT, Emulator
from tests.services.conftest import LIST_CARS

pytestmark = pytest.mark.skipif(
    "locmem" in settings.CACHES["default"]["BACKEND"],
    reason="needs a cache shared by processes: run with CACHE_URL=redis://…",
)

# One worker: from `start_at` (wall clock), ask for the vehicle page; print what it got.
_WORKER = """
import json, sys, time
import django
django.setup()
from django.conf import settings
settings.FLEET_BASE_URL = sys.argv[1]
from fleet.services.vehicles import FleetDataUnavailable, vehicle_search
time.sleep(max(0.0, float(sys.argv[2]) - time.time()))
try:
    page = vehicle_search()
    print(json.dumps({"fleet_total": page.fleet_total, "stale": page.freshness.stale}))
except FleetDataUnavailable as error:
    print(json.dumps({"outcome": error.outcome, "retry_after": error.retry_after}))
"""


def run_workers(count: int, emulator: Emulator, *, start_in: float = 2.0) -> list[dict[str, Any]]:
    """`count` worker processes asking at the same moment; what each one got."""
    environment = dict(os.environ, DJANGO_SETTINGS_MODULE="tests.settings")
    start_at = str(time.time() + start_in)
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, emulator.url, start_at],
            cwd=ROOT,
            env=environment,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(count)
    ]
    outputs = [worker.communicate(timeout=60)[0] for worker in workers]
    return [json.loads(output.strip().splitlines()[-1]) for output in outputs]


def test_worker_processes_on_a_cold_cache_make_exactly_one_api_call(
    fleet_settings: Any, emulator: Emulator
) -> None:
    emulator.fault("/key/list-cars", delay=1.0)

    results = run_workers(4, emulator)

    assert results == [{"fleet_total": 200, "stale": False}] * 4
    assert emulator.calls(LIST_CARS) == 1


def test_a_retry_after_met_by_one_worker_pauses_the_others(
    fleet_settings: Any, emulator: Emulator
) -> None:
    emulator.fault("/key/list-cars", status=429, retry_after=30)
    with pytest.raises(FleetDataUnavailable):
        vehicle_search()

    results = run_workers(2, emulator, start_in=0)

    assert [r["outcome"] for r in results] == ["rate_limited"] * 2
    assert all(20 < r["retry_after"] <= 30 for r in results)
    assert emulator.calls(LIST_CARS) == 1
