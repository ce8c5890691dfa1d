"""`manage.py replay_webhooks`: what it picks, what it does, and what it says."""

from __future__ import annotations

import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.utils import timezone

from fleet.models import Fine, WebhookDelivery
from fleet.webhooks.processing import delivery_process
from fleet.webhooks.receive import delivery_receive
from fleet.webhooks.retention import delivery_bodies_purge

pytestmark = pytest.mark.django_db

FINE = {"frame": {"id": 1, "treated": False}, "linkFrame": None}


def stored(payload, *, received_ago: float = 0) -> WebhookDelivery:
    """A delivery stored as the receiver stores it, not processed (a worker died after storing)."""
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    delivery = delivery_receive(
        body=body, content_type="application/json", headers={}, source_address="127.0.0.1"
    )
    if received_ago:
        moment = timezone.now() - timedelta(seconds=received_ago)
        WebhookDelivery.objects.filter(pk=delivery.pk).update(received_at=moment)
    return delivery


def as_stored(delivery: WebhookDelivery) -> dict[str, object]:
    """Every column of `delivery`'s row as the database holds it now."""
    row = WebhookDelivery.objects.get(pk=delivery.pk)
    return {f.attname: f.value_from_object(row) for f in WebhookDelivery._meta.concrete_fields}


def replay(*args: str) -> str:
    out = StringIO()
    call_command("replay_webhooks", *args, stdout=out)
    return out.getvalue()


def test_a_delivery_never_processed_is_replayed_once_old_enough():
    fresh = stored(FINE | {"frame": {"id": 2, "treated": False}})
    old = stored(FINE, received_ago=120)

    output = replay()

    assert "Replayed 1 deliveries (processed: 1)" in output
    assert WebhookDelivery.objects.get(pk=old.pk).status == "processed"
    assert WebhookDelivery.objects.get(pk=fresh.pk).status == "received"
    assert list(Fine.objects.values_list("external_id", flat=True)) == ["1"]


def test_replaying_twice_changes_nothing_more():
    stored(FINE, received_ago=120)
    replay()
    fine = Fine.objects.get()

    replay(str(WebhookDelivery.objects.get().pk))

    again = Fine.objects.get()
    assert (again.pk, again.treated_history, again.updated_at) == (
        fine.pk,
        fine.treated_history,
        fine.updated_at,
    )


def test_invalid_deliveries_stay_kept_and_the_command_says_so():
    delivery = stored(b'{"frame": {"id": 1, "treated": nul')
    delivery_process(delivery=delivery)

    with pytest.raises(CommandError, match="1 deliveries are still invalid or failed"):
        replay()

    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("invalid", 2)
    assert bytes(delivery.body) == b'{"frame": {"id": 1, "treated": nul'


def test_the_dry_run_lists_and_changes_nothing():
    stored(FINE, received_ago=120)

    output = replay("--dry-run")

    assert "1 deliveries would be replayed (received: 1)" in output
    assert WebhookDelivery.objects.get().status == "received"
    assert not Fine.objects.exists()


def test_status_and_ids_narrow_the_choice():
    unknown = stored({"trip": {"id": 1}})
    delivery_process(delivery=unknown)
    waiting = stored(FINE, received_ago=120)

    replay("--status", "unknown_kind")

    assert WebhookDelivery.objects.get(pk=waiting.pk).status == "received"
    replay(str(waiting.pk))
    assert WebhookDelivery.objects.get(pk=waiting.pk).status == "processed"


@pytest.mark.django_db(transaction=True)
def test_a_failed_delivery_is_processed_by_the_command_once_the_cause_is_fixed():
    table = Fine._meta.db_table
    with connection.schema_editor() as editor:
        editor.alter_db_table(Fine, table, f"{table}_elsewhere")
    try:
        delivery = stored(FINE)
        delivery_process(delivery=delivery)
        with pytest.raises(CommandError, match="still invalid or failed"):
            replay()
    finally:
        with connection.schema_editor() as editor:
            editor.alter_db_table(Fine, f"{table}_elsewhere", table)

    assert "processed: 1" in replay()
    assert Fine.objects.get().external_id == "1"


def test_a_delivery_whose_body_was_emptied_is_not_replayed_and_keeps_what_it_had(settings):
    settings.FLEET_WEBHOOK_BODIES_KEEP_DAYS = 1
    delivery = stored(FINE, received_ago=2 * 86400)
    replay()
    assert delivery_bodies_purge() == 1
    before, fines = as_stored(delivery), list(Fine.objects.values())

    output = replay(str(delivery.pk))

    assert as_stored(delivery) == before
    assert (before["status"], before["fine_id"]) == ("processed", Fine.objects.get().pk)
    assert list(Fine.objects.values()) == fines
    assert (
        "Not replayed: 1 deliveries whose body was emptied after FLEET_WEBHOOK_BODIES_KEEP_DAYS "
        "days; what they made is kept." in output
    )
