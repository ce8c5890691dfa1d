"""The outgoing webhook, checked by a receiver on loopback that
verifies the signature with the Standard Webhooks algorithm (tests/alerts/receiver.py,
written from the specification) and rejects a replayed or tampered delivery; retries
with backoff and the delivery log in the admin; addresses the portal refuses."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.utils import timezone

from alerts.models import Alert, AlertStatus, WebhookAttempt, WebhookSubscription
from fleet.models import Fine
from tests.alerts.conftest import PAGE, PORTAL, fine, notification, post, subscribe
from tests.conftest import run_tasks

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def manager_client(client, person):
    user = person("marcos", delivery="off")  # webhooks only
    client.force_login(user)
    return client


def test_an_event_is_posted_signed_and_the_receiver_verifies_it(manager_client, receiver):
    secret = subscribe(manager_client, receiver)

    # Shown once: never again on the page, and not kept in clear.
    assert secret not in manager_client.get(PAGE).text
    assert secret not in WebhookSubscription.objects.get().secret_encrypted

    post(manager_client, fine(100001, linkFrame="https://docs.example/x.pdf"))
    post(manager_client, notification(500002))
    run_tasks()

    accepted = receiver.accepted()
    assert [d.payload["type"] for d in accepted] == ["fine.created", "notification.created"]
    event = accepted[0].payload
    record = Fine.objects.get()
    assert event["data"] | {"id": None} == {
        "record": "fine",
        "id": None,
        "external_id": "100001",
        "plate": "ABC1D23",
        "treated": False,
        "description": "Avançar o sinal vermelho do semáforo",
        "reference": "E0100001",
        "occurred_at": "2026-11-20T13:45:00Z",
        "amount": "293.47",
        "document_available": True,
        "driver": None,  # not attributed yet: no vehicle list was at hand
        # What the platform did not send of the infraction (spec-only fields here).
        "infraction": dict.fromkeys(("code", "severity", "points", "city", "state", "authority")),
        # Nothing said of the deadlines either: the portal's estimate, said so.
        "indication": {
            "state": "needed",
            "basis": "assumed",
            "due": (timezone.localdate(record.received_at) + timedelta(days=30)).isoformat(),
            "due_basis": "estimated",
            "payment_due": None,
            "payment_due_basis": None,
        },
        "url": f"{PORTAL}/fines/{record.pk}/",
    }
    assert accepted[0].headers["webhook-id"].startswith("msg_")
    assert accepted[0].headers["content-type"] == "application/json"
    assert set(Alert.objects.values_list("status", flat=True)) == {AlertStatus.SENT}


def test_the_receiver_rejects_a_replayed_or_tampered_delivery(manager_client, receiver):
    subscribe(manager_client, receiver)
    post(manager_client, fine(1))
    run_tasks()
    (original,) = receiver.accepted()

    assert receiver.resend(original) == 400  # the same message again
    tampered = original.body.replace(b'"treated":false', b'"treated":true')
    assert tampered != original.body
    assert receiver.resend(original, body=tampered) == 400
    receiver.seen_ids.clear()
    receiver.clock_offset_s = 10 * 60  # ten minutes later, a captured message is stale
    assert receiver.resend(original) == 400

    assert [d.verdict for d in receiver.deliveries] == [
        "accepted",
        "replay",
        "bad signature",
        "timestamp too old or too new",
    ]


def test_a_failing_receiver_is_retried_with_backoff_and_logged_for_the_admin(
    manager_client, receiver, settings, admin_client
):
    settings.ALERTS_RETRY_SECONDS = 30
    with time_machine.travel(datetime(2026, 11, 22, 12, 0, tzinfo=UTC), tick=False) as clock:
        subscribe(manager_client, receiver)
        receiver.failures_to_answer = [500, 503]
        post(manager_client, fine(1))
        run_tasks()
        clock.shift(29)
        run_tasks()
        assert len(receiver.deliveries) == 1
        clock.shift(1)
        run_tasks()
        assert len(receiver.deliveries) == 2
        clock.shift(60)  # the wait doubles
        run_tasks()

    assert len(receiver.deliveries) == 3
    ids = {d.headers["webhook-id"] for d in receiver.deliveries}
    assert len(ids) == 1  # one message, three attempts: the receiver can drop repeats
    attempts = list(WebhookAttempt.objects.order_by("started_at").values_list("status_code", "ok"))
    assert attempts == [(500, False), (503, False), (204, True)]
    assert Alert.objects.get(channel="webhook").status == AlertStatus.SENT
    log = admin_client.get("/admin/alerts/webhookattempt/")
    assert log.status_code == 200
    for status in (500, 503, 204):
        assert f'<td class="field-status_code">{status}</td>' in log.text


@pytest.mark.parametrize(
    "url",
    [
        "ftp://erp.example/hook",
        "javascript:alert(1)",
        "http://127.0.0.1:8000/hook",
        "http://localhost/hook",
        "http://10.1.2.3/hook",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/hook",
        "https://user:password@erp.example/hook",
    ],
)
def test_addresses_that_could_reach_the_portals_own_network_are_refused(
    manager_client, settings, url
):
    settings.ALERTS_WEBHOOK_ALLOW_PRIVATE = False

    page = manager_client.post(PAGE + "webhooks/", {"url": url})

    assert page.status_code == 400
    assert "whsec_" not in page.text
    assert 'class="field-error"' in page.text
    assert not WebhookSubscription.objects.exists()


def test_an_address_refused_later_is_not_posted_to(manager_client, receiver, settings):
    subscribe(manager_client, receiver)
    settings.ALERTS_WEBHOOK_ALLOW_PRIVATE = False  # e.g. the setting was turned off since
    post(manager_client, fine(1))
    run_tasks()

    assert receiver.deliveries == []
    (attempt,) = WebhookAttempt.objects.all()
    assert attempt.status_code is None
    assert attempt.error.startswith("refused:")


def test_a_secret_no_key_decrypts_fails_its_own_alert_and_no_one_elses(
    client, person, receiver, settings
):
    from cryptography.fernet import Fernet

    from tests.alerts.receiver import Receiver, serve

    other = Receiver()
    server = serve(other)
    try:
        client.force_login(person("ana", delivery="off"))
        subscribe(client, receiver)
        client.force_login(person("bia", delivery="off"))
        subscribe(client, other)
        # Bia's secret was encrypted under a key the operator has since lost.
        lost = Fernet(Fernet.generate_key()).encrypt(b"whsec_c2VjcmV0").decode()
        WebhookSubscription.objects.filter(user__username="bia").update(secret_encrypted=lost)

        post(client, fine(1))
        run_tasks()
    finally:
        server.shutdown()
        server.server_close()

    assert [d.verdict for d in receiver.deliveries] == ["accepted"]
    assert other.deliveries == []
    stuck = Alert.objects.get(user__username="bia")
    assert stuck.status == AlertStatus.PENDING  # tried again later, once the key is back
    assert "FLEET_FIELD_KEYS" in stuck.last_error
    assert Alert.objects.get(user__username="ana").status == AlertStatus.SENT
