"""Shared fixtures: a real emulator process on loopback, and its control surface."""

from __future__ import annotations

import logging
import os
import random
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import requests
from django.core.servers.basehttp import ThreadedWSGIServer
from django.test.testcases import LiveServerThread
from pytest_django import plugin as django_plugin
from pytest_django.live_server_helper import LiveServer

ROOT = Path(__file__).resolve().parent.parent
_LISTENING = re.compile(r"listening on (http://\S+)")


class Emulator:
    """A running `python -m emulator` and the calls of its control surface."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.login_url = f"{url}/app"
        self.http = requests.Session()

    def control(self, method: str, path: str, /, **json: Any) -> Any:
        response = self.http.request(
            method, f"{self.url}/_emulator/{path}", json=json or None, timeout=10
        )
        response.raise_for_status()
        return response.json()

    def reset(self) -> None:
        self.control("POST", "reset")

    @property
    def minimal(self) -> bool:
        """Whether the emulator answers only what the spec promises (its minimal mode)."""
        return bool(self.control("GET", "mode")["minimal"])

    def fault(self, route: str, **fault: Any) -> None:
        self.control("POST", "faults", route=route, **fault)

    def advance(self, seconds: float) -> None:
        self.control("POST", "clock", advance=seconds)

    def switch_handovers(self, enabled: bool) -> None:
        """Vehicles change hands as the emulator's clock moves (on), or keep their own
        driver (off, the start state; a reset switches them back)."""
        self.control("POST", "handovers", enabled=enabled)

    def handovers(self, since: str, until: str, plate: str | None = None) -> list[dict[str, Any]]:
        """The emulator's hand-overs with since < at <= until (ISO 8601), by time then plate:
        `{"plate", "at", "from", "to"}` (its schedule, whether switched on or not)."""
        params = {"since": since, "until": until} | ({"plate": plate} if plate else {})
        response = self.http.get(f"{self.url}/_emulator/handovers", params=params, timeout=30)
        response.raise_for_status()
        listed: list[dict[str, Any]] = response.json()["handovers"]
        return listed

    def calls(self, key: str) -> int:
        counts: dict[str, int] = self.control("GET", "stats")["calls"]
        return counts.get(key, 0)

    def requests(self) -> list[dict[str, Any]]:
        recorded: list[dict[str, Any]] = self.control("GET", "requests")
        return recorded

    def create_crlv_request(self, plate: str, **options: Any) -> dict[str, Any]:
        created: dict[str, Any] = self.control("POST", "crlv/requests", plate=plate, **options)
        return created

    def _api_headers(self) -> dict[str, str]:
        """The three headers of the demo credentials, signed here (spec 5)."""
        import hashlib
        import hmac

        key = hmac.new(b"demo-secret-key", b"demo-access-token", hashlib.sha256).hexdigest()
        return {"Authorization": "Basic demo-access-token", "Key": key, "cache-control": "no-cache"}

    def vehicles(self) -> list[dict[str, Any]]:
        """The fleet as the API lists it, fetched with the demo credentials."""
        response = self.http.get(
            f"{self.url}/key/list-cars", headers=self._api_headers(), timeout=10
        )
        response.raise_for_status()
        data: list[dict[str, Any]] = response.json()["cars"]["data"]
        return data

    def cnh_licence(self, cpf: str) -> dict[str, Any]:
        """The licence the emulator answers for `cpf` (this call is counted like any other)."""
        response = self.http.post(
            f"{self.url}/v2/cnh/lookup", json={"cpf": cpf}, headers=self._api_headers(), timeout=10
        )
        response.raise_for_status()
        licence: dict[str, Any] = response.json()
        return licence


def start_emulator(*args: str, stderr: bool = False) -> tuple[subprocess.Popen[str], str]:
    """Start an emulator on a free loopback port; return it and its URL (and its stderr
    piped, if asked)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "emulator", "--host", "127.0.0.1", "--port", "0", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE if stderr else None,
        text=True,
    )
    assert process.stdout is not None
    first_line = process.stdout.readline()
    match = _LISTENING.search(first_line)
    if not match:
        process.kill()
        raise RuntimeError(f"the emulator did not start: {first_line!r}")
    return process, match.group(1)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--emulator-mode",
        choices=("normal", "minimal"),
        default="normal",
        help="how the test emulator answers: 'normal', or 'minimal' (exactly what the spec "
        "shows: no member it does not promise, unshown names spelled another way, unknown "
        "members added). `make test` runs the API, view, service and browser suites in both.",
    )
    parser.addoption(
        "--spelling-seed",
        type=int,
        default=None,
        help="the minimal emulator's spelling seed (default: a new one each run, printed above)",
    )
    parser.addoption(
        "--diff-seed",
        type=int,
        default=None,
        help="the seed of the differential walk (tests/views/test_caches_differential.py; "
        "default: the DIFF_SEED variable, else a new one each run, printed above)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "emulator_mode(mode): this test needs the emulator in 'normal' or 'minimal' mode "
        "whatever --emulator-mode says (a test about a member the spec does not promise)",
    )
    if config.getoption("--spelling-seed") is None:
        config.option.spelling_seed = random.randrange(1_000_000)  # noqa: S311 - not secret
    if config.getoption("--diff-seed") is None:
        given = os.environ.get("DIFF_SEED", "")
        config.option.diff_seed = int(given) if given else random.randrange(1_000_000)  # noqa: S311


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Keep Django's order of kinds after any shuffle (`make flake-hunt` runs the suite in
    random orders): tests in a transaction first, then those that commit, whose database is
    emptied after them (the rows the migrations wrote included), then those without one.
    pytest-django sorts them so before any plugin shuffles; sorting again is stable, so
    the shuffled order within each kind stays."""
    django_plugin.pytest_collection_modifyitems(items)


# Lines a test leaves for the end of the run's report (`pytest_terminal_summary`): what a
# walk covered, shown whether it passed or failed, with -q as in CI.
RUN_SUMMARY: list[str] = []


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if RUN_SUMMARY:
        terminalreporter.section("what the walks covered")
        for line in RUN_SUMMARY:
            terminalreporter.write_line(line)


def pytest_report_header(config: pytest.Config) -> list[str]:
    mode = config.getoption("--emulator-mode")
    seed = config.getoption("--spelling-seed")
    return [
        f"emulator mode: {mode}" + (f" (spelling seed {seed})" if mode == "minimal" else ""),
        f"differential walk seed: {config.getoption('--diff-seed')}",
    ]


@pytest.fixture(scope="session")
def emulator_process(pytestconfig: pytest.Config) -> Iterator[str]:
    # The CNH timeout CPF waits 0.2 s here, not the real 60 s, before its 504.
    args = ["--vehicles", "200", "--seed", "1", "--cnh-timeout-wait", "0.2"]
    args += ["--spelling-seed", str(pytestconfig.getoption("--spelling-seed"))]
    if pytestconfig.getoption("--emulator-mode") == "minimal":
        args.append("--minimal")
    process, url = start_emulator(*args)
    yield url
    process.terminate()
    process.wait(timeout=10)


class _PromptServer(ThreadedWSGIServer):
    """Django's test server, answering at once: with Nagle's algorithm on, the body it
    writes after the headers waits for the client's delayed ACK, 40 ms a response on
    Linux loopback (gunicorn and nginx, in production, turn it off too)."""

    def get_request(self) -> tuple[socket.socket, Any]:
        connection, address = super().get_request()
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return connection, address


class _PromptLiveServerThread(LiveServerThread):
    server_class = _PromptServer


@pytest.fixture(scope="session")
def live_server(request: pytest.FixtureRequest) -> Iterator[LiveServer]:
    """pytest-django's live server, on a server that answers at once (`_PromptServer`)."""
    server = LiveServer(
        request.config.getvalue("liveserver")
        or os.getenv("DJANGO_LIVE_TEST_SERVER_ADDRESS")
        or "localhost",
        start=False,
    )
    made = server.thread
    server.thread = _PromptLiveServerThread(
        made.host,
        static_handler=made.static_handler,
        connections_override=made.connections_override,
        port=made.port,
    )
    server.thread.daemon = True
    server.start()
    yield server
    server.stop()


@pytest.fixture
def held_clock(time_machine: Any) -> Any:
    """The portal's wall clock, held at now (the emulator's runs on); move it with `shift`.

    Where a test reads the day or month that the code it checks reads again (the
    dashboard's figures), held so that both are one day even across São Paulo's midnight
    or a month's end."""
    time_machine.move_to(time.time(), tick=False)
    return time_machine


@pytest.fixture
def emulator(emulator_process: str, request: pytest.FixtureRequest) -> Emulator:
    """The session's emulator, reset to its start state (and mode) for this test."""
    running = Emulator(emulator_process)
    running.reset()
    if marker := request.node.get_closest_marker("emulator_mode"):
        running.control("POST", "mode", minimal=marker.args[0] == "minimal")
    return running


@pytest.fixture
def fleet_settings(settings: Any, emulator: Emulator) -> Any:
    """Django settings pointed at the test emulator (its API, web app and origin)."""
    settings.FLEET_BASE_URL = emulator.url
    settings.FLEET_LOGIN_URL = emulator.login_url
    settings.FLEET_LOGIN_ORIGIN = emulator.url
    settings.SECURE_CSP = settings.SECURE_CSP | {
        "frame-src": [emulator.url],
        "form-action": ["'self'", emulator.url],
    }
    return settings


FLEET_EMAIL, FLEET_PASSWORD = "manager@example.com", "demo-password"


def stored_password(account: Any) -> str:
    """A fleet account's encrypted password as the database holds it, past the ORM."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT password_encrypted FROM fleet_fleetaccount WHERE id = %s", [account.pk]
        )
        (value,) = cursor.fetchone()
    return str(value)


@pytest.fixture
def manager(django_user_model: Any, fleet_settings: Any) -> Any:
    """A fleet manager whose fleet login (the emulator's manager) is linked."""
    from fleet.models import FleetAccount

    user = django_user_model.objects.create_user(
        username="manager", password="manager-demo-password", first_name="Marcos"
    )
    account = FleetAccount(user=user, email=FLEET_EMAIL)
    account.set_password(FLEET_PASSWORD)
    account.save()
    return user


@pytest.fixture(autouse=True)
def _fresh_fleet_client(request: pytest.FixtureRequest) -> Iterator[None]:
    """Each test starts cold: its own client, an empty cache (no vehicle list, no
    route cooldown), no vehicle list decoded in this process, no webhook key
    remembered as already recorded, no processing run remembered as asked for
    (the database forgets them between tests), no e-CRLV view reported, and no work
    left for after a response the test never read to its end."""
    from django.core.cache import cache, caches
    from django.core.cache.backends.db import DatabaseCache

    from fleet.services.connection import fleet_clients_forget
    from fleet.services.crlv import crlv_reports_forget
    from fleet.services.scopes import scopes_forget_all
    from fleet.services.vehicle_cache import vehicles_forget
    from fleet.webhooks.receive import deliveries_schedule_forget
    from fleet.webhooks.retention import delivery_bodies_purge_schedule_forget
    from fleet.webhooks.unknown_keys import unknown_keys_forget
    from portal.lib import after_response
    from signin.scim.retention import scim_calls_purge_schedule_forget

    def forget() -> None:
        after_response.pending_forget()
        fleet_clients_forget()
        cache.clear()
        caches["rows"].clear()
        # The cache every process reads: without Redis a table, which a test that may
        # use the database empties (a transactional test's flush of the models' tables
        # leaves it as it was).
        if _database_open(request) or not isinstance(caches["shared"], DatabaseCache):
            caches["shared"].clear()
        vehicles_forget()
        scopes_forget_all()
        unknown_keys_forget()
        deliveries_schedule_forget()
        delivery_bodies_purge_schedule_forget()
        scim_calls_purge_schedule_forget()
        crlv_reports_forget()

    forget()
    yield
    forget()


def _database_open(request: pytest.FixtureRequest) -> bool:
    """Whether the test's `django_db` mark opened the database before this conftest's own
    fixtures (pytest-django's do that), and closes it after them. A test that asks for
    `db` as an argument opens it later: its writes are undone with its transaction."""
    return request.node.get_closest_marker("django_db") is not None


def run_tasks() -> int:
    """Run every background task that is due, here, as `manage.py db_worker --batch` does.

    The real worker's loop (`portal.lib.tasks_backend.Worker`, django-tasks-db's with
    the request id and a line per task), in this process and thread, so that
    time-machine moves its clock; on every queue (webhooks and CNH lookups,
    alerts), one task after the other. Tests that use it need
    `django_db(transaction=True)`: the worker commits as it goes. Returns how
    many tasks ran.
    """
    from django.conf import settings

    from portal.lib.tasks_backend import Worker

    worker = Worker(
        queue_names=list(settings.TASKS["default"]["QUEUES"]),
        interval=0,
        batch=True,
        backend_name="default",
        startup_delay=False,
        max_tasks=None,
        worker_id="pytest",
        excluded_queue_names=[],
    )
    worker.run()
    return worker.ran


class Recorder(logging.Handler):
    """Every record of every logger, formatted as a handler would write it."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
        self.records: list[logging.LogRecord] = []
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        self.lines.append(self.format(record))

    def of(self, name: str) -> list[logging.LogRecord]:
        return [r for r in self.records if r.name == name]


@pytest.fixture
def log_records() -> Iterator[Recorder]:
    """Capture all log records at DEBUG on the root logger.

    The recorder goes first: the portal's own handlers scrub records in place,
    which would hide a leak from a recorder that came after them.
    """
    root = logging.getLogger()
    # Every logger at DEBUG, including those the portal's LOGGING set higher.
    loggers = [root] + [
        logger
        for logger in logging.root.manager.loggerDict.values()
        if isinstance(logger, logging.Logger)
    ]
    levels = {logger: logger.level for logger in loggers}
    for logger in loggers:
        if logger.level != logging.NOTSET:
            logger.setLevel(logging.DEBUG)
    root.setLevel(logging.DEBUG)
    recorder = Recorder()
    root.handlers.insert(0, recorder)
    yield recorder
    root.removeHandler(recorder)
    for logger, level in levels.items():
        logger.setLevel(level)


def wait_until(condition: Any, *, timeout: float = 20.0, what: str = "timed out") -> float:
    """Seconds until `condition()` held, polled every 50 ms; the test fails after `timeout`
    saying `what`."""
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < timeout, f"{what}: not within {timeout} s"
        time.sleep(0.05)
    return time.monotonic() - started


_WORKER_START_TIMEOUT = 30.0


def _database_url() -> str:
    from django.db import connection

    db = connection.settings_dict
    if db["ENGINE"] == "django.db.backends.sqlite3":
        return f"sqlite:///{db['NAME']}"
    credentials = quote(db["USER"] or "")
    if db["PASSWORD"]:
        credentials += f":{quote(db['PASSWORD'])}"
    return f"postgres://{credentials}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def start_db_worker(
    emulator: Emulator, *, worker_id: str = "browser-test", **env: str
) -> subprocess.Popen[str]:
    """`manage.py db_worker` on the test database, calling `emulator`, with `env` added to
    its environment; started (or the test fails) and its output drained all along."""
    return start_db_worker_into([], emulator, worker_id=worker_id, **env)


def start_db_worker_into(
    output: list[str], emulator: Emulator, /, *, worker_id: str = "browser-test", **env: str
) -> subprocess.Popen[str]:
    """`start_db_worker`, with each line of the worker's output added to `output` as it comes."""
    env = (
        os.environ
        | {
            "DJANGO_SETTINGS_MODULE": "portal.settings",
            "DJANGO_ENV_FILE": "",
            "DJANGO_SECRET_KEY": "browser-test-worker-secret-key",
            "FLEET_ENVIRONMENT": "emulator",
            "DATABASE_URL": _database_url(),
            "FLEET_BASE_URL": emulator.url,
            "FLEET_LOGIN_URL": emulator.login_url,
        }
        | env
    )
    process = subprocess.Popen(
        [
            sys.executable,
            "manage.py",
            "db_worker",
            "--no-reload",
            "--no-startup-delay",
            "--interval",
            "0.1",
            "--worker-id",
            worker_id,
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines = output
    started = threading.Event()

    def read() -> None:  # drained all along, so that a full pipe never blocks the worker
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if "Starting worker" in line:
                started.set()

    threading.Thread(target=read, daemon=True).start()
    deadline = time.monotonic() + _WORKER_START_TIMEOUT
    while not started.wait(0.1):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail("db_worker did not start:\n" + "".join(lines))
    return process


def stop_db_worker(process: subprocess.Popen[str]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()


@pytest.fixture
def db_worker(live_server: Any, emulator: Emulator) -> Iterator[subprocess.Popen[str]]:
    """`manage.py db_worker` on the test database, calling the test emulator: the
    background tasks run as they do under `make run`, in a process of their own that
    shares no connection, transaction or import state with the live server."""
    process = start_db_worker(emulator)
    yield process
    stop_db_worker(process)


@pytest.fixture
def smtp_server(settings: Any) -> Iterator[Any]:
    """A real SMTP server on loopback (tests/mail.py), and the portal's mailer pointed at it."""
    from tests.mail import SmtpServer

    server = SmtpServer()
    server.start()
    settings.MAILERS = {
        "default": {
            "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
            "OPTIONS": {"host": "127.0.0.1", "port": server.port, "timeout": 10},
        }
    }
    yield server
    server.stop()


# --- The organisation's identity provider (tests/idp.py: idp/server.mjs, a real OpenID
# provider on loopback) and the portal configured to sign people in through it. ---------

CLIENT_SECRET = "acme-client-secret-known-only-to-the-tests"
GROUP_CLIENT_SECRET = "group-client-secret-known-only-to-the-tests"
SSO_PASSWORDS = {
    "manager": "manager-sso-password",
    "admin": "admin-sso-password",
    "unverified": "unverified-sso-password",
    "outsider": "outsider-sso-password",
    "partner": "partner-sso-password",
    "carol": "carol-sso-password",
    "mallory": "mallory-sso-password",
}


def _sso_user(
    username: str, email: str, *, verified: bool = True, groups=(), sub: str = "", **names: str
):
    return {
        "username": username,
        "password": SSO_PASSWORDS[username],
        "sub": sub or f"sub-{username}-0001",
        "email": email,
        "email_verified": verified,
        "name": " ".join(names.values()),
        **names,
        "groups": list(groups),
    }


def identity_provider_config(*origins: str) -> dict[str, Any]:
    """Two clients (the portal's two providers, RS256 and ES256) and seven people."""

    def client(client_id: str, secret: str, provider_id: str, alg: str) -> dict[str, Any]:
        return {
            "client_id": client_id,
            "client_secret": secret,
            "redirect_uris": [
                f"{origin}/accounts/oidc/{provider_id}/login/callback/" for origin in origins
            ],
            "post_logout_redirect_uris": [f"{origin}/accounts/signed-out/" for origin in origins],
            "id_token_signed_response_alg": alg,
        }

    return {
        "clients": [
            client("fleet-portal", CLIENT_SECRET, "acme", "RS256"),
            client("fleet-portal-group", GROUP_CLIENT_SECRET, "group", "ES256"),
        ],
        "users": [
            _sso_user(
                "manager",
                "manager@example.com",
                groups=["fleet-managers"],
                given_name="Marcos",
                family_name="Gestor",
            ),
            _sso_user(
                "admin",
                "admin@example.com",
                groups=["fleet-managers", "fleet-admins"],
                given_name="Ana",
                family_name="Administradora",
            ),
            _sso_user("unverified", "unverified@example.com", verified=False, given_name="Vera"),
            _sso_user("outsider", "outsider@elsewhere.example", given_name="Otto"),
            _sso_user(
                "partner", "partner@partner.test", groups=["fleet-managers"], given_name="Paula"
            ),
            _sso_user("carol", "carol@a.example", groups=["fleet-managers"], given_name="Carol"),
            # Someone else, whose account shows carol's address as verified.
            _sso_user(
                "mallory",
                "carol@a.example",
                sub="mallory",
                groups=["fleet-managers"],
                given_name="Mallory",
            ),
        ],
    }


@pytest.fixture(scope="session")
def identity_provider_process(live_server: Any) -> Iterator[Any]:
    """One provider for the run; it knows the test client's and the live server's addresses."""
    from tests.idp import identity_provider_or_skip

    provider = identity_provider_or_skip(
        identity_provider_config("http://testserver", live_server.url)
    )
    yield provider
    provider.close()


@pytest.fixture
def identity_provider(identity_provider_process: Any) -> Iterator[Any]:
    """The session's provider, up, with its people as configured and no pending trick."""
    identity_provider_process.start()
    identity_provider_process.reset()
    yield identity_provider_process
    identity_provider_process.start()  # a test that stopped it leaves it running again


@pytest.fixture(scope="session")
def groups_scope_provider_process(live_server: Any) -> Iterator[Any]:
    """Another provider for the run, with the same clients and people, that releases the
    groups claim only for the `groups` scope (as Dex, Authentik and Okta's custom
    authorization servers do)."""
    from tests.idp import identity_provider_or_skip

    config = identity_provider_config("http://testserver", live_server.url)
    provider = identity_provider_or_skip(config | {"groups_scope_only": True})
    yield provider
    provider.close()


@pytest.fixture
def groups_scope_provider(groups_scope_provider_process: Any) -> Any:
    groups_scope_provider_process.start()
    groups_scope_provider_process.reset()
    return groups_scope_provider_process


def oidc_app(provider: Any, **settings_: Any) -> dict[str, Any]:
    """The environment's provider (OIDC_*) as settings.py builds it."""
    return {
        "provider_id": "acme",
        "name": "Acme SSO",
        "client_id": "fleet-portal",
        "secret": CLIENT_SECRET,
        "settings": {
            "server_url": provider.issuer,
            "allowed_domains": ["example.com"],
            "groups_claim": "groups",
            "manager_groups": [],
            "admin_groups": ["fleet-admins"],
        }
        | settings_,
    }


@pytest.fixture
def oidc_settings(settings: Any, identity_provider: Any) -> Any:
    """The portal configured with one identity provider, as OIDC_* variables would."""
    settings.SOCIALACCOUNT_PROVIDERS = {
        "openid_connect": settings.SOCIALACCOUNT_PROVIDERS["openid_connect"]
        | {"APPS": [oidc_app(identity_provider)]}
    }
    settings.LOCAL_LOGIN = None
    return settings


@pytest.fixture
def group_provider(identity_provider: Any) -> Any:
    """A second provider, added in the admin (a social application): ES256 ID tokens."""
    from allauth.socialaccount.models import SocialApp

    return SocialApp.objects.create(
        provider="openid_connect",
        provider_id="group",
        name="Grupo Holding",
        client_id="fleet-portal-group",
        secret=GROUP_CLIENT_SECRET,
        settings={"server_url": identity_provider.issuer, "allowed_domains": ["example.com"]},
    )


@pytest.fixture(autouse=True)
def _whole_fleet_for_new_users(request: pytest.FixtureRequest) -> Iterator[None]:
    """Users a test makes see the whole fleet, as every user did before vehicle groups,
    unless the test is marked `scoped` (those about who sees what give groups themselves)."""
    if request.node.get_closest_marker("scoped") is not None:
        yield
        return
    from django.contrib.auth.models import User
    from django.db.models.signals import post_save

    def grant(sender: Any, instance: Any, created: bool, raw: bool = False, **kwargs: Any) -> None:
        if created and not raw:
            from django.contrib.auth.models import Permission

            permission = Permission.objects.get(
                content_type__app_label="fleet", codename="view_whole_fleet"
            )
            instance.user_permissions.add(permission)

    post_save.connect(grant, sender=User, dispatch_uid="tests-whole-fleet")
    try:
        yield
    finally:
        post_save.disconnect(sender=User, dispatch_uid="tests-whole-fleet")
