"""The admin of webhooks: deliveries read-only with a replay action, and the unknown keys report."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone, translation

from fleet.models import Fine, Notification, UnknownWebhookKey, WebhookDelivery
from fleet.webhooks.processing import deliveries_process_received
from fleet.webhooks.retention import delivery_bodies_purge

pytestmark = pytest.mark.django_db

WEBHOOK = "/webhooks/fleet/dev-webhook-token/"
DELIVERIES = reverse("admin:fleet_webhookdelivery_changelist")
KEYS = reverse("admin:fleet_unknownwebhookkey_changelist")


@pytest.fixture
def admin(admin_client: Client) -> Client:
    admin_client.defaults["HTTP_ACCEPT_LANGUAGE"] = "en"
    return admin_client


def deliver(client: Client, body: bytes) -> WebhookDelivery:
    client.post(WEBHOOK, data=body, content_type="application/json")
    deliveries_process_received()  # the worker's next run
    return WebhookDelivery.objects.latest("pk")


def test_deliveries_are_listed_with_their_status_and_error(admin, client):
    deliver(client, b'{"frame": {"id": 1, "treated": false}}')
    deliver(client, b"not json")

    response = admin.get(DELIVERIES)

    assert response.status_code == 200
    assert "processed" in response.text
    assert "kept: invalid" in response.text
    assert "the body is not valid JSON" in response.text


def test_a_rows_action_box_is_written_as_djangos_widget_writes_it(admin, client):
    """The large lists write each row's box without a template; the same markup as
    Django's `CheckboxInput`, which the admin's actions script reads."""
    from django.contrib import admin as django_admin
    from django.contrib.admin import ModelAdmin

    delivery = deliver(client, b'{"frame": {"id": 1, "treated": false}} <b>')
    model_admin = django_admin.site.get_model_admin(WebhookDelivery)

    assert model_admin.action_checkbox(delivery) == ModelAdmin.action_checkbox(
        model_admin, delivery
    )
    with translation.override("en"):
        assert model_admin.action_checkbox(delivery) in admin.get(DELIVERIES).text


def test_a_delivery_shows_its_body_as_received_and_cannot_be_edited(admin, client):
    delivery = deliver(client, b'{"frame": {"id": 1, "treated": null}} <b>')

    page = admin.get(reverse("admin:fleet_webhookdelivery_change", args=[delivery.pk])).text

    assert "{&quot;frame&quot;: {&quot;id&quot;: 1, &quot;treated&quot;: null}} &lt;b&gt;" in page
    assert 'name="_save"' not in page
    delete = reverse("admin:fleet_webhookdelivery_delete", args=[delivery.pk])
    assert admin.post(delete).status_code == 403


def test_the_replay_action_processes_kept_deliveries_again(admin, client):
    delivery = deliver(client, b'{"frame": {"id": 1, "treated": false}}')
    WebhookDelivery.objects.filter(pk=delivery.pk).update(status="failed", error="boom")
    Fine.objects.all().delete()

    response = admin.post(
        DELIVERIES,
        {"action": "replay", "_selected_action": [delivery.pk]},
        follow=True,
    )

    assert "Replayed 1 deliveries (processed: 1)." in response.text
    delivery.refresh_from_db()
    assert (delivery.status, delivery.error) == ("processed", "")
    assert Fine.objects.get().external_id == "1"


def test_deliveries_whose_body_was_emptied_are_not_replayed_and_keep_what_they_had(
    admin, client, settings
):
    settings.FLEET_WEBHOOK_BODIES_KEEP_DAYS = 1
    processed = deliver(client, b'{"frame": {"id": 1, "treated": false}}')
    duplicate = deliver(client, b'{"frame": {"id": 1, "treated": false}}')
    WebhookDelivery.objects.update(received_at=timezone.now() - timedelta(days=2))
    assert delivery_bodies_purge() == 2
    before = list(WebhookDelivery.objects.order_by("pk").values())
    fines = list(Fine.objects.values())

    response = admin.post(
        DELIVERIES,
        {"action": "replay", "_selected_action": [processed.pk, duplicate.pk]},
        follow=True,
    )

    assert list(WebhookDelivery.objects.order_by("pk").values()) == before
    assert [(d["status"], d["duplicate_of_id"]) for d in before] == [
        ("processed", None),
        ("duplicate", processed.pk),
    ]
    assert before[0]["fine_id"] == Fine.objects.get().pk
    assert list(Fine.objects.values()) == fines
    assert (
        "2 deliveries were not replayed: their body was emptied after "
        "FLEET_WEBHOOK_BODIES_KEEP_DAYS days, and what they made is kept."
    ) in response.text


def test_staff_without_the_change_permission_cannot_replay(client, django_user_model):
    from django.contrib.auth.models import Permission

    viewer = django_user_model.objects.create_user("v", password="pw-123456", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_webhookdelivery"))
    client.force_login(viewer)

    response = client.get(DELIVERIES)

    assert response.status_code == 200
    assert 'value="replay"' not in response.text


def test_the_report_lists_unknown_keys_with_when_each_was_first_seen(admin, client):
    deliver(client, json.dumps({"frame": {"id": 1, "treated": False, "radar": 7}}).encode())
    # A key the portal has learnt since is no longer news.
    UnknownWebhookKey.objects.create(path="frame.treated", sample="false")

    response = admin.get(KEYS)

    assert response.status_code == 200
    listed = [key.path for key in response.context["cl"].result_list]
    assert listed == ["frame.radar"]
    assert "First seen" in response.text


def test_a_delivery_shows_how_many_new_unknown_keys_were_not_recorded(admin, client, settings):
    settings.FLEET_WEBHOOK_UNKNOWN_KEYS_MAX = 2
    frame = {"id": 1, "treated": False} | {f"extra{number}": number for number in range(5)}
    delivery = deliver(client, json.dumps({"frame": frame}).encode())

    response = admin.get(reverse("admin:fleet_webhookdelivery_change", args=[delivery.pk]))

    assert response.context["adminform"].form.instance.unknown_keys_unrecorded == 3
    assert "Unknown keys not recorded" in response.text
    assert '<div class="readonly">3</div>' in response.text


@pytest.mark.parametrize("model", [Fine, Notification], ids=["fines", "notifications"])
def test_the_records_lists_do_not_read_what_they_do_not_show(admin, client, model):
    """A record's JSON (its payload, its handling's history) is read on its own page only:
    a list of fifty read and decoded fifty of each for nothing."""
    kind = "fine" if model is Fine else "notification"
    deliver(
        client, json.dumps({"frame": {"id": 5, "treated": False, "carPlate": "ABC1D23"}}).encode()
    )
    deliver(client, json.dumps({"notification": {"id": 6, "treated": False}}).encode())
    record = model.objects.get()
    table = model._meta.db_table

    with CaptureQueriesContext(connection) as listed:
        page = admin.get(reverse(f"admin:fleet_{kind}_changelist"))
    with CaptureQueriesContext(connection) as shown:
        own = admin.get(reverse(f"admin:fleet_{kind}_change", args=[record.pk]))

    assert page.status_code == own.status_code == 200
    rows = [q["sql"] for q in listed.captured_queries if f'FROM "{table}"' in q["sql"]]
    assert rows
    assert not any('"payload"' in sql or '"treated_history"' in sql for sql in rows)
    assert any(f'"{table}"."payload"' in q["sql"] for q in shown.captured_queries)
