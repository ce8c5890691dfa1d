"""Alerts: people with their choices, events posted to the portal's webhook receiver, and
the background tasks run here (tests/conftest.py's `run_tasks`)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.alerts.receiver import Receiver, serve
from tests.scopes import grant_whole_fleet

PORTAL = "https://portal.example"
RECEIVER = "/webhooks/fleet/dev-webhook-token/"
PAGE = "/account/alerts/"


@pytest.fixture(autouse=True)
def alert_settings(settings: Any) -> Any:
    settings.FLEET_WEBHOOK_BATCH_SECONDS = 0  # each delivery processed by the next run
    settings.PORTAL_BASE_URL = PORTAL
    settings.ALERTS_HOURLY_CAP = 10
    return settings


@pytest.fixture
def person(django_user_model: Any) -> Any:
    """`person("ana", delivery="immediate", ...)`: a user with an e-mail and these choices,
    who sees the whole fleet unless `whole_fleet=False` (then only their vehicle groups)."""
    from alerts.services.preferences import alert_preferences_save

    def make(username: str, *, whole_fleet: bool = True, **choices: Any) -> Any:
        user = django_user_model.objects.create_user(
            username=username, password=f"{username}-password", email=f"{username}@example.com"
        )
        if whole_fleet:
            grant_whole_fleet(user)
        alert_preferences_save(user=user, **({"delivery": "immediate"} | choices))
        return user

    return make


@pytest.fixture
def receiver(settings: Any) -> Iterator[Receiver]:
    """A company's system on loopback that verifies the portal's webhooks (receiver.py)."""
    settings.ALERTS_WEBHOOK_ALLOW_PRIVATE = True  # the receiver is on loopback
    receiver = Receiver()
    server = serve(receiver)
    yield receiver
    server.shutdown()
    server.server_close()


def subscribe(client: Any, receiver: Receiver) -> str:
    """Add the receiver on the alerts page; the secret, as the page shows it once."""
    page = client.post(PAGE + "webhooks/", {"url": receiver.url, "description": "ERP"})
    assert page.status_code == 200
    found = re.search(r"<code>(whsec_[A-Za-z0-9+/=]+)</code>", page.text)
    assert found is not None
    receiver.secret = found.group(1)
    return receiver.secret


def post(client: Any, payload: dict[str, Any] | bytes) -> None:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    response = client.post(RECEIVER, data=body, content_type="application/json")
    assert response.status_code == 202


def fine(number: int, plate: str = "ABC1D23", **fields: Any) -> dict[str, Any]:
    """A fine as the platform sends it (the emulator's README shows the shape)."""
    links = {key: fields.pop(key) for key in ("linkFrame", "link") if key in fields}
    event = {
        "id": number,
        "carPlate": plate,
        "autoInfracao": f"E0{number}",
        "description": "Avançar o sinal vermelho do semáforo",
        "occurredAt": "2026-11-20T13:45:00Z",
        "amount": "293.47",
        "treated": False,
    } | fields
    return {"frame": event, "linkFrame": None, "link": f"https://boletos.example/{number}"} | links


def notification(number: int, plate: str = "ABC1D23", **fields: Any) -> dict[str, Any]:
    event = {
        "id": number,
        "type": "recall",
        "title": "Recall do fabricante",
        "message": f"O veículo {plate} está convocado para um recall.",
        "carPlate": plate,
        "treated": False,
    } | fields
    return {"notification": event}
