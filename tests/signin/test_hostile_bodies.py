"""Hostile bodies to the JSON endpoints, over real HTTP: deeply nested JSON, numbers no
parser should make, invalid UTF-8, lone surrogates, truncated and stray bytes. SCIM
answers each with a 400 and writes nothing (but its audit row); the webhook receiver
keeps each as received (its processing says what is wrong) and never answers 500."""

from __future__ import annotations

import json
from typing import Any

import pytest
import requests

from fleet.models import Fine, Notification, WebhookDelivery
from signin.models import ScimGroup, ScimUser
from signin.scim.tokens import scim_token_mint
from tests.signin.conftest import USER_SCHEMA

pytestmark = pytest.mark.django_db(transaction=True)

DEEP = 100_000
HOSTILE: dict[str, bytes] = {
    "nested arrays": b"[" * DEEP + b"]" * DEEP,
    "nested objects": b'{"a":' * DEEP + b"1" + b"}" * DEEP,
    "nested in a user": (
        b'{"schemas": ["'
        + USER_SCHEMA.encode()
        + b'"], "userName": "ana", "name": '
        + b'{"a":' * DEEP
        + b"1"
        + b"}" * DEEP
        + b"}"
    ),
    "nested in a patch": (
        b'{"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"], "Operations": '
        + b"[" * DEEP
        + b"]" * DEEP
        + b"}"
    ),
    # Deep enough for a recursing parser, within what orjson reads (1,024).
    "nested a thousand deep in a user": (
        b'{"schemas": ["'
        + USER_SCHEMA.encode()
        + b'"], "userName": "ana", "name": '
        + b'{"a":' * 1000
        + b"1"
        + b"}" * 1000
        + b"}"
    ),
    "an infinite number": b'{"userName": 1e999999}',
    "a number of 100,000 digits": b'{"userName": ' + b"9" * 100_000 + b"}",
    "NaN": b'{"userName": NaN}',
    "invalid UTF-8": b'{"userName": "\xff\xfe\xfd"}',
    "a lone surrogate": b'{"userName": "\\ud800"}',
    "a NUL": b'{"userName": "a\x00b"}',
    "truncated": b'{"userName": "ana", "emails": [{"value": ',
    "a byte order mark": b'\xef\xbb\xbf{"userName": "ana"}',
    "no object": b'"ana"',
    "empty": b"",
}


@pytest.fixture
def scim(live_server: Any, providers: Any, settings: Any) -> tuple[str, dict[str, str]]:
    settings.FLEET_ENVIRONMENT = "emulator"  # plain http on loopback
    settings.SCIM_REQUESTS_PER_MINUTE = 100_000
    token = scim_token_mint(provider="acme", created_by="test")
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/scim+json"}
    return f"{live_server.url}/scim/v2", headers


@pytest.mark.parametrize("body", HOSTILE.values(), ids=HOSTILE.keys())
@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", "Users"), ("PUT", "Users/1"), ("PATCH", "Users/1"), ("POST", "Groups")],
)
def test_scim_answers_a_hostile_body_400_and_writes_nothing(scim, method, path, body):
    base, headers = scim
    existing = requests.post(
        f"{base}/Users",
        data=json.dumps({"schemas": [USER_SCHEMA], "userName": "ana@example.com"}),
        headers=headers,
        timeout=30,
    )
    assert existing.status_code == 201, existing.text
    path = path.replace("/1", f"/{existing.json()['id']}")

    answer = requests.request(method, f"{base}/{path}", data=body, headers=headers, timeout=30)

    assert answer.status_code == 400, answer.text[:300]
    assert answer.json()["status"] == "400"
    assert list(ScimUser.objects.values_list("user__username", flat=True)) == ["ana@example.com"]
    assert not ScimGroup.objects.exists()


@pytest.mark.parametrize("body", HOSTILE.values(), ids=HOSTILE.keys())
def test_the_webhook_receiver_keeps_a_hostile_body_as_received(live_server, settings, body):
    token = settings.FLEET_WEBHOOK_TOKENS[0]

    answer = requests.post(
        f"{live_server.url}/webhooks/fleet/{token}/",
        data=body,
        headers={"Content-Type": "application/json"},
        timeout=30,
    )

    assert answer.status_code < 500, answer.text[:300]
    if answer.status_code == 202:
        assert bytes(WebhookDelivery.objects.get().body) == body
    assert not Fine.objects.exists()
    assert not Notification.objects.exists()
