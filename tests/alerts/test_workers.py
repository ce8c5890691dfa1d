"""Exactly once, the hard part: a real `manage.py db_worker` killed (SIGKILL) in
the middle of a batch of e-mails, then another worker: every alert arrives exactly once.
Two workers at once do not send anything twice either. Nothing is patched: the lease is
short through its setting (ALERTS_SEND_LEASE_SECONDS), as an operator could set it."""

from __future__ import annotations

import signal
import time
from collections import Counter

import pytest

from alerts.models import Alert, AlertStatus
from tests.alerts.conftest import fine, post
from tests.conftest import start_db_worker, stop_db_worker

pytestmark = pytest.mark.django_db(transaction=True)

# Short enough to wait out, long enough for a loaded machine to send a batch of three
# within it (a batch outliving its lease is sent again: what the lease is for).
LEASE_S = 5


def worker_env(smtp_server, **more: str) -> dict[str, str]:
    return {
        "EMAIL_URL": smtp_server.url,
        "PORTAL_BASE_URL": "https://portal.example",
        "ALERTS_SEND_LEASE_SECONDS": str(LEASE_S),
        "FLEET_WEBHOOK_BATCH_SECONDS": "0",
    } | more


def test_a_worker_killed_in_the_middle_of_a_batch_loses_nothing_and_repeats_nothing(
    client, smtp_server, person, emulator
):
    person("marcos")
    mailbox = smtp_server.mailbox
    mailbox.hold_message(2)  # the second e-mail of the batch: sent, not yet answered
    worker = start_db_worker(emulator, worker_id="doomed", **worker_env(smtp_server))
    try:
        for number in range(1, 5):
            post(client, fine(number))
        assert mailbox.holding.wait(20), "the worker never got to the second e-mail"
        worker.send_signal(signal.SIGKILL)
        worker.wait(10)
    finally:
        stop_db_worker(worker)
    mailbox.release.set()  # the server answers a client that is gone: not accepted

    # Killed mid-batch: one e-mail accepted and marked, the rest claimed, unsent.
    assert len(mailbox.messages) == 1
    statuses = Counter(Alert.objects.values_list("status", flat=True))
    assert statuses == {AlertStatus.SENT: 1, AlertStatus.SENDING: 3}

    # Another worker takes over once the dead one's lease has run out.
    successor = start_db_worker(emulator, worker_id="successor", **worker_env(smtp_server))
    try:
        messages = mailbox.wait_for(4, timeout=LEASE_S + 20)
        time.sleep(LEASE_S + 1)  # long enough for any repeat to show up
    finally:
        stop_db_worker(successor)

    assert len(mailbox.messages) == 4
    ids = Counter(message["Message-ID"] for message in messages)
    assert set(ids.values()) == {1}
    sent = dict(Alert.objects.values_list("message_id", "status"))
    assert set(sent) == set(ids)
    assert set(sent.values()) == {AlertStatus.SENT}


def test_two_workers_at_once_send_each_alert_once(client, smtp_server, person, emulator):
    for name in ("ana", "bia", "caio", "davi", "edu"):
        person(name)
    # Neither may take over the other's claims: a lease no batch outlives, even on a slow day.
    env = worker_env(smtp_server, ALERTS_SEND_LEASE_SECONDS="300")
    workers = [start_db_worker(emulator, worker_id=f"w{n}", **env) for n in (1, 2)]
    try:
        for number in range(1, 9):
            post(client, fine(number))
        messages = smtp_server.mailbox.wait_for(40, timeout=60)
        time.sleep(1)
    finally:
        for worker in workers:
            stop_db_worker(worker)

    assert len(smtp_server.mailbox.messages) == 40
    assert set(Counter(m["Message-ID"] for m in messages).values()) == {1}
    assert set(Alert.objects.values_list("status", flat=True)) == {AlertStatus.SENT}
