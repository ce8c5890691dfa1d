"""A database another process holds (SQLite's one writer, for longer than its 5 s wait:
`fine_tallies --rebuild`, a long import, a shell) makes the worker wait and go on, never
exit, and no delivery received meanwhile is lost or kept as failed.

Real processes on the test database: one holds SQLite's write lock until the test lets
go, which it does once the worker has said twice that it waits; nothing here waits for a
time to pass."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
from typing import Any

import pytest
from django.db import connection

from fleet.models import DeliveryStatus, Fine, WebhookDelivery
from fleet.webhooks.processing import deliveries_process_received
from portal.lib import worker
from tests.conftest import _database_url, start_db_worker_into, stop_db_worker, wait_until

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "sqlite",
        reason="SQLite's lock: a PostgreSQL writer waits for the row it needs, it is not refused",
    ),
    pytest.mark.timeout(300),
]

WEBHOOK = "/webhooks/fleet/dev-webhook-token/"
# Holds SQLite's write lock (as a rebuild's transaction does) from "held" until a line
# comes on its input.
_HOLDER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=60, isolation_level=None)
db.execute("BEGIN IMMEDIATE")
db.execute("CREATE TABLE IF NOT EXISTS held_by_the_test (x)")
print("held", flush=True)
sys.stdin.readline()
db.execute("ROLLBACK")
print("released", flush=True)
"""


class Holder:
    """Another process holding the database's write lock, until `release`."""

    def __init__(self) -> None:
        path = _database_url().removeprefix("sqlite:///")
        self.process = subprocess.Popen(
            [sys.executable, "-c", _HOLDER, path],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        assert self.process.stdout.readline().strip() == "held"

    def release(self) -> None:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write("go\n")
        self.process.stdin.flush()
        assert self.process.stdout.readline().strip() == "released"
        assert self.process.wait(timeout=30) == 0

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def store(client: Any, number: int) -> None:
    payload = {"frame": {"id": number, "treated": False, "carPlate": "ABC1D23"}, "link": None}
    response = client.post(WEBHOOK, data=json.dumps(payload), content_type="application/json")
    assert response.status_code == 202, response.content


def test_the_worker_waits_out_a_database_held_elsewhere_and_processes_afterwards(
    client, emulator, fleet_settings
):
    fleet_settings.FLEET_WEBHOOK_BATCH_SECONDS = 600  # the receiver's own run: asked below
    output: list[str] = []
    process = start_db_worker_into(output, emulator, worker_id="busy-database")
    holder = Holder()
    try:
        # The worker's next look for a task meets the lock, and again after its wait.
        wait_until(
            lambda: len(waits(output)) >= 2 or process.poll() is not None,
            timeout=120,
            what="the worker did not say twice that it waits for the database",
        )
        assert process.poll() is None, "the worker exited:\n" + "".join(output)
        holder.release()
        store(client, 1)
        worker.enqueue("webhook_deliveries_process")
        wait_until(
            lambda: Fine.objects.filter(external_id="1").exists(),
            timeout=60,
            what="the worker did not process the fine once the database was free",
        )
        assert process.poll() is None, "\n".join(output)
    finally:
        holder.kill()
        stop_db_worker(process)
    busy = waits(output)
    assert "(database is locked)" in busy[0]
    assert busy[0].endswith("tries again in 0.5 s")
    assert busy[1].endswith("tries again in 1.0 s")  # each wait twice the one before


def waits(output: list[str]) -> list[str]:
    """What the worker of the default queue said of its waits (that of the alerts' queue
    waits too)."""
    return [
        line.strip()
        for line in output
        if "the database is busy" in line and "worker busy-database tries" in line
    ]


def test_a_processing_run_that_meets_a_held_database_waits_and_loses_nothing(
    client, emulator, fleet_settings
):
    """The task's own run (`worker.while_busy`): its batch is refused, no delivery is kept
    as failed, and once the database is free the same run processes them all."""
    fleet_settings.FLEET_WEBHOOK_BATCH_SECONDS = 600
    for number in (1, 2, 3):
        store(client, number)
    waited = threading.Event()

    class Waits(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "the database is busy" in record.getMessage():
                waited.set()

    handler = Waits()
    logging.getLogger("portal.lib.worker").addHandler(handler)
    holder = Holder()
    outcomes: list[Any] = []
    run = threading.Thread(
        target=lambda: outcomes.append(
            worker.while_busy(deliveries_process_received, what="the test's run")
        )
    )
    try:
        run.start()
        assert waited.wait(timeout=120), "the run did not meet the held database"
        assert set(WebhookDelivery.objects.values_list("status", flat=True)) == {
            DeliveryStatus.RECEIVED
        }
        holder.release()
        run.join(timeout=120)
        assert not run.is_alive()
    finally:
        holder.kill()
        logging.getLogger("portal.lib.worker").removeHandler(handler)
    assert outcomes == [{DeliveryStatus.PROCESSED: 3}]
    assert Fine.objects.count() == 3
