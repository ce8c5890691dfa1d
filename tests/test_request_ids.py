"""The request id: taken from the proxy when sane, answered, on every log line, carried
into the background tasks a request enqueues; and the JSON log lines, redacted field by field.
"""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterator
from typing import Any

import pytest
from django_tasks_db.models import DBTaskResult
from gunicorn.glogging import SafeAtoms

from portal.gunicorn_logging import AccessRequestIdFilter
from portal.json_logging import JsonFormatter
from portal.lib import request_ids, worker
from portal.lib.redaction import REDACTED, RedactingFilter
from tests.conftest import run_tasks
from tests.test_settings import start

NEW_ID = re.compile(r"[0-9a-f]{32}")
ACCESS_KEY = "AK-7f3c9a1e5b2d4c6e8f0a"


class JsonLines(io.StringIO):
    def objects(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.getvalue().splitlines()]

    def of(self, logger: str) -> list[dict[str, Any]]:
        return [line for line in self.objects() if line["logger"] == logger]


@pytest.fixture
def json_lines() -> Iterator[JsonLines]:
    """What a handler configured as LOG_FORMAT=json configures it (settings.LOGGING) writes."""
    output = JsonLines()
    handler = logging.StreamHandler(output)
    handler.addFilter(request_ids.RequestIdFilter())
    handler.addFilter(RedactingFilter())
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.addHandler(handler)
    yield output
    root.removeHandler(handler)


# --- The id of a request ------------------------------------------------------------------


def test_a_request_without_an_id_is_given_one_and_answers_it(client, db):
    response = client.get("/healthz")

    assert NEW_ID.fullmatch(response["X-Request-Id"])
    assert client.get("/healthz")["X-Request-Id"] != response["X-Request-Id"]


@pytest.mark.parametrize("sent", ["0f2c9d8e7b6a5f4e3d2c1b0a9f8e7d6c", "lb-1.req_42", "x" * 64])
def test_the_id_the_proxy_sent_is_kept_when_it_is_a_sane_token(client, db, sent):
    response = client.get("/healthz", headers={"X-Request-Id": sent})

    assert response["X-Request-Id"] == sent


@pytest.mark.parametrize(
    "sent",
    [
        "x" * 65,
        "abc\ndef",
        "abc\r\nSet-Cookie: a=b",
        "código",
        "<script>alert(1)</script>",
        "two words",
        "",
        "a/b",
    ],
    ids=["too long", "newline", "header injection", "unicode", "markup", "space", "empty", "slash"],
)
def test_a_hostile_id_is_replaced_by_a_new_one(client, db, json_lines, sent):
    response = client.get("/healthz", headers={"X-Request-Id": sent})

    answered = response["X-Request-Id"]
    assert NEW_ID.fullmatch(answered)
    (line,) = json_lines.of("portal.requests")
    assert line["request_id"] == answered
    if sent:
        assert sent not in json_lines.getvalue()


def test_no_id_is_left_over_once_the_request_is_answered(client, db):
    client.get("/healthz", headers={"X-Request-Id": "left-over"})

    assert request_ids.current() is None


def test_each_request_logs_one_line_with_its_fields_and_no_query_string(
    client, django_user_model, json_lines
):
    user = django_user_model.objects.create_user(username="ana")
    client.force_login(user)

    response = client.get("/fines/?q=private-search", headers={"X-Request-Id": "req-fines-1"})

    assert response.status_code == 200
    (line,) = json_lines.of("portal.requests")
    assert line["request_id"] == "req-fines-1"
    assert (line["method"], line["path"], line["status"]) == ("GET", "/fines/", 200)
    assert line["view"] == "fleet:fines"
    assert line["user_id"] == user.pk
    assert isinstance(line["duration_ms"], int)
    assert line["level"] == "INFO"
    assert line["message"].startswith("GET /fines/ -> 200 in ")
    assert "private-search" not in json_lines.getvalue()


def test_the_request_line_of_a_webhook_names_no_token(client, db, settings, json_lines):
    token = settings.FLEET_WEBHOOK_TOKENS[0]

    client.post(f"/webhooks/fleet/{token}/", data="{}", content_type="application/json")

    (line,) = json_lines.of("portal.requests")
    assert line["path"] == f"/webhooks/fleet/{REDACTED}/"
    assert token not in json_lines.getvalue()


def test_the_text_lines_carry_the_request_id(settings):
    handlers = [h for h in logging.getLogger().handlers if type(h) is logging.StreamHandler]
    record = logging.LogRecord("fleet.x", logging.INFO, __file__, 1, "something", None, None)

    with request_ids.bound("req-text-1"):
        assert handlers
        for handler in handlers:
            handler.filter(record)
            assert "[req-text-1] something" in handler.format(record)


def test_gunicorns_access_line_takes_the_id_the_portal_answered_with():
    atoms = SafeAtoms({"s": "200", "{x-request-id}o": "req-access-1"})
    record = logging.LogRecord(
        "gunicorn.access", logging.INFO, __file__, 1, '"%(s)s" %({x-request-id}o)s', (atoms,), None
    )

    AccessRequestIdFilter().filter(record)

    assert vars(record)["request_id"] == "req-access-1"
    assert record.getMessage() == '"200" req-access-1'


# --- JSON lines ------------------------------------------------------------------------------


def test_json_lines_redact_every_field(settings, json_lines):
    secret = settings.FLEET_SECRET_KEY
    log = logging.getLogger("fleet.test")

    with request_ids.bound("req-json-1"):
        log.warning("sent %s with accessKey=%s", secret, ACCESS_KEY)
        log.warning("structured", extra={"detail": f"key {secret}", "nested": [{"k": secret}]})
        try:
            raise RuntimeError(f"refused {secret} accessKey={ACCESS_KEY}")
        except RuntimeError:
            log.exception("it failed")
    log.warning("outside any request")

    lines = json_lines.objects()
    text = json_lines.getvalue()
    assert len(lines) == len(text.splitlines()) == 4
    assert secret not in text
    assert ACCESS_KEY not in text
    assert lines[0]["message"] == f"sent {REDACTED} with accessKey={REDACTED}"
    assert lines[1]["detail"] == f"key {REDACTED}"
    assert lines[1]["nested"] == [{"k": REDACTED}]
    assert "RuntimeError: refused [REDACTED] accessKey=[REDACTED]" in lines[2]["exception"]
    assert [line["request_id"] for line in lines] == ["req-json-1"] * 3 + ["-"]
    for line in lines:
        assert set(line) >= {"time", "level", "logger", "message", "request_id"}
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", line["time"])


def test_json_lines_leave_objects_out_and_stay_one_line_each(json_lines):
    logging.getLogger("fleet.test").warning(
        "first\nsecond\u2028third", extra={"request": object(), "count": 3}
    )

    (line,) = json_lines.getvalue().splitlines()
    parsed = json.loads(line)
    assert parsed["message"] == "first\nsecond\u2028third"
    assert parsed["count"] == 3
    assert "request" not in parsed


def test_log_format_json_makes_every_handler_write_json_without_a_secret():
    code = """
import logging, django
django.setup()
from django.conf import settings
from portal.lib import request_ids
with request_ids.bound("req-sub-1"):
    logging.getLogger("fleet.x").warning("key %s", settings.FLEET_SECRET_KEY)
    logging.getLogger("django.server").info('"GET /x HTTP/1.1" 200 2')
    try:
        raise ValueError("accessKey=AK-7f3c9a1e5b2d4c6e8f0a")
    except ValueError:
        logging.getLogger("django.request").exception("Internal Server Error: /x")
logging.getLogger("django.server").info('"GET /y HTTP/1.1" 200 2')
"""
    result = start(code=code, LOG_FORMAT="json")

    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stderr.splitlines()]
    assert [(line["logger"], line["request_id"]) for line in lines] == [
        ("fleet.x", "req-sub-1"),
        ("django.server", "req-sub-1"),
        ("django.request", "req-sub-1"),
        ("django.server", "-"),
    ]
    assert "demo-secret-key" not in result.stderr
    assert ACCESS_KEY not in result.stderr
    assert "ValueError: accessKey=[REDACTED]" in lines[2]["exception"]


def test_an_unknown_log_format_stops_start_up_naming_the_variable():
    result = start(LOG_FORMAT="xml")

    assert result.returncode != 0
    assert "LOG_FORMAT must be one of text, json." in result.stderr


# --- Background tasks ----------------------------------------------------------------------


@worker.task()
def echo_request_id() -> str | None:
    """The request id this task runs with."""
    return request_ids.current()


@worker.task()
def relay() -> None:
    """Enqueue `echo_request_id`, from inside a task."""
    worker.enqueue(f"{__name__}.echo_request_id")


@worker.task()
def fail_with(message: str) -> None:
    raise RuntimeError(message)


@pytest.mark.django_db(transaction=True)
def test_a_task_enqueued_in_a_request_keeps_its_id_as_a_keyword_argument():
    with request_ids.bound("req-task-1"):
        worker.enqueue(f"{__name__}.fail_with", "a message")
    worker.enqueue(f"{__name__}.fail_with", "another")

    first, second = DBTaskResult.objects.order_by("enqueued_at")
    # django.tasks' own door: the id is an argument, stored as the package stores them.
    assert first.args_kwargs == {"args": ["a message"], "kwargs": {"request_id": "req-task-1"}}
    assert second.args_kwargs == {"args": ["another"], "kwargs": {}}  # no request, no id
    assert (first.task_result.args, first.task_result.kwargs) == (
        ["a message"],
        {"request_id": "req-task-1"},
    )


def test_the_task_runs_with_the_id_and_never_sees_it():
    assert echo_request_id.call(request_id="req-task-9") == "req-task-9"
    assert echo_request_id.call() is None
    # An id not to trust in a log line (one that reached the row some other way): none.
    assert echo_request_id.call(request_id="a\nforged line") is None
    assert request_ids.current() is None


@pytest.mark.django_db(transaction=True)
def test_the_worker_runs_a_task_and_those_it_enqueues_with_the_requests_id(json_lines):
    with request_ids.bound("req-task-2"):
        worker.enqueue(f"{__name__}.relay")

    assert run_tasks() == 2

    echoed = DBTaskResult.objects.get(task_path=f"{__name__}.echo_request_id")
    assert echoed.return_value == "req-task-2"
    assert echoed.args_kwargs["kwargs"] == {"request_id": "req-task-2"}
    assert request_ids.current() is None
    ends = json_lines.of("fleet.tasks")
    assert [(line["task"], line["status"]) for line in ends] == [
        (f"{__name__}.relay", "succeeded"),
        (f"{__name__}.echo_request_id", "succeeded"),
    ]
    for line in ends:
        assert line["request_id"] == "req-task-2"
        assert line["queue"] == "default"
        assert line["level"] == "INFO"
        assert isinstance(line["duration_ms"], int)
    assert ends[1]["task_id"] == str(echoed.id)


@pytest.mark.django_db(transaction=True)
def test_a_failed_task_logs_its_redacted_exception_with_the_request_id(settings, json_lines):
    with request_ids.bound("req-task-3"):
        worker.enqueue(f"{__name__}.fail_with", f"refused {settings.FLEET_SECRET_KEY}")

    run_tasks()

    (line,) = json_lines.of("fleet.tasks")
    assert (line["level"], line["status"], line["request_id"]) == ("ERROR", "failed", "req-task-3")
    assert line["message"].startswith(f"task {__name__}.fail_with (queue default, id ")
    assert f"RuntimeError: refused {REDACTED}" in line["exception"]
    assert settings.FLEET_SECRET_KEY not in json_lines.getvalue()


def test_the_worker_uses_only_the_task_packages_public_names():
    """The request id reaches the tasks through public doors: no method of django-tasks-db
    whose name starts with `_` is overridden or called (an upgrade may change those)."""
    import ast
    import inspect

    from django_tasks_db.backend import DatabaseBackend
    from django_tasks_db.management.commands.db_worker import Worker
    from django_tasks_db.models import DBTaskResult as Row

    from portal.lib import tasks_backend

    private = {
        name
        for cls in (DatabaseBackend, Worker, Row)
        for name in dir(cls)
        if name.startswith("_") and not name.startswith("__")
    }
    tree = ast.parse(inspect.getsource(tasks_backend))
    used = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    defined = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
    assert private, "the package has private names to avoid"
    assert (used | defined) & private == set()
