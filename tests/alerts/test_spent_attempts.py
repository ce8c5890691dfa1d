"""An alert whose sending kills the worker (or outlives its lease) is claimed again after
each lease, each claim an attempt: once ALERTS_MAX_ATTEMPTS are spent, the next claim
marks it failed, says why, and sends nothing, whatever stopped the workers before."""

from __future__ import annotations

import signal
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.conf import settings as django_settings
from django.utils import timezone

from alerts.models import Alert, AlertChannel, AlertStatus, WebhookAttempt
from alerts.services.outbox import alerts_send_soon
from alerts.services.subscriptions import webhook_subscription_create
from bench.soak_subscribers import HostileServer, never_answering
from tests.alerts.conftest import fine, post
from tests.alerts.receiver import Receiver, serve
from tests.conftest import run_tasks, start_db_worker, stop_db_worker, wait_until
from tests.mail import text_of

pytestmark = pytest.mark.django_db(transaction=True)

LEASE_S = 2
GIVEN_UP = "given up after attempt {n}, which never ended: the worker stopped"


@pytest.fixture
def silent(settings) -> Iterator[HostileServer]:
    settings.ALERTS_WEBHOOK_ALLOW_PRIVATE = True
    subscriber = HostileServer(never_answering())
    yield subscriber
    subscriber.stop()


def test_an_alert_whose_sending_killed_the_worker_is_not_sent_again_once_its_attempts_are_spent(
    client, person, emulator, silent
):
    webhook_subscription_create(user=person("marcos", delivery="off"), url=silent.url())
    env = {
        "FLEET_FIELD_KEYS": ",".join(django_settings.FLEET_FIELD_KEYS),  # the secrets' key here
        "PORTAL_BASE_URL": "https://portal.example",
        "FLEET_WEBHOOK_BATCH_SECONDS": "0",
        "ALERTS_WEBHOOK_ALLOW_PRIVATE": "true",
        "ALERTS_WEBHOOK_TIMEOUT": "60",  # the POST is under way when the worker dies
        "ALERTS_SEND_LEASE_SECONDS": str(LEASE_S),
        "ALERTS_MAX_ATTEMPTS": "1",
    }
    doomed = start_db_worker(emulator, worker_id="doomed", **env)
    try:
        post(client, fine(1))
        wait_until(lambda: silent.connections == 1, timeout=20, what="no POST")
        doomed.send_signal(signal.SIGKILL)  # as if sending it had killed the worker
        doomed.wait(10)
    finally:
        stop_db_worker(doomed)
    alert = Alert.objects.get()
    assert (alert.status, alert.attempts) == (AlertStatus.SENDING, 1)

    successor = start_db_worker(emulator, worker_id="successor", **env)
    try:
        wait_until(
            lambda: Alert.objects.filter(status=AlertStatus.FAILED).exists(),
            timeout=LEASE_S + 20,
            what="the spent alert was not given up",
        )
        time.sleep(1)  # long enough for a POST to show up
    finally:
        stop_db_worker(successor)

    alert.refresh_from_db()
    assert alert.attempts == 1
    assert alert.last_error.startswith(GIVEN_UP.format(n=1))
    assert silent.connections == 1  # not posted again
    assert not WebhookAttempt.objects.exists()  # the dead worker's never ended


def test_alerts_left_sending_with_their_attempts_spent_are_failed_and_the_others_sent(
    client, person, smtp_server, settings
):
    settings.ALERTS_WEBHOOK_ALLOW_PRIVATE = True
    receiver = Receiver()
    server = serve(receiver)
    mailbox = smtp_server.mailbox
    try:
        with time_machine.travel(datetime(2026, 11, 22, 12, 0, tzinfo=UTC), tick=False) as clock:
            _, receiver.secret = webhook_subscription_create(user=person("ana"), url=receiver.url)
            post(client, fine(1))
            post(client, fine(2))
            run_tasks()
            assert len(mailbox.wait_for(2)) == len(receiver.accepted()) == 2
            # Rows as workers that died sending them leave them: fine 1's claimed as often
            # as allowed, fine 2's once less.
            spent = settings.ALERTS_MAX_ATTEMPTS
            for number, attempts in ((1, spent), (2, spent - 1)):
                Alert.objects.filter(fine__external_id=str(number)).update(
                    status=AlertStatus.SENDING,
                    attempts=attempts,
                    claim=uuid.uuid4(),
                    lease_until=timezone.now() + timedelta(seconds=LEASE_S),
                    sent_at=None,
                    message_id="",
                )
            receiver.seen_ids.clear()
            alerts_send_soon()
            run_tasks()
            assert len(receiver.deliveries) == len(mailbox.messages) == 2  # still leased
            clock.shift(LEASE_S)
            run_tasks()
    finally:
        server.shutdown()
        server.server_close()

    given_up = Alert.objects.filter(fine__external_id="1")
    assert {a.channel for a in given_up} == {AlertChannel.EMAIL, AlertChannel.WEBHOOK}
    for alert in given_up:
        assert alert.status == AlertStatus.FAILED
        assert alert.last_error.startswith(GIVEN_UP.format(n=spent))
    again = Alert.objects.filter(fine__external_id="2")
    assert set(again.values_list("status", flat=True)) == {AlertStatus.SENT}
    assert [d.payload["data"]["external_id"] for d in receiver.deliveries[2:]] == ["2"]
    (_, _, message) = mailbox.wait_for(3)
    assert "E02" in text_of(message)  # fine 2's reference, not fine 1's
