"""A manager's webhook endpoint that never answers, or drips its answer, against a real
`manage.py db_worker` (started as the README says, with no option): fines sent by the
emulator meanwhile are processed while it holds a POST, other managers' alerts still go
out, and a stop does not wait on the subscriber. The subscribers are real sockets on
loopback (bench/soak_subscribers.py)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from alerts.models import Alert, AlertStatus
from alerts.services.subscriptions import webhook_subscription_create
from bench.soak_subscribers import HostileServer, dripping_head, never_answering
from fleet.models import Fine, WebhookDelivery
from tests.alerts.conftest import fine
from tests.alerts.receiver import Receiver, serve
from tests.conftest import start_db_worker, stop_db_worker, wait_until

pytestmark = pytest.mark.django_db(transaction=True)

# Longer than any test here: a POST its subscriber holds stays under way to the end.
HELD_S = 600


def worker_env(live_server: Any, **more: str) -> dict[str, str]:
    return {
        # The key the subscriptions' secrets were encrypted with, here.
        "FLEET_FIELD_KEYS": ",".join(django_settings.FLEET_FIELD_KEYS),
        "PORTAL_BASE_URL": live_server.url,
        "FLEET_WEBHOOK_BATCH_SECONDS": "0",
        "ALERTS_WEBHOOK_ALLOW_PRIVATE": "true",  # the subscribers are on loopback
    } | more


def send_fines(emulator: Any, live_server: Any, numbers: range) -> None:
    """The emulator posts these fines to the live portal's webhook receiver, four at once."""
    receiver = f"{live_server.url}/webhooks/fleet/dev-webhook-token/"
    events = [fine(n) for n in numbers]
    emulator.control("POST", "webhooks", url=receiver, events=events, concurrency=4)


def subscribed(person: Any, name: str, url: str) -> Any:
    user = person(name, delivery="off")  # webhooks only
    webhook_subscription_create(user=user, url=url)
    return user


def assert_no_task_failed() -> None:
    """The two queues' workers wrote the one SQLite file at once: no task met "database is
    locked" (nor anything else)."""
    ended = DBTaskResult.objects.filter(finished_at__isnull=False)
    assert not ended.exclude(status=TaskResultStatus.SUCCESSFUL).exists()


@pytest.fixture(autouse=True)
def loopback_subscribers(settings: Any) -> None:
    settings.ALERTS_WEBHOOK_ALLOW_PRIVATE = True


@pytest.fixture(params=["never answers", "drips"])
def stalling(request: pytest.FixtureRequest) -> Iterator[HostileServer]:
    subscriber = HostileServer(
        never_answering(hold=HELD_S)
        if request.param == "never answers"
        else dripping_head(every=0.5, longest=HELD_S)
    )
    yield subscriber
    subscriber.stop()


def test_fines_are_processed_while_a_subscriber_holds_the_alerts_post(
    stalling, person, emulator, live_server
):
    subscribed(person, "marcos", stalling.url())
    # The POST is held for as long as the test runs: "on time" is "while it is held",
    # which no machine's speed changes (how fast is a benchmark's business).
    worker = start_db_worker(
        emulator, **worker_env(live_server, ALERTS_WEBHOOK_TIMEOUT=str(HELD_S))
    )
    try:
        # A few fines first: their alerts' POSTs are under way, held by the subscriber.
        send_fines(emulator, live_server, range(1, 6))
        wait_until(lambda: stalling.connections >= 1, timeout=20, what="no POST to it")

        send_fines(emulator, live_server, range(6, 106))
        processed_in = wait_until(
            lambda: (
                Fine.objects.count() == 105
                and not WebhookDelivery.objects.filter(status="received").exists()
            ),
            timeout=120,
            what="the 100 fines were not processed",
        )
    finally:
        stalling.stop()  # first: the worker's POST under way ends, and so does the worker
        stop_db_worker(worker)

    print(f"100 fines processed in {processed_in:.2f} s while the subscriber held a POST")
    # Their alerts wait for the subscriber (none lost): one per fine.
    assert Alert.objects.count() == 105
    assert_no_task_failed()


def test_a_subscriber_that_never_answers_does_not_hold_other_managers_alerts(
    person, emulator, live_server
):
    silent = HostileServer(never_answering(hold=HELD_S))
    healthy = Receiver()
    server = serve(healthy)
    subscribed(person, "marcos", silent.url())
    ana = person("ana", delivery="off")
    _, healthy.secret = webhook_subscription_create(user=ana, url=healthy.url)
    # Longer than the test: a POST held by the silent one ends only with the worker.
    worker = start_db_worker(
        emulator, **worker_env(live_server, ALERTS_WEBHOOK_TIMEOUT=str(HELD_S))
    )
    try:
        send_fines(emulator, live_server, range(1, 21))
        wait_until(
            lambda: len(healthy.accepted()) == 20,
            timeout=120,
            what="ana's receiver did not get her 20 alerts",
        )
        assert silent.connections == 1  # marcos's first alert, still held
    finally:
        silent.stop()
        stop_db_worker(worker)
        server.shutdown()
        server.server_close()

    assert [d.verdict for d in healthy.deliveries] == ["accepted"] * 20
    assert_no_task_failed()


def test_a_stop_ends_the_alerts_run_after_the_post_under_way(person, emulator, live_server):
    silent = HostileServer(never_answering(hold=HELD_S))
    subscribed(person, "marcos", silent.url())
    worker = start_db_worker(emulator, **worker_env(live_server, ALERTS_WEBHOOK_TIMEOUT="3"))
    try:
        send_fines(emulator, live_server, range(1, 6))
        wait_until(lambda: silent.connections >= 1, timeout=20, what="no POST to it")
        worker.send_signal(signal.SIGTERM)
        # Ten times the POST's deadline (3 s), a twentieth of the subscriber's hold.
        wait_until(lambda: worker.poll() is not None, timeout=30, what="still running")
    finally:
        stop_db_worker(worker)
        silent.stop()

    assert worker.returncode == 0
    # The POST under way timed out and waits for its retry; the others were not tried.
    statuses = sorted(Alert.objects.values_list("status", "attempts"))
    assert statuses == [(AlertStatus.PENDING, 0)] * 4 + [(AlertStatus.PENDING, 1)]
    assert silent.connections == 1
