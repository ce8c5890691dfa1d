"""A manager the directory deactivates is out at once: Chromium signed in through a real
OpenID provider (tests/idp.py), the provider's SCIM client deactivating them over HTTP as
Entra ID sends it, and a fine the platform (the emulator) posts afterwards reaching
neither their mailbox (a real SMTP server) nor their company's webhook receiver."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from allauth.socialaccount.models import SocialAccount
from django.contrib.auth.models import User
from playwright.sync_api import expect

from alerts.models import Alert, AlertPause, AlertStatus, PauseReason
from alerts.services.preferences import alert_preferences_save
from alerts.services.subscriptions import webhook_subscription_create
from fleet.models import WebhookDelivery
from signin.scim.tokens import scim_token_mint
from tests.alerts.conftest import fine
from tests.alerts.receiver import Receiver, serve
from tests.browser.test_sso import sign_in_through_the_provider
from tests.conftest import run_tasks, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

USER_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:User"
PATCH_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:PatchOp"


@pytest.fixture
def receiver(settings: Any) -> Iterator[Receiver]:
    settings.ALERTS_WEBHOOK_ALLOW_PRIVATE = True  # the company's system is on loopback
    receiver = Receiver()
    server = serve(receiver)
    yield receiver
    server.shutdown()
    server.server_close()


@pytest.fixture
def alert_settings(settings: Any, live_server: Any) -> Any:
    settings.FLEET_WEBHOOK_BATCH_SECONDS = 0
    settings.PORTAL_BASE_URL = live_server.url
    return settings


def scim(live_server: Any, token: str, method: str, path: str, body: Any = None) -> Any:
    """One call of the provider's SCIM client to the live portal."""
    answer = requests.request(
        method,
        f"{live_server.url}/scim/v2/{path}",
        data=json.dumps(body) if body is not None else None,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/scim+json"},
        timeout=10,
    )
    return answer


def platform_posts(emulator: Any, live_server: Any, *events: dict[str, Any]) -> None:
    """The platform posts these events to the portal's webhook receiver; the worker runs."""
    before = WebhookDelivery.objects.count()
    emulator.control(
        "POST",
        "webhooks",
        url=f"{live_server.url}/webhooks/fleet/dev-webhook-token/",
        events=list(events),
    )
    wait_until(
        lambda: WebhookDelivery.objects.count() >= before + len(events),
        timeout=20,
        what="the platform's deliveries did not arrive",
    )
    run_tasks()


def test_a_manager_deactivated_over_scim_is_signed_out_and_hears_of_no_later_fine(
    page,
    identity_provider,
    oidc_settings,
    live_server,
    emulator,
    smtp_server,
    receiver,
    alert_settings,
):
    sign_in_through_the_provider(page, identity_provider, "manager")
    expect(page.get_by_role("heading", level=1)).to_have_text("Olá, Marcos")
    manager = User.objects.get(email="manager@example.com")
    alert_preferences_save(user=manager, delivery="immediate")
    _, receiver.secret = webhook_subscription_create(user=manager, url=receiver.url)

    # Before: a fine reaches them by e-mail and by webhook.
    platform_posts(emulator, live_server, fine(1, plate="ABC1D23"))
    smtp_server.mailbox.wait_for(1, timeout=20)
    wait_until(lambda: len(receiver.accepted()) == 1, what="the first webhook was not posted")
    assert smtp_server.mailbox.messages[0]["To"] == "manager@example.com"

    # The directory provisions them (their subject is the externalId) and deactivates them.
    token = scim_token_mint(provider="acme", created_by="test")
    subject = SocialAccount.objects.get(user=manager, provider="acme").uid
    created = scim(
        live_server,
        token,
        "POST",
        "Users",
        {
            "schemas": [USER_SCHEMA],
            "externalId": subject,
            "userName": "manager@example.com",
            "active": True,
        },
    )
    assert created.status_code == 201, created.text
    deactivated = scim(
        live_server,
        token,
        "PATCH",
        f"Users/{created.json()['id']}",
        {
            "schemas": [PATCH_SCHEMA],
            "Operations": [{"op": "Replace", "path": "active", "value": "False"}],
        },
    )
    assert deactivated.status_code == 200, deactivated.text
    assert deactivated.json()["active"] is False

    # Their next page load is the sign-in page.
    page.get_by_role("navigation").get_by_role("link", name="Veículos").click()
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next=/vehicles/$"))
    expect(page.get_by_role("button", name="Entrar com Acme SSO")).to_be_visible()

    # A fine afterwards: no e-mail, no webhook; their records and pause are kept.
    platform_posts(emulator, live_server, fine(2, plate="ABC1D23"))
    run_tasks()
    assert len(smtp_server.mailbox.messages) == 1
    assert len(receiver.deliveries) == 1
    assert not Alert.objects.filter(
        user=manager, fine__external_id="2", status=AlertStatus.SENT
    ).exists()
    assert Alert.objects.filter(user=manager, fine__external_id="1").exists()
    pause = AlertPause.objects.get(user=manager)
    assert (pause.reason, pause.resumed_at) == (PauseReason.DEPROVISIONED, None)
    assert User.objects.get(pk=manager.pk).is_active is False

    # Signing in again (the provider remembers them) is refused: the account is deactivated.
    page.get_by_role("button", name="Entrar com Acme SSO").click()
    expect(page.get_by_text("Sua conta no Portal de Frota foi desativada.")).to_be_visible()
