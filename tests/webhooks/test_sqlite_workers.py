"""Several worker processes receiving at once into one SQLite file: every delivery is
stored and processed, none meets "database is locked" (writers queue on a file lock)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import ROOT

# One worker: from `start_at`, receive `count` deliveries on 4 threads; print the statuses.
_WORKER = """
import json, sys, time
from concurrent.futures import ThreadPoolExecutor
import django
django.setup()
from django.db import connection
from fleet.services.webhooks import delivery_receive
worker, count, start_at = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])

def receive(number):
    payload = {"frame": {"id": worker * 10_000 + number, "treated": False}}
    try:
        delivery = delivery_receive(
            body=json.dumps(payload).encode(), content_type="application/json",
            headers={}, source_address="127.0.0.1",
        )
        return delivery.status
    finally:
        connection.close()

time.sleep(max(0.0, start_at - time.time()))
with ThreadPoolExecutor(4) as pool:
    print(json.dumps(list(pool.map(receive, range(count)))))
"""


def environment(database: Path) -> dict[str, str]:
    return dict(
        os.environ, DJANGO_SETTINGS_MODULE="tests.settings", DATABASE_URL=f"sqlite:///{database}"
    )


def test_workers_writing_one_sqlite_file_lose_nothing(tmp_path):
    database = tmp_path / "portal.sqlite3"
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--no-input", "-v", "0"],
        cwd=ROOT, env=environment(database), check=True, timeout=120,
    )  # fmt: skip
    start_at = str(time.time() + 2)
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, str(number), "60", start_at],
            cwd=ROOT,
            env=environment(database),
            stdout=subprocess.PIPE,
            text=True,
        )
        for number in range(3)
    ]
    statuses = [json.loads(worker.communicate(timeout=100)[0]) for worker in workers]

    assert [set(worker) for worker in statuses] == [{"processed"}] * 3
    assert (tmp_path / "portal.sqlite3.writer-lock").exists()
