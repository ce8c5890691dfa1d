"""Several worker processes receiving at once into one SQLite file, each then processing
what is stored while the others still receive: every delivery is stored and processed
exactly once, and none meets "database is locked" (SQLite's busy timeout and
IMMEDIATE transactions queue the writers)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import ROOT

# One worker: from `start_at`, receive `count` deliveries on 4 threads, then process
# whatever is `received` (other workers may still be storing); print what it saw.
_WORKER = """
import json, sys, time
from concurrent.futures import ThreadPoolExecutor
import django
django.setup()
from django.db import connection
from fleet.models import WebhookDelivery
from fleet.webhooks.receive import delivery_receive
from fleet.webhooks.processing import deliveries_process_received
worker, count, start_at = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])

def receive(number):
    payload = {"frame": {"id": worker * 10_000 + number, "treated": False}}
    try:
        return delivery_receive(
            body=json.dumps(payload).encode(), content_type="application/json",
            headers={}, source_address="127.0.0.1",
        ).pk
    finally:
        connection.close()

time.sleep(max(0.0, start_at - time.time()))
with ThreadPoolExecutor(4) as pool:
    ids = list(pool.map(receive, range(count)))
processed = sum(deliveries_process_received(batch=25).values())
print(json.dumps({"ids": ids, "processed": processed}))
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
    reports = [json.loads(worker.communicate(timeout=100)[0]) for worker in workers]
    script = (
        "from fleet.models import WebhookDelivery, Fine\n"
        "print(sorted(set(WebhookDelivery.objects.values_list('status', flat=True))),"
        " WebhookDelivery.objects.count(), Fine.objects.count())"
    )
    state = subprocess.run(
        [sys.executable, "manage.py", "shell", "-v", "0", "-c", script],
        cwd=ROOT, env=environment(database), check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip

    ids = [pk for report in reports for pk in report["ids"]]
    assert len(set(ids)) == len(ids) == 180
    # Each delivery processed once, by whichever worker's run took it first.
    assert sum(report["processed"] for report in reports) == 180
    assert state == "['processed'] 180 180"
