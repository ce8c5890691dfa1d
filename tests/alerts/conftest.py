"""Alerts: people with their choices, events posted to the portal's webhook receiver, and
the background tasks run here (tests/conftest.py's `run_tasks`)."""

from __future__ import annotations

import json
from typing import Any

import pytest

PORTAL = "https://portal.example"
RECEIVER = "/webhooks/fleet/dev-webhook-token/"


@pytest.fixture(autouse=True)
def alert_settings(settings: Any) -> Any:
    settings.FLEET_WEBHOOK_BATCH_SECONDS = 0  # each delivery processed by the next run
    settings.PORTAL_BASE_URL = PORTAL
    settings.ALERTS_HOURLY_CAP = 10
    return settings


@pytest.fixture
def person(django_user_model: Any) -> Any:
    """`person("ana", delivery="immediate", ...)`: a user with an e-mail and these choices."""
    from alerts.services.preferences import alert_preferences_save

    def make(username: str, **choices: Any) -> Any:
        user = django_user_model.objects.create_user(
            username=username, password=f"{username}-password", email=f"{username}@example.com"
        )
        alert_preferences_save(user=user, **({"delivery": "immediate"} | choices))
        return user

    return make


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
