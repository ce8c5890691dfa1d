"""A request code a manager quotes finds its lines in the JSON logs, portal and worker.

The real processes, with LOG_FORMAT=json: the portal under gunicorn with
deploy/gunicorn.conf.py (and one page that fails like a bug, from
tests/deploy/portal_with_a_bug.py), `manage.py db_worker`, and the emulator.
The code is read where a person reads it: on the 500 page, on the 502 page of
an e-CRLV the fleet service refused; for work that fails later in the worker (a
CNH lookup, a task that raises), in the `X-Request-Id` of the answer that queued
it. Then only the logs are searched, as an operator would.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from django.test import Client

from tests.conftest import Emulator, start_db_worker_into, stop_db_worker, wait_until
from tests.deploy.conftest import Gunicorn

serving = pytest.mark.django_db(transaction=True)

ENGLISH = {"Accept-Language": "en"}
# The request code on an error page, in whatever language the page is.
CODE = re.compile(r'data-testid="request-code">[^<]*<code>([^<]+)</code>')
SECRET = "demo-secret-key"  # the emulator's FLEET_SECRET_KEY, which the portal runs with
CPF = "52998224725"


def json_lines(path: Path) -> list[dict[str, Any]]:
    """Every line of a log file, each of which must be one JSON object."""
    return [json.loads(line) for line in path.read_text().splitlines()]


def of_request(lines: list[dict[str, Any]], code: str) -> list[dict[str, Any]]:
    return [line for line in lines if line["request_id"] == code]


def logged(path: Path, code: str, *, logger: str) -> list[dict[str, Any]]:
    """The lines of request `code` in the log file, once `logger`'s line is there (a
    server writes some lines after the answer has gone)."""
    wait_until(
        lambda: any(line["logger"] == logger for line in of_request(json_lines(path), code)),
        what=f"the line of {logger}",
    )
    return of_request(json_lines(path), code)


@pytest.fixture
def portal(start_gunicorn: Callable[..., Gunicorn], emulator: Emulator, settings: Any) -> Gunicorn:
    """The portal under gunicorn, writing JSON logs, calling the test emulator."""
    return start_gunicorn(
        DJANGO_SETTINGS_MODULE="tests.deploy.portal_with_a_bug",
        # The tests' own key: a session made here (`signed_in`) is valid there.
        DJANGO_SECRET_KEY=settings.SECRET_KEY,
        LOG_FORMAT="json",
        FLEET_BASE_URL=emulator.url,
        FLEET_LOGIN_URL=emulator.login_url,
        # Plain http on loopback: the CSRF cookie must come back to the form's POST.
        CSRF_COOKIE_SECURE="false",
    )


def signed_in(user: Any) -> requests.Session:
    """An HTTP session of `user`'s, signed in through the test database the portal shares."""
    client = Client()
    client.force_login(user)
    http = requests.Session()
    http.headers.update(ENGLISH)
    http.cookies.set("sessionid", client.cookies["sessionid"].value)
    return http


def code_on(page: requests.Response) -> str:
    """The request code the page shows; it is the one the answer's header gives."""
    (code,) = CODE.findall(page.text)
    assert code == page.headers["X-Request-Id"]
    return code


@serving
def test_a_request_code_from_a_500_page_finds_the_request_and_its_error(portal):
    page = requests.get(f"{portal.url}/bug/", headers=ENGLISH, timeout=10)

    assert page.status_code == 500
    code = code_on(page)
    lines = logged(portal.error_log, code, logger="portal.requests")
    (request,) = [line for line in lines if line["logger"] == "portal.requests"]
    assert (request["method"], request["path"], request["status"]) == ("GET", "/bug/", 500)
    assert request["view"] == "bug"
    (error,) = [line for line in lines if line["logger"] == "django.request"]
    assert error["level"] == "ERROR"
    assert "RuntimeError: a bug, next to [REDACTED]" in error["exception"]
    (access,) = logged(portal.access_log, code, logger="gunicorn.access")
    assert '"GET /bug/ HTTP/1.1" 500' in access["message"]
    for log in (portal.error_log, portal.access_log):
        assert SECRET not in log.read_text()


@serving
def test_a_request_code_from_a_502_page_finds_the_fleet_api_call_and_its_trace_id(
    portal, manager, emulator
):
    crlv_request = emulator.control("GET", "crlv/requests")[0]["requestId"]
    emulator.fault("/v2/crlv/requests/{requestId}", status=400)

    page = signed_in(manager).get(f"{portal.url}/crlv/requests/{crlv_request}/", timeout=10)

    assert page.status_code == 502
    code = code_on(page)
    lines = logged(portal.error_log, code, logger="portal.requests")
    (call,) = [line for line in lines if line["logger"] == "fleet.api" and line["level"] == "INFO"]
    assert (call["fleet_route"], call["fleet_status"]) == ("/v2/crlv/requests/{requestId}", 400)
    assert re.fullmatch(r"[0-9a-f]{32}", call["fleet_trace_id"])  # the emulator's trace id
    assert f"trace {call['fleet_trace_id']}" in call["message"]
    (request,) = [line for line in lines if line["logger"] == "portal.requests"]
    assert (request["status"], request["user_id"]) == (502, manager.pk)


@pytest.fixture
def worker_output(emulator: Emulator) -> Iterator[list[str]]:
    """`manage.py db_worker` with LOG_FORMAT=json: its output, line by line as it comes."""
    output: list[str] = []
    worker = start_db_worker_into(output, emulator, worker_id="request-ids", LOG_FORMAT="json")
    yield output
    stop_db_worker(worker)


def worker_lines(output: list[str], code: str, *, logger: str) -> list[dict[str, Any]]:
    """The worker's lines of request `code`, once `logger`'s line is there; every line of
    its output must be one JSON object."""

    def lines() -> list[dict[str, Any]]:
        return of_request([json.loads(line) for line in list(output)], code)

    wait_until(lambda: any(line["logger"] == logger for line in lines()), what=logger)
    return lines()


@serving
def test_a_request_code_of_a_lookup_that_fails_in_the_worker_finds_the_workers_lines(
    portal, manager, emulator, worker_output
):
    http = signed_in(manager)
    form = http.get(f"{portal.url}/drivers/cnh/", timeout=10)
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text).group(1)
    emulator.fault("/v2/cnh/lookup", status=503)

    asked = http.post(
        f"{portal.url}/drivers/cnh/lookup",
        data={"csrfmiddlewaretoken": csrf, "cpf": CPF, "purpose": "periodic"},
        allow_redirects=False,
        timeout=10,
    )

    assert asked.status_code == 302
    code = asked.headers["X-Request-Id"]
    lines = worker_lines(worker_output, code, logger="fleet.tasks")
    (call,) = [line for line in lines if line["logger"] == "fleet.api" and line["level"] == "INFO"]
    assert (call["fleet_route"], call["fleet_status"]) == ("/v2/cnh/lookup", 503)
    assert f"trace {call['fleet_trace_id']}" in call["message"]
    (failure,) = [line for line in lines if line["logger"] == "fleet.cnh"]
    assert failure["level"] == "WARNING"
    assert re.fullmatch(r"CNH lookup \d+ failed after 1 attempt\(s\): .*", failure["message"])
    assert call["fleet_trace_id"] in failure["message"]
    (ended,) = [line for line in lines if line.get("task") == "fleet.tasks.cnh_lookup_run"]
    # The task ran to its end: the lookup's failure is its result, kept on the lookup.
    assert (ended["queue"], ended["status"]) == ("default", "succeeded")
    # The portal's side of the same code: the request that asked for the lookup.
    portal_lines = logged(portal.error_log, code, logger="portal.requests")
    (request,) = [line for line in portal_lines if line["logger"] == "portal.requests"]
    assert (request["method"], request["path"], request["status"]) == (
        "POST",
        "/drivers/cnh/lookup",
        302,
    )
    assert CPF not in "".join(worker_output) + portal.error_log.read_text()


@serving
def test_a_request_code_of_a_task_that_raises_finds_its_traceback_in_the_workers_log(
    portal, worker_output
):
    asked = requests.get(f"{portal.url}/bug/task/", timeout=10)

    assert asked.status_code == 202
    code = asked.headers["X-Request-Id"]
    (ended,) = worker_lines(worker_output, code, logger="fleet.tasks")
    assert (ended["level"], ended["status"]) == ("ERROR", "failed")
    assert ended["task"] == "tests.deploy.urls_with_a_bug.buggy_task"
    assert "RuntimeError: a bug, next to [REDACTED]" in ended["exception"]
    assert SECRET not in "".join(worker_output)
