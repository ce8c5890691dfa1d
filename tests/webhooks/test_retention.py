"""The raw bodies of processed deliveries are kept FLEET_WEBHOOK_BODIES_KEEP_DAYS days, then
emptied by the worker, a chunk to a short transaction; the deliveries' fields and the
fines and notifications they made stay, and bodies that may still be replayed stay."""

from __future__ import annotations

import html
import json
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from fleet.models import DeliveryStatus, Fine, Notification, WebhookDelivery
from fleet.webhooks.processing import deliveries_process_received
from fleet.webhooks.retention import delivery_bodies_purge

pytestmark = pytest.mark.django_db

WEBHOOK = "/webhooks/fleet/dev-webhook-token/"


def store(client, payload: object) -> WebhookDelivery:
    body = payload if isinstance(payload, str) else json.dumps(payload)
    response = client.post(WEBHOOK, data=body, content_type="application/json")
    assert response.status_code == 202, response.content
    return WebhookDelivery.objects.latest("pk")


def aged(delivery: WebhookDelivery, days: float) -> None:
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        received_at=timezone.now() - timedelta(days=days)
    )


def test_old_processed_bodies_are_emptied_and_their_records_stay(client, settings):
    settings.FLEET_WEBHOOK_BODIES_KEEP_DAYS = 90
    fine = store(client, {"frame": {"id": 1, "treated": False, "autoInfracao": "E1"}})
    twin = store(client, {"frame": {"id": 1, "treated": False, "autoInfracao": "E1"}})
    notification = store(client, {"notification": {"id": 2, "treated": False, "title": "Oi"}})
    recent = store(client, {"frame": {"id": 3, "treated": True}})
    invalid = store(client, "{not json")
    deliveries_process_received()
    for delivery in (fine, twin, notification, invalid):
        aged(delivery, 91)
    aged(recent, 89)
    before = {d.pk: d for d in WebhookDelivery.objects.all()}
    fines_before = list(Fine.objects.values())

    assert delivery_bodies_purge() == 3

    after = {d.pk: d for d in WebhookDelivery.objects.all()}
    for delivery in (fine, twin, notification):
        old, new = before[delivery.pk], after[delivery.pk]
        assert bytes(new.body) == b""
        assert new.body_purged_at is not None
        for field in ("status", "kind", "body_size", "body_sha256", "fine_id", "notification_id"):
            assert getattr(new, field) == getattr(old, field), field
    assert after[twin.pk].status == DeliveryStatus.DUPLICATE
    for kept in (recent, invalid):  # too recent; may be replayed
        assert bytes(after[kept.pk].body) == bytes(before[kept.pk].body) != b""
        assert after[kept.pk].body_purged_at is None
    assert list(Fine.objects.values()) == fines_before  # the records, whole
    assert Notification.objects.get().title == "Oi"
    assert delivery_bodies_purge() == 0  # nothing left to empty


def test_the_purge_empties_a_chunk_to_a_transaction(client, settings):
    settings.FLEET_WEBHOOK_BODIES_KEEP_DAYS = 1
    for number in range(7):
        aged(store(client, {"frame": {"id": number, "treated": False}}), 2)
    deliveries_process_received()

    with CaptureQueriesContext(connection) as queries:
        assert delivery_bodies_purge(chunk=3) == 7

    updates = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("UPDATE")]
    assert len(updates) == 3  # 3 + 3 + 1
    assert not WebhookDelivery.objects.filter(body_purged_at__isnull=True).exists()


def test_the_admin_says_when_a_body_was_emptied(admin_client, client, settings):
    settings.FLEET_WEBHOOK_BODIES_KEEP_DAYS = 1
    delivery = store(client, {"frame": {"id": 9, "treated": False}})
    deliveries_process_received()
    aged(delivery, 2)
    delivery_bodies_purge()

    page = admin_client.get(
        f"/admin/fleet/webhookdelivery/{delivery.pk}/change/", headers={"Accept-Language": "en"}
    ).text

    assert "as every processed delivery's after FLEET_WEBHOOK_BODIES_KEEP_DAYS days" in (
        html.unescape(page)
    )


def test_processing_starts_the_nightly_purge_once(client):
    store(client, {"frame": {"id": 1, "treated": False}})
    deliveries_process_received()
    store(client, {"frame": {"id": 2, "treated": False}})
    deliveries_process_received()

    runs = DBTaskResult.objects.filter(task_path="fleet.tasks.webhook_bodies_purge")
    assert runs.count() == 1
    at = timezone.localtime(runs.get().run_after)
    assert (at.hour, at.minute) == (4, 0)
    assert at > timezone.now()
