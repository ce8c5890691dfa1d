"""Several worker processes sharing one cache (Redis): one API call, one pause for all.

These need a cache that processes share, so they run in the Redis leg
(`CACHE_URL=redis://…`); with the local-memory cache each process has its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from fleet.services.vehicles import FleetDataUnavailable, vehicle_search
from tests.conftest import ROOT, Emulator, wait_until
from tests.services.conftest import LIST_CARS

pytestmark = pytest.mark.skipif(
    "locmem" in settings.CACHES["default"]["BACKEND"],
    reason="needs a cache shared by processes: run with CACHE_URL=redis://…",
)

# One worker process: says it is ready, waits for the go, asks for the vehicle page and
# prints what it got. The processes meet at files in a folder (argv[2]): the one that takes
# the refresh lock calls the API only once the folder holds `fetch`, and each that finds the
# lock taken says so, so that the test can let the call go once every other one waits.
_WORKER = """
import json, os, pathlib, sys, time
import django
django.setup()
from django.conf import settings
from django.core.cache import caches
settings.FLEET_BASE_URL = sys.argv[1]
meeting = pathlib.Path(sys.argv[2])
from fleet.services.connection import fleet_cache_scope
from fleet.services.vehicle_cache import CacheKeys
from fleet.services.vehicles import FleetDataUnavailable, vehicle_search

def wait_for(name):
    deadline = time.monotonic() + 60
    while not (meeting / name).exists():
        if time.monotonic() > deadline:
            sys.exit(f"{name} never came")
        time.sleep(0.01)

lock = CacheKeys(fleet_cache_scope()).lock
backend = type(caches["default"])
add = backend.add
def watched_add(self, key, *args, **kwargs):
    taken = add(self, key, *args, **kwargs)
    if key == lock:
        if taken:
            wait_for("fetch")
        else:
            (meeting / f"refused-{os.getpid()}").touch()
    return taken
backend.add = watched_add

(meeting / f"ready-{os.getpid()}").touch()
wait_for("go")
try:
    page = vehicle_search()
    print(json.dumps({"fleet_total": page.fleet_total, "stale": page.freshness.stale}))
except FleetDataUnavailable as error:
    print(json.dumps({"outcome": error.outcome, "retry_after": error.retry_after}))
"""


def run_workers(
    count: int, emulator: Emulator, meeting: Path, *, contended: bool = True
) -> list[dict[str, Any]]:
    """`count` worker processes asking at once; what each one got. `contended`: one takes
    the refresh lock, and is held until every other has found it taken."""
    # Those that find the lock taken wait a minute for the result, not 5 s: a slow day.
    environment = dict(
        os.environ, DJANGO_SETTINGS_MODULE="tests.settings", FLEET_VEHICLES_WAIT="60"
    )
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, emulator.url, str(meeting)],
            cwd=ROOT,
            env=environment,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(count)
    ]
    try:
        wait_until(
            lambda: len(list(meeting.glob("ready-*"))) == count, timeout=60, what="workers ready"
        )
        (meeting / "go").touch()
        if contended:
            wait_until(
                lambda: len(list(meeting.glob("refused-*"))) == count - 1,
                timeout=60,
                what="the other workers finding the lock taken",
            )
        (meeting / "fetch").touch()
        outputs = [worker.communicate(timeout=60)[0] for worker in workers]
    finally:
        for worker in workers:
            worker.kill()
    return [json.loads(output.strip().splitlines()[-1]) for output in outputs]


def test_worker_processes_on_a_cold_cache_make_exactly_one_api_call(
    fleet_settings: Any, emulator: Emulator, tmp_path: Path
) -> None:
    results = run_workers(4, emulator, tmp_path)

    assert results == [{"fleet_total": 200, "stale": False}] * 4
    assert emulator.calls(LIST_CARS) == 1


def test_a_retry_after_met_by_one_worker_pauses_the_others(
    fleet_settings: Any, emulator: Emulator, tmp_path: Path
) -> None:
    emulator.fault("/key/list-cars", status=429, retry_after=300)
    with pytest.raises(FleetDataUnavailable):
        vehicle_search()

    results = run_workers(2, emulator, tmp_path, contended=False)  # none may call

    assert [r["outcome"] for r in results] == ["rate_limited"] * 2
    assert all(200 < r["retry_after"] <= 300 for r in results)  # the pause, less its start
    assert emulator.calls(LIST_CARS) == 1
