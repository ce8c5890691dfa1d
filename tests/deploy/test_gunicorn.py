"""deploy/gunicorn.conf.py: the portal under gunicorn as in production, on loopback.

Its access and error logs (files, with Django's own log lines captured into
the error log) never show a webhook token, right or wrong, nor a query string;
its answers name no server software.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import requests

from fleet.models import WebhookDelivery
from portal.lib.redaction import REDACTED
from tests.conftest import ROOT, wait_until
from tests.deploy.conftest import TOKEN, Gunicorn

# The server writes to the test database, from its own process.
serving = pytest.mark.django_db(transaction=True)

WRONG_TOKEN = secrets.token_urlsafe(32)


def _post(url: str) -> requests.Response:
    body = json.dumps({"frame": {"id": 1, "treated": False}})
    return requests.post(url, data=body, headers={"Content-Type": "application/json"}, timeout=10)


def _send_raw(port: int, request: bytes) -> bytes:
    """`request` as it is, on a connection of its own; what the server answered."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(request)
        answer = b""
        while chunk := connection.recv(4096):
            answer += chunk
    return answer


@serving
def test_it_logs_no_webhook_token_and_no_query_string(gunicorn: Gunicorn) -> None:
    accepted = _post(f"{gunicorn.url}/webhooks/fleet/{TOKEN}/")
    refused = _post(f"{gunicorn.url}/webhooks/fleet/{WRONG_TOKEN}/")
    queried = requests.get(f"{gunicorn.url}/healthz?probe=query-{TOKEN}", timeout=10)
    # A request line gunicorn refuses (a DEL in the path): an error-log line with the path.
    malformed = _send_raw(
        gunicorn.port, f"POST /webhooks/fleet/{TOKEN}/\x7f HTTP/1.1\r\nHost: x\r\n\r\n".encode()
    )

    assert (accepted.status_code, refused.status_code, queried.status_code) == (202, 404, 200)
    assert malformed.startswith(b"HTTP/1.1 400 ")
    assert WebhookDelivery.objects.count() == 1  # the right token was let in
    access, errors = gunicorn.access_log.read_text(), gunicorn.error_log.read_text()
    for log in (access, errors):
        assert TOKEN not in log
        assert WRONG_TOKEN not in log
    assert f'"POST /webhooks/fleet/{REDACTED}/ HTTP/1.1" 202 ' in access
    assert f'"POST /webhooks/fleet/{REDACTED}/ HTTP/1.1" 404 ' in access
    assert '"GET /healthz HTTP/1.1" 200 ' in access
    assert "probe=" not in access
    assert f"Not Found: /webhooks/fleet/{REDACTED}/" in errors  # Django's line, captured
    (invalid,) = [line for line in errors.splitlines() if "Invalid request from ip=" in line]
    assert f"/webhooks/fleet/{REDACTED}/" in invalid


@serving
def test_its_answers_name_no_server_software(gunicorn: Gunicorn) -> None:
    response = requests.get(f"{gunicorn.url}/healthz", timeout=10)

    server = response.headers.get("Server", "")
    assert "gunicorn" not in server.lower()
    assert not re.search(r"\d", server)  # no version of anything


def _configured(tmp_path: Path, **environment: str) -> subprocess.CompletedProcess[str]:
    """gunicorn's settings as deploy/gunicorn.conf.py makes them (the application loaded
    and nothing served)."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "--config",
            str(ROOT / "deploy" / "gunicorn.conf.py"),
            "--check-config",
            "--print-config",
        ],
        cwd=tmp_path,
        env={name: value for name, value in os.environ.items() if not name.startswith("GUNICORN_")}
        | {
            "DJANGO_SETTINGS_MODULE": "portal.settings",
            "DJANGO_ENV_FILE": "",
            "DJANGO_SECRET_KEY": "gunicorn-test-secret-key-long-enough",
        }
        | environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(("variable", "workers"), [(None, 4), ("3", 3)])
def test_it_takes_the_number_of_workers_from_the_environment(tmp_path, variable, workers):
    result = _configured(tmp_path, **({"GUNICORN_WORKERS": variable} if variable else {}))

    assert result.returncode == 0, result.stderr
    lines = (line.partition("=") for line in result.stdout.splitlines())
    settings = {name.strip(): value.strip() for name, _, value in lines}
    assert settings["workers"] == str(workers)
    assert (settings["timeout"], settings["graceful_timeout"]) == ("90", "30")
    assert settings["wsgi_app"] == "portal.wsgi:application"


def test_a_number_of_workers_that_is_not_a_whole_number_stops_it_saying_so(tmp_path):
    result = _configured(tmp_path, GUNICORN_WORKERS="many")

    assert result.returncode != 0
    assert "GUNICORN_WORKERS must be a whole number, at least 1." in result.stderr


def test_a_path_cannot_write_a_line_of_its_own_into_the_text_log(start_gunicorn):
    """A decoded %0A in a path, written as it is, would end the request's line there and
    start one the client wrote: escaped, as Django escapes its own lines."""
    portal = start_gunicorn(LOG_FORMAT="text")
    forged = "2026-11-27 12:00:00,000 INFO portal.requests [x] GET /admin/ -> 200"

    response = requests.get(f"{portal.url}/nowhere%0D%0A{forged.replace(' ', '%20')}", timeout=10)

    assert response.status_code == 404
    wait_until(lambda: "portal.requests" in portal.error_log.read_text(), what="the request line")
    lines = portal.error_log.read_text().splitlines()
    assert not any(line.startswith(forged) for line in lines), lines
    (line,) = [line for line in lines if "-> 404 in" in line]  # the portal's request line
    assert "GET /nowhere\\r\\n2026-11-27 12:00:00,000 INFO" in line


@pytest.mark.django_db(transaction=True)
def test_the_scim_rate_holds_across_the_portals_processes_whatever_the_cache(start_gunicorn):
    """Two portal processes on one database, each with its own cache (the default, as
    under `make run`), asked in turn: an address gets SCIM_REQUESTS_PER_MINUTE requests
    a minute in all, not that many per process."""
    environment = {"SCIM_REQUESTS_PER_MINUTE": "5", "FLEET_ENVIRONMENT": "emulator"}
    portals = [start_gunicorn(**environment), start_gunicorn(**environment)]
    assert portals[0].port != portals[1].port

    answered: Counter[tuple[int, int]] = Counter()  # (minute, status)
    for number in range(24):
        before = int(time.time() // 60)
        status = requests.get(f"{portals[number % 2].url}/scim/v2/Users", timeout=10).status_code
        if int(time.time() // 60) == before:  # not at the turn of a minute
            answered[before, status] += 1

    minutes = {minute for minute, _ in answered}
    refused = {minute: answered[minute, 401] for minute in minutes}
    assert all(count <= 5 for count in refused.values()), answered  # 10 with a cache each
    assert max(refused.values()) == 5, answered
    assert {status for _, status in answered} == {401, 429}
