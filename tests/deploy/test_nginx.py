"""deploy/nginx in front of deploy/gunicorn.conf.py, as shipped, on loopback.

The nginx.conf is only the frame a host provides (ports, temporary folders, the
upstream's address, the static folder; `bench.nginx`, which the soak uses too):
it includes the shipped fleet-portal-http.conf and fleet-portal-server.conf,
which hold every rule.
"""

from __future__ import annotations

import json
import os
import re
import socket
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests

from bench.nginx import NGINX, Nginx
from bench.nginx import start_nginx as start_nginx_
from bench.servers import ServerFailed, stop
from fleet.models import WebhookDelivery
from tests.conftest import wait_until
from tests.deploy.conftest import TOKEN, Gunicorn

serving = pytest.mark.django_db(transaction=True)

pytestmark = pytest.mark.skipif(
    not os.path.exists(NGINX) and not os.environ.get("CI"),
    reason="nginx (Debian's package) is not installed: `make nginx` installs it",
)

STATIC_NAME = "css/portal.0123456789ab.css"
SLOW_CONNECTIONS = 20


@pytest.fixture
def start_nginx(tmp_path: Path) -> Iterator[Callable[[Gunicorn], Nginx]]:
    """nginx with deploy/nginx as shipped (bench.nginx's frame) in front of a gunicorn."""
    servers: list[Nginx] = []

    def start(upstream: Gunicorn) -> Nginx:
        static = tmp_path / "staticfiles"
        (static / "css").mkdir(parents=True)
        (static / STATIC_NAME).write_text("body { color: #123; }\n")
        try:
            server = start_nginx_(tmp_path, upstream=upstream.port, static=static)
        except ServerFailed as error:
            pytest.fail(str(error))
        servers.append(server)
        return server

    yield start
    for server in servers:
        stop(server.process)


def _slow_connections(port: int, count: int) -> list[socket.socket]:
    """`count` connections that send the start of a request and then nothing (slowloris)."""
    connections = []
    for _ in range(count):
        connection = socket.create_connection(("127.0.0.1", port), timeout=5)
        connection.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        connections.append(connection)
    return connections


def _deliver(url: str, body: bytes, **headers: str) -> requests.Response:
    return requests.post(
        f"{url}/webhooks/fleet/{TOKEN}/",
        data=body,
        headers={"Content-Type": "application/json", **headers},
        timeout=10,
    )


@serving
def test_slow_clients_stall_gunicorn_alone_but_not_behind_nginx(start_gunicorn, start_nginx):
    portal = start_gunicorn(workers=2)
    proxy = start_nginx(portal)

    slow = _slow_connections(proxy.port, SLOW_CONNECTIONS)
    try:
        # Each answer within 5 s, where one takes milliseconds: a request stalled behind
        # the slow clients would wait for them to be dropped (nginx's 10 s
        # client_header_timeout), or for ever, and end in requests.Timeout.
        answers = [requests.get(f"{proxy.url}/healthz", timeout=5) for _ in range(20)]
    finally:
        for connection in slow:
            connection.close()
    # The same slow connections straight to gunicorn's two sync workers: nothing gets in.
    slow = _slow_connections(portal.port, SLOW_CONNECTIONS)
    try:
        with pytest.raises(requests.Timeout):
            requests.get(f"{portal.url}/healthz", timeout=3)
    finally:
        for connection in slow:
            connection.close()

    assert [answer.status_code for answer in answers] == [200] * 20


@serving
def test_a_delivery_is_stored_with_the_address_nginx_saw_not_the_one_claimed(
    start_gunicorn, start_nginx
):
    portal = start_gunicorn(FLEET_WEBHOOK_PROXY_COUNT="1")
    proxy = start_nginx(portal)

    body = json.dumps({"frame": {"id": 7, "treated": False}}).encode()
    answer = _deliver(proxy.url, body, **{"X-Forwarded-For": "203.0.113.7"})

    assert answer.status_code == 202
    delivery = WebhookDelivery.objects.get()
    assert delivery.source_address == "127.0.0.1"
    assert delivery.headers["X-Forwarded-For"] == "203.0.113.7, 127.0.0.1"


@serving
def test_a_body_over_the_portals_limit_is_refused_by_nginx(start_gunicorn, start_nginx):
    proxy = start_nginx(start_gunicorn())

    too_large = _deliver(proxy.url, b"{" + b" " * (256 * 1024) + b"}")

    assert too_large.status_code == 413
    assert WebhookDelivery.objects.count() == 0  # never reached the portal


@serving
def test_sign_in_attempts_are_rate_limited_per_address(start_gunicorn, start_nginx):
    proxy = start_nginx(start_gunicorn())

    statuses = [
        requests.post(f"{proxy.url}/accounts/login/", data={}, timeout=10).status_code
        for _ in range(15)
    ]
    page = requests.get(f"{proxy.url}/healthz", timeout=10)

    assert statuses.count(429) >= 3  # a burst of 10, then 10 a minute
    assert 429 not in statuses[:10]
    assert page.status_code == 200  # the rest of the portal is not limited


@serving
def test_scim_requests_are_rate_limited_per_address_before_the_portal(start_gunicorn, start_nginx):
    """A flood to /scim/ is cut by nginx (600 a minute, a burst of 120), before the portal:
    the portal's own limit is out of the way here, so every 429 is nginx's."""
    proxy = start_nginx(start_gunicorn(workers=2, SCIM_REQUESTS_PER_MINUTE="100000"))
    url = f"{proxy.url}/scim/v2/Users"

    burst = [requests.get(url, timeout=10) for _ in range(120)]
    # Then eight at a time, past the rate however slow the machine, until nginx says no.
    flood: list[requests.Response] = []
    with ThreadPoolExecutor(max_workers=8) as pool:
        while len(flood) < 2000 and not any(a.status_code == 429 for a in flood):
            flood += pool.map(lambda _: requests.get(url, timeout=10), range(80))
    page = requests.get(f"{proxy.url}/healthz", timeout=10)

    assert {answer.status_code for answer in burst} == {401}  # the burst: all let through
    assert {answer.status_code for answer in flood} == {401, 429}  # the portal's, or nginx's
    assert all(
        "json" not in a.headers.get("Content-Type", "") for a in flood if a.status_code == 429
    )
    assert page.status_code == 200  # the rest of the portal is not limited


@serving
def test_static_files_are_served_by_nginx_with_a_year_of_caching(start_gunicorn, start_nginx):
    proxy = start_nginx(start_gunicorn())

    answer = requests.get(f"{proxy.url}/static/{STATIC_NAME}", timeout=10)

    assert answer.status_code == 200
    assert answer.text == "body { color: #123; }\n"
    assert "max-age=31536000" in answer.headers["Cache-Control"]
    assert "immutable" in answer.headers["Cache-Control"]


@serving
def test_answers_name_no_version_and_logs_hold_no_token_nor_query(start_gunicorn, start_nginx):
    proxy = start_nginx(start_gunicorn())

    page = requests.get(f"{proxy.url}/healthz?probe=secret-query", timeout=10)
    delivered = _deliver(proxy.url, json.dumps({"frame": {"id": 1}}).encode())
    missing = requests.get(f"{proxy.url}/no-such-page/", timeout=10)

    assert (page.status_code, delivered.status_code, missing.status_code) == (200, 202, 404)
    for answer in (page, delivered, missing):
        assert answer.headers["Server"] == "nginx"  # no version, no gunicorn
    access = proxy.access_log.read_text()
    assert TOKEN not in access
    assert "secret-query" not in access
    assert '"POST /webhooks/fleet/[REDACTED]/ HTTP/1.1" 202' in access
    assert '"GET /healthz HTTP/1.1" 200' in access


@serving
def test_nginx_gives_each_request_its_id_over_the_clients_and_both_logs_end_with_it(
    start_gunicorn, start_nginx
):
    portal = start_gunicorn()
    proxy = start_nginx(portal)

    answer = requests.get(
        f"{proxy.url}/healthz", headers={"X-Request-Id": "chosen-by-the-client"}, timeout=10
    )

    request_id = answer.headers["X-Request-Id"]
    assert re.fullmatch(r"[0-9a-f]{32}", request_id)  # nginx's $request_id, not the client's
    for log in (portal.access_log, proxy.access_log):
        wait_until(lambda log=log: request_id in log.read_text(), what=f"the line in {log}")
    (line,) = [row for row in proxy.access_log.read_text().splitlines() if "/healthz" in row]
    assert line.endswith(f'"python-requests/{requests.__version__}" {request_id}')
    (served,) = [row for row in portal.access_log.read_text().splitlines() if request_id in row]
    assert served.endswith(f" {request_id}")  # gunicorn's line, in the text format
    assert "chosen-by-the-client" not in portal.access_log.read_text()
