"""The address a request came from, behind the deployment's proxies: what a webhook
delivery records and what the local login locks. Each proxy appends the address it
received from to X-Forwarded-For; a request that did not come through all of them
carries only entries its sender wrote."""

from __future__ import annotations

import json

import pytest
from axes.models import AccessAttempt

from fleet.models import WebhookDelivery

pytestmark = pytest.mark.django_db

PROXY = "10.0.0.2"  # the innermost proxy: the connection's own address


def fine(id: int) -> str:
    return json.dumps({"frame": {"id": id, "treated": False, "updatedAt": "2026-11-20T10:00:00Z"}})


def test_a_short_x_forwarded_for_cannot_choose_the_address_a_webhook_records(client, settings):
    settings.FLEET_WEBHOOK_PROXY_COUNT = 2

    client.post(
        "/webhooks/fleet/dev-webhook-token/",
        data=fine(1),
        content_type="application/json",
        REMOTE_ADDR=PROXY,
        HTTP_X_FORWARDED_FOR="198.51.100.66",  # one entry where two proxies add two
    )
    client.post(
        "/webhooks/fleet/dev-webhook-token/",
        data=fine(2),
        content_type="application/json",
        REMOTE_ADDR=PROXY,
        HTTP_X_FORWARDED_FOR="198.51.100.66, 203.0.113.9",  # through both proxies
    )

    assert list(
        WebhookDelivery.objects.order_by("pk").values_list("source_address", flat=True)
    ) == [PROXY, "198.51.100.66"]


def test_a_short_x_forwarded_for_cannot_choose_the_address_a_login_lockout_locks(
    client, manager, settings
):
    settings.FLEET_WEBHOOK_PROXY_COUNT = 2

    # A new address of its choosing for every guess, and a new username: only the
    # address could stop it.
    for guess in range(10):
        client.post(
            "/accounts/login/",
            {"username": f"guess-{guess}", "password": "wrong"},
            REMOTE_ADDR=PROXY,
            HTTP_X_FORWARDED_FOR=f"198.51.100.{guess}",
        )
    answer = client.post(
        "/accounts/login/",
        {"username": "manager", "password": "manager-demo-password"},
        REMOTE_ADDR=PROXY,
        HTTP_X_FORWARDED_FOR="198.51.100.200",
    )

    assert answer.status_code == 429
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {PROXY}
