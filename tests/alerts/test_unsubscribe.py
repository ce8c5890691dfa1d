"""The unsubscribe link of the alert e-mails: tied to the address it was sent to, dated,
and a page that shows the address masked and says plainly when a link no longer works."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

import pytest
import time_machine
from django.core import signing
from django.test import Client

from alerts.models import AlertPreferences
from alerts.services.emails import masked_address
from tests.alerts.conftest import fine, post
from tests.conftest import run_tasks

pytestmark = pytest.mark.django_db(transaction=True)


def one_click(client: Client, path: str):
    """The mail client's POST of RFC 8058, with no session and no CSRF token."""
    return client.post(
        path, data="List-Unsubscribe=One-Click", content_type="application/x-www-form-urlencoded"
    )


def unsubscribe_path(client, smtp_server) -> str:
    """A fine posted and e-mailed; the path of that e-mail's unsubscribe link."""
    post(client, fine(len(smtp_server.mailbox.messages) + 1))
    run_tasks()
    message = smtp_server.mailbox.messages[-1]
    return urlsplit(re.fullmatch(r"<(.+)>", message["List-Unsubscribe"]).group(1)).path


def delivery(user) -> str:
    return AlertPreferences.objects.get(user=user).delivery


def test_changing_the_address_ends_the_links_sent_to_the_old_one(client, smtp_server, person):
    user = person("marcos")
    path = unsubscribe_path(client, smtp_server)
    # The address is not in the link, even encoded: only a digest of it.
    token = path.rstrip("/").rpartition("/")[2]
    assert b"marcos" not in signing.b64_decode(token.partition(":")[0].lstrip(".").encode())

    user.email = "MARCOS@Example.com "  # the same address, written otherwise
    user.save()
    assert Client().get(path).status_code == 200

    user.email = "marcos.novo@example.com"
    user.save()
    anonymous = Client()
    page = anonymous.get(path)
    assert page.status_code == 410
    assert 'data-testid="unsubscribe-stale"' in page.text
    assert 'href="/account/alerts/"' in page.text  # where to change alerts, once signed in
    assert one_click(anonymous, path).status_code == 410
    assert delivery(user) == "immediate"

    # A link sent to the new address works.
    new_path = unsubscribe_path(client, smtp_server)
    assert one_click(anonymous, new_path).status_code == 200
    assert delivery(user) == "off"


def test_a_link_expires_after_the_days_of_the_setting(client, smtp_server, person, settings):
    settings.ALERTS_UNSUBSCRIBE_DAYS = 90
    sent = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
    with time_machine.travel(sent, tick=False) as clock:
        user = person("marcos")
        path = unsubscribe_path(client, smtp_server)

        clock.move_to(sent + timedelta(days=90) - timedelta(minutes=1))
        assert Client().get(path).status_code == 200

        clock.move_to(sent + timedelta(days=90, seconds=1))
        anonymous = Client()
        page = anonymous.get(path)
        assert page.status_code == 410
        assert 'data-testid="unsubscribe-expired"' in page.text
        assert "90" in page.text
        assert one_click(anonymous, path).status_code == 410

    assert delivery(user) == "immediate"


def test_the_confirmation_page_masks_the_address(client, smtp_server, person):
    person("marcos")
    path = unsubscribe_path(client, smtp_server)
    anonymous = Client()

    page = anonymous.get(path)
    done = one_click(anonymous, path)

    for answer in (page, done):
        assert answer.status_code == 200
        assert "m•••@example.com" in answer.text
        assert "marcos" not in answer.text


@pytest.mark.parametrize(
    ("address", "shown"),
    [
        ("marcos@example.com", "m•••@example.com"),
        ("ana@example.com", "a•••@example.com"),
        ("jo@example.com", "•••@example.com"),  # one shown of two would be half of it
        ("x@example.com", "•••@example.com"),
        ("ana.maria.souza@frota.example", "a•••@frota.example"),  # the length is not told
    ],
)
def test_how_short_and_long_addresses_are_masked(address, shown):
    assert masked_address(address) == shown
