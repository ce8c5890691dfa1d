"""After the receiver: stored deliveries are processed by the background worker, in
batches, each delivery with the effect it would have alone."""

from __future__ import annotations

import json
import threading
from datetime import timedelta
from typing import Any

import pytest
import time_machine
from django.db import connection, transaction
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from fleet import tasks
from fleet.models import DeliveryStatus, Fine, Notification, WebhookDelivery
from fleet.services.tallies import fine_tallies_differences
from fleet.webhooks.processing import deliveries_process_received, delivery_replay
from fleet.webhooks.receive import delivery_receive
from tests.conftest import run_tasks, wait_until

URL = "/webhooks/fleet/dev-webhook-token/"
TASK = "fleet.tasks.webhook_deliveries_process"


def post(client, payload) -> None:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    assert client.post(URL, data=body, content_type="application/json").status_code == 202


def processing_runs() -> list[DBTaskResult[Any, Any]]:
    return list(DBTaskResult.objects.filter(task_path=TASK).order_by("run_after"))


@pytest.mark.django_db(transaction=True)
def test_the_worker_processes_what_was_stored_once_the_batch_is_due(client, settings):
    settings.FLEET_WEBHOOK_BATCH_SECONDS = 5
    with time_machine.travel(timezone.now(), tick=False) as clock:
        asked_at = timezone.now()
        for number in range(1, 6):
            post(client, {"frame": {"id": number, "treated": False}})
        post(client, {"notification": {"id": 1, "treated": False}})
        post(client, b"{not json")

        # One run asked for, for the whole interval, due when the interval ends.
        (run,) = processing_runs()
        assert run.run_after == asked_at + timedelta(seconds=5)
        assert run_tasks() == 0
        assert set(WebhookDelivery.objects.values_list("status", flat=True)) == {"received"}

        clock.shift(5)
        assert run_tasks() == 1

    statuses = sorted(WebhookDelivery.objects.values_list("status", flat=True))
    assert statuses == ["invalid"] + ["processed"] * 6
    assert Fine.objects.count() == 5
    assert Notification.objects.count() == 1
    assert DBTaskResult.objects.get(task_path=TASK).return_value == {
        DeliveryStatus.PROCESSED: 6,
        DeliveryStatus.INVALID: 1,
    }


@pytest.mark.django_db(transaction=True)
def test_with_no_wait_every_delivery_asks_for_a_run_due_at_once(client, settings):
    settings.FLEET_WEBHOOK_BATCH_SECONDS = 0

    post(client, {"frame": {"id": 1, "treated": False}})
    post(client, {"frame": {"id": 1, "treated": True}})

    assert len(processing_runs()) == 2
    assert run_tasks() == 2
    assert Fine.objects.get().treated is True
    assert set(WebhookDelivery.objects.values_list("status", flat=True)) == {"processed"}


@pytest.mark.django_db(transaction=True)
def test_a_nul_character_in_a_fines_text_does_not_keep_it_from_being_written(client, settings):
    settings.FLEET_WEBHOOK_BATCH_SECONDS = 0
    raw = rb'{"frame": {"id": 7, "treated": false, "description": "Avan\u00e7ar\u0000 sinal"}}'

    post(client, raw)
    run_tasks()

    assert WebhookDelivery.objects.get().status == DeliveryStatus.PROCESSED
    assert bytes(WebhookDelivery.objects.get().body) == raw  # as received, NUL and all
    assert Fine.objects.get().description == "Avançar sinal"


@pytest.mark.django_db(transaction=True)
def test_a_run_out_of_time_asks_for_its_sequel_which_finishes_the_work(client, settings):
    settings.FLEET_WEBHOOK_BATCH_SECONDS = 3600  # no run asked for by the receiver after the first
    for number in range(1, 8):
        post(client, {"frame": {"id": number, "treated": False}})
    DBTaskResult.objects.all().delete()

    assert deliveries_process_received(batch=3, budget_s=0) == {}

    assert len(processing_runs()) == 1  # the sequel, due at once
    assert run_tasks() == 1
    assert Fine.objects.count() == 7


@pytest.mark.django_db
def test_a_batch_processes_in_arrival_order_and_one_failure_keeps_the_others(client):
    post(client, {"frame": {"id": 1, "treated": False, "description": "first"}})
    post(client, {"frame": {"id": 1, "treated": True, "description": "then"}})  # no time: order
    post(client, {"frame": {"id": 2}})  # treated missing: invalid, the batch goes on
    post(client, {"frame": {"id": 3, "treated": False}})

    outcomes = deliveries_process_received(batch=2)

    assert outcomes == {DeliveryStatus.PROCESSED: 3, DeliveryStatus.INVALID: 1}
    first = Fine.objects.get(external_id="1")
    assert (first.treated, first.payload["description"]) == (True, "then")
    assert [entry["treated"] for entry in first.treated_history] == [False, True]
    assert Fine.objects.filter(external_id="3").exists()
    assert deliveries_process_received() == {}  # nothing left: a second run changes nothing


@pytest.mark.django_db(transaction=True)
def test_threads_storing_at_the_same_moment_each_get_their_own_delivery():
    count, threads = 25, 8
    ids: dict[int, list[int]] = {}
    start = threading.Barrier(threads)

    def store(worker: int) -> None:
        start.wait()
        try:
            ids[worker] = [
                delivery_receive(
                    body=json.dumps({"frame": {"id": worker * 100 + number}}).encode(),
                    content_type="application/json",
                    headers={},
                    source_address=None,
                ).pk
                for number in range(count)
            ]
        finally:
            connection.close()

    workers = [threading.Thread(target=store, args=(n,)) for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()

    stored = dict(WebhookDelivery.objects.values_list("pk", "body"))
    assert len(stored) == count * threads
    for number_of_thread, mine in ids.items():
        assert [json.loads(bytes(stored[pk]))["frame"]["id"] for pk in mine] == [
            number_of_thread * 100 + number for number in range(count)
        ]


@pytest.mark.django_db(transaction=True)
def test_a_replay_of_a_delivery_a_batch_holds_waits_for_the_batch_and_neither_fails(client):
    """A worker's batch holds its deliveries' rows, then locks their records; a replay of
    one of them in between waits for the batch instead of holding the record the batch
    then waits for (a deadlock: PostgreSQL would undo one and the delivery be kept as
    failed)."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks are PostgreSQL's; SQLite has one writer at a time")
    post(client, {"frame": {"id": 1, "treated": False}})
    deliveries_process_received()
    post(client, {"frame": {"id": 1, "treated": True}})
    delivery = WebhookDelivery.objects.get(status=DeliveryStatus.RECEIVED)
    replay: dict[str, Any] = {}
    started = threading.Barrier(2)

    def replay_it() -> None:
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid()")
                (replay["backend"],) = cursor.fetchone()
            started.wait()
            replay["outcomes"] = delivery_replay(ids=[delivery.pk])
        finally:
            started.abort()  # the batch does not wait for a replay that failed to start
            connection.close()

    def replay_waits_for_the_batch() -> bool:
        with connection.cursor() as cursor:  # the lock table as it is now, in a transaction too
            cursor.execute(
                "SELECT pg_backend_pid() = ANY(pg_blocking_pids(%s))", [replay["backend"]]
            )
            return bool(cursor.fetchone()[0])

    replaying = threading.Thread(target=replay_it)
    replaying.start()
    try:
        with transaction.atomic():
            # The batch's first statement (its deliveries), taken here so that the replay
            # runs between it and the next (the records).
            WebhookDelivery.objects.select_for_update().filter(pk=delivery.pk).exists()
            started.wait()
            wait_until(replay_waits_for_the_batch, what="the replay never waited for the batch")
            outcomes = deliveries_process_received()
    finally:
        started.abort()  # the replay does not wait for a batch that failed to start
        replaying.join()

    assert outcomes == {DeliveryStatus.PROCESSED: 1}
    assert replay.get("outcomes") == {DeliveryStatus.PROCESSED: 1}
    delivery.refresh_from_db()
    assert (delivery.status, delivery.error, delivery.attempts) == ("processed", "", 2)
    assert Fine.objects.get().treated is True
    assert fine_tallies_differences() == {}


@pytest.mark.django_db(transaction=True)  # SQLite alters a table outside transactions only
def test_when_the_transaction_fails_the_delivery_is_not_stored_and_the_sender_is_told(client):
    table = WebhookDelivery._meta.db_table
    with connection.schema_editor() as editor:
        editor.alter_db_table(WebhookDelivery, table, f"{table}_elsewhere")
    try:
        response = client.post(URL, data=b'{"frame": {}}', content_type="application/json")
    finally:
        with connection.schema_editor() as editor:
            editor.alter_db_table(WebhookDelivery, f"{table}_elsewhere", table)

    assert response.status_code == 503
    assert response["Retry-After"] == "30"
    assert not WebhookDelivery.objects.exists()


@pytest.mark.django_db(transaction=True)  # SQLite alters a table outside transactions only
def test_when_the_database_refuses_one_delivery_of_a_batch_only_that_one_is_kept(client, caplog):
    post(client, {"frame": {"id": 1, "treated": False}})
    post(client, {"notification": {"id": 1, "treated": False}})
    post(client, {"frame": {"id": 2, "treated": False}})
    table = Notification._meta.db_table
    with connection.schema_editor() as editor:
        editor.alter_db_table(Notification, table, f"{table}_elsewhere")
    try:
        outcomes = deliveries_process_received()
    finally:
        with connection.schema_editor() as editor:
            editor.alter_db_table(Notification, f"{table}_elsewhere", table)

    assert outcomes == {DeliveryStatus.PROCESSED: 2, DeliveryStatus.FAILED: 1}
    assert Fine.objects.count() == 2
    failed = WebhookDelivery.objects.get(status="failed")
    assert failed.kind == "notification"
    assert table in failed.error
    assert "processing them one at a time" in caplog.text
    assert caplog.text.count(f"webhook delivery {failed.pk} kept as failed") == 1


@pytest.mark.django_db(transaction=True)
def test_processing_runs_older_than_an_hour_are_deleted_by_a_later_run(client, settings):
    settings.FLEET_WEBHOOK_BATCH_SECONDS = 0
    post(client, {"frame": {"id": 1, "treated": False}})
    assert run_tasks() == 1
    (old,) = processing_runs()
    DBTaskResult.objects.filter(pk=old.pk).update(
        finished_at=timezone.now() - timedelta(hours=1, minutes=1)
    )
    tasks._pruned.reset()  # the last pruning of this process is long past

    post(client, {"frame": {"id": 2, "treated": False}})
    assert run_tasks() == 1

    (kept,) = processing_runs()
    assert kept.pk != old.pk
    assert kept.status == "SUCCESSFUL"
    assert Fine.objects.count() == 2


# Every case a batch must order right: a record made and updated in the same batch, the
# same body twice (of a creation and of an update), an older event after a newer one, a
# record without an id, an update of a record made before the batch, a notification,
# an invalid delivery and an unknown kind between them.
_MIXED = [
    {"frame": {"id": 9, "treated": False, "updatedAt": "2026-11-20T09:00:00Z"}},  # before
    {"frame": {"id": 1, "treated": False, "updatedAt": "2026-11-20T10:00:00Z"}},
    {"frame": {"id": 1, "treated": False, "updatedAt": "2026-11-20T10:00:00Z"}},  # again
    {"frame": {"id": 1, "treated": True, "updatedAt": "2026-11-20T12:00:00Z"}},
    {
        "frame": {
            "id": 1,
            "treated": False,
            "updatedAt": "2026-11-20T11:00:00Z",
            "linkFrame": "https://a.example/1.pdf",
        }
    },
    {"frame": {"id": 9, "treated": True, "updatedAt": "2026-11-20T13:00:00Z"}},
    {"frame": {"id": 1, "treated": True, "updatedAt": "2026-11-20T12:00:00Z"}},  # again
    {"frame": {"carPlate": "ABC1D23", "autoInfracao": "X1", "treated": False}},
    {"frame": {"carPlate": "ABC1D23", "autoInfracao": "X1", "treated": True}},
    {"notification": {"id": 1, "treated": False, "title": "Aviso"}},
    {"frame": {"id": 2, "treated": None}},
    {"parking": {"id": 1}},
    {"notification": {"id": 1, "treated": True, "title": "Aviso"}},
]


def _outcome() -> dict[str, Any]:
    """What processing left, without ids or times: deliveries by position."""
    position = {
        pk: n
        for n, pk in enumerate(WebhookDelivery.objects.order_by("pk").values_list("pk", flat=True))
    }

    def record(r: Fine | Notification) -> tuple[Any, ...]:
        history = [(e["treated"], e["at"], position[e["delivery"]]) for e in r.treated_history]
        link = getattr(r, "link_frame", None)
        return (r.key, r.treated, r.payload, r.source_updated_at, link, history)

    return {
        "deliveries": [
            (
                d.status,
                d.kind,
                d.error,
                position.get(d.duplicate_of_id or 0),
                d.attempts,
                bool(d.fine_id),
                bool(d.notification_id),
            )
            for d in WebhookDelivery.objects.order_by("pk")
        ],
        "fines": sorted(record(f) for f in Fine.objects.all()),
        "notifications": sorted(record(n) for n in Notification.objects.all()),
    }


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("batch", [64, 5])
def test_a_batch_ends_as_processing_one_delivery_at_a_time_would(client, batch):
    def run(batch: int) -> dict[str, Any]:
        WebhookDelivery.objects.all().delete()
        Fine.objects.all().delete()
        Notification.objects.all().delete()
        post(client, _MIXED[0])
        assert deliveries_process_received(batch=1) == {DeliveryStatus.PROCESSED: 1}
        for payload in _MIXED[1:]:
            post(client, payload)
        deliveries_process_received(batch=batch)
        return _outcome()

    one_at_a_time, batched = run(1), run(batch)

    assert batched == one_at_a_time
    statuses = [delivery[0] for delivery in batched["deliveries"]]
    assert statuses.count("duplicate") == 2
    assert statuses.count("invalid") == 1
    assert statuses.count("unknown_kind") == 1
    fine_1 = next(fine for fine in batched["fines"] if fine[0] == "id:1")
    assert fine_1[1:2] == (True,)  # the newest event's state; the older one only in history
    assert fine_1[4] == "https://a.example/1.pdf"
