"""The report of unknown payload keys: each recorded once, and at most
FLEET_WEBHOOK_UNKNOWN_KEYS_MAX new ones per delivery, the rest counted on it."""

from __future__ import annotations

import json
import logging

import pytest

from fleet.models import Fine, UnknownWebhookKey, WebhookDelivery
from fleet.webhooks.processing import deliveries_process_received, delivery_replay

pytestmark = pytest.mark.django_db

URL = "/webhooks/fleet/dev-webhook-token/"


def deliver(client, *, extra_keys: int, treated: bool = False) -> WebhookDelivery:
    """A fine whose frame carries `extra_keys` keys the portal does not know, processed."""
    frame = {"id": 1, "treated": treated} | {
        f"extra{number:03}": number for number in range(extra_keys)
    }
    body = json.dumps({"frame": frame}).encode()
    assert client.post(URL, data=body, content_type="application/json").status_code == 202
    deliveries_process_received()  # the worker's next run
    return WebhookDelivery.objects.latest("pk")


def recorded() -> list[str]:
    return sorted(UnknownWebhookKey.objects.values_list("path", flat=True))


def test_it_records_at_most_the_configured_number_of_new_keys_per_delivery(
    client, settings, log_records
):
    settings.FLEET_WEBHOOK_UNKNOWN_KEYS_MAX = 3

    delivery = deliver(client, extra_keys=10)

    assert recorded() == ["frame.extra000", "frame.extra001", "frame.extra002"]  # payload order
    assert delivery.unknown_keys_unrecorded == 7
    assert (delivery.status, Fine.objects.get().payload["extra009"]) == ("processed", 9)
    (warning,) = [
        record
        for record in log_records.of("fleet.webhooks.unknown_keys")
        if record.levelno == logging.WARNING
    ]
    assert warning.getMessage().startswith(
        f"webhook delivery {delivery.pk} has 7 more new unknown keys than "
        "FLEET_WEBHOOK_UNKNOWN_KEYS_MAX (3)"
    )


def test_it_records_a_hundred_new_keys_per_delivery_by_default(client, settings):
    assert settings.FLEET_WEBHOOK_UNKNOWN_KEYS_MAX == 100

    delivery = deliver(client, extra_keys=150)

    assert UnknownWebhookKey.objects.count() == 100
    assert delivery.unknown_keys_unrecorded == 50


def test_keys_recorded_before_do_not_count_against_the_limit(client, settings):
    # Recorded before this process started: it has not seen them yet.
    UnknownWebhookKey.objects.bulk_create(
        UnknownWebhookKey(path=f"frame.extra{number:03}") for number in range(5)
    )
    settings.FLEET_WEBHOOK_UNKNOWN_KEYS_MAX = 3

    delivery = deliver(client, extra_keys=9)

    assert recorded() == [f"frame.extra{number:03}" for number in range(8)]
    assert delivery.unknown_keys_unrecorded == 1


def test_a_delivery_within_the_limit_counts_nothing(client, settings):
    settings.FLEET_WEBHOOK_UNKNOWN_KEYS_MAX = 3

    delivery = deliver(client, extra_keys=3)

    assert len(recorded()) == 3
    assert delivery.unknown_keys_unrecorded == 0


def test_the_next_delivery_records_the_next_keys(client, settings):
    settings.FLEET_WEBHOOK_UNKNOWN_KEYS_MAX = 3

    first = deliver(client, extra_keys=5)
    second = deliver(client, extra_keys=5, treated=True)

    assert (first.unknown_keys_unrecorded, second.unknown_keys_unrecorded) == (2, 0)
    assert len(recorded()) == 5
    assert second.status == "processed"


def test_a_replay_records_what_was_left_out_and_updates_the_count(client, settings):
    settings.FLEET_WEBHOOK_UNKNOWN_KEYS_MAX = 3
    delivery = deliver(client, extra_keys=5)
    assert delivery.unknown_keys_unrecorded == 2

    settings.FLEET_WEBHOOK_UNKNOWN_KEYS_MAX = 100
    delivery_replay(ids=[delivery.pk])

    delivery.refresh_from_db()
    assert len(recorded()) == 5
    assert delivery.unknown_keys_unrecorded == 0
