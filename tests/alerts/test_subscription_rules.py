"""Which webhook subscriptions a user may make: addresses that could lead back into the
portal's network are refused, whatever their IPv6 disguise; outside the emulator only
https on the allowed ports; a few subscriptions per user, and a few attempts at a time.

IP literals keep these tests off the network: nothing here needs a resolver."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.db import connection
from django.test import Client

from alerts.models import WebhookAttempt, WebhookSubscription
from bench.soak_subscribers import HostileServer, status
from tests.alerts.conftest import fine, post
from tests.conftest import run_tasks
from tests.test_settings import start

pytestmark = pytest.mark.django_db(transaction=True)

PAGE = "/account/alerts/webhooks/"
PUBLIC = "https://8.8.8.8/hook"  # a global address: allowed, and never posted to here


@pytest.fixture
def manager(client, person):
    user = person("marcos", delivery="off")
    client.force_login(user)
    client.defaults["HTTP_ACCEPT_LANGUAGE"] = "en"  # the messages as written
    return user


def add(client, url: str):
    return client.post(PAGE, {"url": url})


# --- Addresses ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://[::127.0.0.1]/hook",  # IPv4-compatible: the loopback in IPv6 clothes
        "http://[::10.0.0.1]/hook",
        "http://[64:ff9b::7f00:1]/hook",  # NAT64 of 127.0.0.1
        "http://[64:ff9b::808:808]/hook",  # NAT64 at all: where it leads is the gateway's choice
        "http://[::ffff:127.0.0.1]/hook",  # IPv4-mapped
        "http://[::ffff:8.8.8.8]/hook",
        "http://[2002:7f00:1::1]/hook",  # 6to4 of 127.0.0.1
        "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/hook",  # Teredo, client 127.0.0.1
        "http://[fec0::1]/hook",  # site-local, which ipaddress calls global
        "http://[ff0e::1]/hook",  # multicast
        "http://224.0.0.1/hook",
        "http://0.0.0.0/hook",  # "this host": Linux connects it to the loopback
        "http://100.64.0.1/hook",  # carrier-grade NAT
        "http://[fd00::1]/hook",
    ],
)
def test_addresses_disguised_as_public_are_refused(client, manager, settings, url):
    settings.ALERTS_WEBHOOK_ALLOW_PRIVATE = False

    page = add(client, url)

    assert page.status_code == 400
    assert 'class="field-error"' in page.text
    assert not WebhookSubscription.objects.exists()


def test_a_public_address_is_accepted(client, manager, settings):
    settings.ALERTS_WEBHOOK_ALLOW_PRIVATE = False

    assert add(client, PUBLIC).status_code == 200
    assert add(client, "https://[2001:4860:4860::8888]/hook").status_code == 200


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://8.8.8.8/hook", "must start with https://"),
        ("https://8.8.8.8:8443/hook", "must use one of these ports: 443"),
        ("https://8.8.8.8:80/hook", "must use one of these ports: 443"),
    ],
)
def test_outside_the_emulator_only_https_on_port_443_is_accepted(
    client, manager, settings, url, message
):
    settings.FLEET_ENVIRONMENT = "production"

    page = add(client, url)

    assert page.status_code == 400
    assert message in page.text
    assert not WebhookSubscription.objects.exists()
    assert add(client, PUBLIC).status_code == 200


def test_the_ports_an_operator_allows_are_accepted(client, manager, settings):
    settings.FLEET_ENVIRONMENT = "production"
    settings.ALERTS_WEBHOOK_PORTS = [443, 8443]

    assert add(client, "https://8.8.8.8:8443/hook").status_code == 200
    assert add(client, "https://8.8.8.8:9443/hook").status_code == 400


def test_an_address_the_rules_refuse_later_is_not_posted_to(client, manager, settings):
    settings.ALERTS_WEBHOOK_ALLOW_PRIVATE = True
    receiver = HostileServer(status(204))
    assert add(client, receiver.url()).status_code == 200  # http, any port: the emulator's rules
    settings.FLEET_ENVIRONMENT = "sandbox"  # the same subscription, outside the emulator

    post(client, fine(1))
    run_tasks()
    receiver.stop()

    assert receiver.connections == 0
    (attempt,) = WebhookAttempt.objects.all()
    assert attempt.error.startswith("refused:")


# --- How many, how often --------------------------------------------------------------


def test_a_user_holds_at_most_the_subscriptions_the_setting_allows(client, manager, settings):
    settings.ALERTS_WEBHOOKS_PER_USER = 2
    assert add(client, PUBLIC).status_code == 200
    assert add(client, PUBLIC + "2").status_code == 200

    page = add(client, PUBLIC + "3")

    assert page.status_code == 400
    assert "You already have 2 webhooks, the most one person may have." in page.text
    assert "whsec_" not in page.text
    assert WebhookSubscription.objects.count() == 2


def test_two_requests_at_once_cannot_pass_the_limit_together(manager, settings):
    settings.ALERTS_WEBHOOKS_PER_USER = 1
    start_together = threading.Barrier(2)
    statuses: list[int] = []

    def attempt(number: int) -> None:
        browser = Client()
        browser.force_login(manager)
        start_together.wait()
        try:
            statuses.append(browser.post(PAGE, {"url": f"{PUBLIC}{number}"}).status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=attempt, args=(number,)) for number in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    assert sorted(statuses) == [200, 400]
    assert WebhookSubscription.objects.count() == 1


def test_attempts_to_subscribe_are_limited_and_the_page_says_when_to_try_again(
    client, manager, settings
):
    settings.ALERTS_WEBHOOK_ALLOW_PRIVATE = False
    with time_machine.travel(datetime(2026, 11, 22, 12, 0, 30, tzinfo=UTC), tick=False) as clock:
        for _ in range(10):  # refused addresses count too: each was looked up
            assert add(client, "http://10.0.0.1/hook").status_code == 400

        page = add(client, PUBLIC)

        assert page.status_code == 429
        assert page.headers["Retry-After"] == str(10 * 60 - 30)
        assert "Too many attempts to add a webhook. Try again in 10 minutes." in page.text
        assert not WebhookSubscription.objects.exists()

        clock.shift(timedelta(minutes=9, seconds=30))  # the next window
        assert add(client, PUBLIC).status_code == 200


def test_one_users_attempts_do_not_count_against_another(client, manager, person):
    # The clock held inside one window: a window that turns mid-test would forgive all.
    with time_machine.travel(datetime(2026, 11, 22, 12, 0, 30, tzinfo=UTC), tick=False):
        for _ in range(10):
            add(client, "http://10.0.0.1/hook")
        assert add(client, PUBLIC).status_code == 429

        client.force_login(person("ana", delivery="off"))
        assert add(client, PUBLIC).status_code == 200


# --- Configuration --------------------------------------------------------------------


@pytest.mark.parametrize(
    "value", ["https", "443;8443", "0", "70000", "\N{FULLWIDTH DIGIT FOUR}43", "443,-1"]
)
def test_a_bad_list_of_ports_stops_start_up_naming_the_variable_not_the_value(value):
    result = start(ALERTS_WEBHOOK_PORTS=value)

    assert result.returncode != 0
    assert result.stderr.strip().splitlines()[-1] == (
        "django.core.exceptions.ImproperlyConfigured: ALERTS_WEBHOOK_PORTS must list port "
        "numbers (1 to 65535) separated by commas."
    )


def test_the_webhook_limits_are_read_from_the_environment():
    code = (
        "from django.conf import settings; "
        "print(settings.ALERTS_WEBHOOK_PORTS, settings.ALERTS_WEBHOOKS_PER_USER)"
    )

    assert start(code=code).stdout.strip() == "[443] 5"
    result = start(code=code, ALERTS_WEBHOOK_PORTS="443, 8443", ALERTS_WEBHOOKS_PER_USER="2")
    assert result.stdout.strip() == "[443, 8443] 2"
