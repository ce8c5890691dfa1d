"""Secrets and keys stay where they belong.

The Fleet secret key, the request signature and the fleet password appear in
no response, log record or audit row; each minted accessKey appears only in
the one response it was minted for.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re

import pytest

from fleet.models import AccessKeyMint, FleetAccount
from tests.conftest import FLEET_EMAIL, FLEET_PASSWORD

pytestmark = pytest.mark.django_db

KEY = re.compile(r"accessKey=([0-9a-f-]{36})")


def everything_in(response) -> str:
    headers = "\n".join(f"{name}: {value}" for name, value in response.items())
    return f"{headers}\n{response.content.decode(errors='replace')}"


def test_secrets_and_keys_never_leave_their_place(
    client, manager, admin_user, fleet_settings, caplog
):
    caplog.set_level(logging.DEBUG)
    signature = hmac.new(
        fleet_settings.FLEET_SECRET_KEY.encode(),
        fleet_settings.FLEET_ACCESS_TOKEN.encode(),
        hashlib.sha256,
    ).hexdigest()
    client.force_login(manager)

    keyed = [
        client.get("/app/frame", headers={"HX-Request": "true"}),
        client.get("/app/frame", headers={"HX-Request": "true"}),
        client.get("/app/open", headers={"Sec-Fetch-Site": "same-origin"}),
        client.post("/app/open"),
    ]
    others = [
        client.get("/"),
        client.get("/app/"),
        client.get("/app/account"),
        client.post("/app/account", {"email": FLEET_EMAIL, "password": FLEET_PASSWORD}),
        client.post("/app/account", {"email": FLEET_EMAIL, "password": "a-wrong-password"}),
    ]
    client.force_login(admin_user)
    account = FleetAccount.objects.get(user=manager)
    others += [
        client.get("/admin/fleet/fleetaccount/"),
        client.get(f"/admin/fleet/fleetaccount/{account.pk}/change/"),
        client.get("/admin/fleet/accesskeymint/"),
    ]

    keys = [KEY.search(everything_in(response)).group(1) for response in keyed]
    assert len(set(keys)) == len(keyed)
    secrets = [fleet_settings.FLEET_SECRET_KEY, signature, FLEET_PASSWORD, "a-wrong-password"]
    for response in keyed:
        assert "no-store" in response["Cache-Control"]
    for response, own_key in zip(keyed, keys, strict=True):
        text = everything_in(response)
        assert [s for s in secrets + keys if s in text and s != own_key] == []
    for response in others:
        text = everything_in(response)
        assert response.status_code in (200, 302)
        assert [s for s in secrets + keys if s in text] == []
    logged = "\n".join(f"{record.getMessage()} {record.__dict__}" for record in caplog.records)
    assert caplog.records  # the client did log its calls
    assert [s for s in secrets + keys if s in logged] == []
    audit = str(list(AccessKeyMint.objects.values()))
    assert AccessKeyMint.objects.count() >= len(keyed)
    assert [s for s in secrets + keys if s in audit] == []
