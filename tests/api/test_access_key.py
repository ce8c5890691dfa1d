"""`create_access_key`: a single-use login token for a web-app user (spec 4.2)."""

from __future__ import annotations

import json
import uuid

import pytest
import requests

from fleet.api.client import FleetClient
from fleet.api.errors import InvalidResponse
from tests.api.conftest import DEMO_PASSWORD, DEMO_USER
from tests.conftest import Emulator


def test_it_mints_a_uuid_access_key(client: FleetClient) -> None:
    key = client.create_access_key(email=DEMO_USER, password=DEMO_PASSWORD)
    assert str(uuid.UUID(key)) == key.lower()


def test_each_call_mints_a_new_key(client: FleetClient) -> None:
    first = client.create_access_key(email=DEMO_USER, password=DEMO_PASSWORD)
    second = client.create_access_key(email=DEMO_USER, password=DEMO_PASSWORD)
    assert first != second


def test_the_key_logs_the_user_into_the_web_app_once(
    emulator: Emulator, client: FleetClient
) -> None:
    key = client.create_access_key(email=DEMO_USER, password=DEMO_PASSWORD)
    first = requests.get(f"{emulator.login_url}/login", params={"accessKey": key}, timeout=5)
    again = requests.get(f"{emulator.login_url}/login", params={"accessKey": key}, timeout=5)
    assert first.status_code == 200
    assert DEMO_USER in first.text
    assert again.status_code == 401


def test_the_body_is_json_with_email_and_password(emulator: Emulator, client: FleetClient) -> None:
    client.create_access_key(email=DEMO_USER, password=DEMO_PASSWORD)
    (sent,) = [r for r in emulator.requests() if r["method"] == "POST"]
    headers = {name.lower(): value for name, value in sent["headers"].items()}
    assert headers["content-type"] == "application/json"
    assert json.loads(sent["body"]) == {"email": DEMO_USER, "password": DEMO_PASSWORD}


@pytest.mark.parametrize(
    "body",
    [
        {"accessKey": "not-a-uuid", "error": False, "code": "fbk_200"},
        {"accessKey": 12345, "error": False, "code": "fbk_200"},
        {"error": False, "code": "fbk_200"},
    ],
)
def test_an_access_key_that_is_not_a_uuid_is_an_invalid_response(
    emulator: Emulator, client: FleetClient, body: dict[str, object]
) -> None:
    emulator.fault("/key/generator", body=body)
    with pytest.raises(InvalidResponse) as raised:
        client.create_access_key(email=DEMO_USER, password=DEMO_PASSWORD)
    assert "not-a-uuid" not in str(raised.value)
