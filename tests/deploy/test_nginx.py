"""deploy/nginx in front of deploy/gunicorn.conf.py, as shipped, on loopback.

The test's nginx.conf is only the frame a host provides (ports, temporary
folders, the upstream's address, the static folder): it includes the shipped
fleet-portal-http.conf and fleet-portal-server.conf, which hold every rule.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from bench.support import stop
from fleet.models import WebhookDelivery
from tests.conftest import ROOT
from tests.deploy.conftest import TOKEN, Gunicorn

serving = pytest.mark.django_db(transaction=True)

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
pytestmark = pytest.mark.skipif(
    not os.path.exists(NGINX) and not os.environ.get("CI"),
    reason="nginx (Debian's package) is not installed: `make nginx` installs it",
)

STATIC_NAME = "css/portal.0123456789ab.css"
SLOW_CONNECTIONS = 20


@dataclass
class Nginx:
    url: str
    port: int
    access_log: Path
    error_log: Path


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _frame(tmp_path: Path, *, port: int, upstream: int, static: Path) -> str:
    for folder in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (tmp_path / "nginx-temp" / folder).mkdir(parents=True, exist_ok=True)
    temp = tmp_path / "nginx-temp"
    deploy = ROOT / "deploy" / "nginx"
    # As root, nginx's workers would run as nobody, who cannot read pytest's folders.
    user = "user root;" if os.geteuid() == 0 else ""
    return f"""
{user}
worker_processes 1;
daemon off;
pid {tmp_path}/nginx.pid;
error_log {tmp_path}/nginx-error.log warn;
events {{ worker_connections 512; }}
http {{
    include /etc/nginx/mime.types;
    client_body_temp_path {temp}/body;
    proxy_temp_path {temp}/proxy;
    fastcgi_temp_path {temp}/fastcgi;
    uwsgi_temp_path {temp}/uwsgi;
    scgi_temp_path {temp}/scgi;
    include {deploy}/fleet-portal-http.conf;
    upstream fleet_portal {{ server 127.0.0.1:{upstream}; keepalive 16; }}
    server {{
        listen 127.0.0.1:{port};
        access_log {tmp_path}/nginx-access.log fleet_portal;
        set $fleet_static {static}/;
        include {deploy}/fleet-portal-server.conf;
    }}
}}
"""


@pytest.fixture
def start_nginx(tmp_path: Path) -> Iterator[Callable[[Gunicorn], Nginx]]:
    processes: list[subprocess.Popen[bytes]] = []

    def start(upstream: Gunicorn) -> Nginx:
        static = tmp_path / "staticfiles"
        (static / "css").mkdir(parents=True)
        (static / STATIC_NAME).write_text("body { color: #123; }\n")
        port = _free_port()
        config = tmp_path / "nginx.conf"
        config.write_text(_frame(tmp_path, port=port, upstream=upstream.port, static=static))
        process = subprocess.Popen(
            [NGINX, "-c", str(config), "-p", str(tmp_path)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        processes.append(process)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if process.poll() is not None:
                pytest.fail(
                    f"nginx stopped: {process.stderr.read().decode() if process.stderr else ''}"
                )
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                time.sleep(0.05)
        else:
            pytest.fail("nginx did not start")
        return Nginx(
            f"http://127.0.0.1:{port}",
            port,
            tmp_path / "nginx-access.log",
            tmp_path / "nginx-error.log",
        )

    yield start
    for process in processes:
        stop(process)


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
        started = time.monotonic()
        answers = [requests.get(f"{proxy.url}/healthz", timeout=5) for _ in range(20)]
        behind_nginx = time.monotonic() - started
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
    assert behind_nginx < 5


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
