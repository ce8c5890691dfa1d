"""The portal under benchmark, set up for a run: its environment, its database and a
manager to log in as.

The portal gets its own database and an environment built here, so a
developer's `.env` or shell cannot change what is measured.
"""

from __future__ import annotations

import argparse
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

import requests

from bench.servers import LOOPBACK, ServerFailed, python_run

# The emulator's demo web-app user (emulator/README.md), whom the manager is linked to.
DEMO_FLEET_EMAIL = "manager@example.com"
DEMO_FLEET_PASSWORD = "demo-password"

# Variables the portal's settings read: dropped from the inherited environment.
_PORTAL_PREFIXES = ("FLEET_", "DJANGO_", "SECURE_", "SESSION_", "CSRF_")
_PORTAL_NAMES = frozenset(
    [
        "DEBUG",
        "ALLOWED_HOSTS",
        "DATABASE_URL",
        "CACHE_URL",
        "CONN_MAX_AGE",
        "TIME_ZONE",
        "USE_X_FORWARDED_PROTO",
    ]
)
# Creates the benchmark's portal user, who sees the whole fleet as every manager did
# before vehicle groups, and links the emulator's manager to it.
_CREATE_MANAGER = """
import os
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from fleet.models import FleetAccount
# A PostgreSQL database is reused from run to run: its manager of the last run goes.
get_user_model().objects.filter(username=os.environ["BENCH_USERNAME"]).delete()
user = get_user_model().objects.create_user(
    username=os.environ["BENCH_USERNAME"], password=os.environ["BENCH_PASSWORD"]
)
user.user_permissions.add(
    Permission.objects.get(content_type__app_label="fleet", codename="view_whole_fleet")
)
account = FleetAccount(user=user, email=os.environ["BENCH_FLEET_EMAIL"])
account.set_password(os.environ["BENCH_FLEET_PASSWORD"])
account.save()
"""


@dataclass(frozen=True, slots=True)
class PortalUser:
    username: str
    password: str


def portal_environment(*, database: Path, emulator_url: str) -> dict[str, str]:
    """The environment of a production-like portal on `emulator_url`, with its own database."""
    environment = {
        name: value
        for name, value in os.environ.items()
        if name not in _PORTAL_NAMES and not name.startswith(_PORTAL_PREFIXES)
    }
    environment |= {
        "DJANGO_ENV_FILE": "",
        "DJANGO_SETTINGS_MODULE": "portal.settings",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "DEBUG": "False",
        "DATABASE_URL": f"sqlite:///{database}",
        "FLEET_ENVIRONMENT": "emulator",
        "FLEET_BASE_URL": emulator_url,
        "FLEET_LOGIN_URL": f"{emulator_url}/app",
        "ALLOWED_HOSTS": f"{LOOPBACK},localhost",
        "SESSION_COOKIE_SECURE": "False",
        "CSRF_COOKIE_SECURE": "False",
    }
    return environment


def portal_migrate(environment: dict[str, str]) -> None:
    """Bring the portal's database to the current migrations (a new one: create it,
    a PostgreSQL database included)."""
    url = environment.get("DATABASE_URL", "")
    if ensure_database(url):
        print(f"Created the database {urlsplit(url).path.lstrip('/')!r} on {urlsplit(url).netloc}.")
    python_run(["manage.py", "migrate", "--no-input", "-v", "0"], environment, what="migrate")


def ensure_database(url: str) -> bool:
    """Create the PostgreSQL database of `url` (a `--database-url`) if it does not exist.

    Connects to the server's `postgres` database as the URL's user; True when it
    created the database. Other schemes are left as they are.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("postgres", "postgresql", "pgsql"):
        return False
    import psycopg
    from psycopg import sql

    name = unquote(parts.path.lstrip("/"))
    if not name:
        raise ServerFailed(f"{url} names no database")
    maintenance = urlunsplit(("postgresql", parts.netloc, "/postgres", parts.query, ""))
    try:
        with psycopg.connect(maintenance, autocommit=True, connect_timeout=10) as connection:
            found = connection.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", [name]
            ).fetchone()
            if found:
                return False
            connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    except psycopg.Error as error:
        raise ServerFailed(f"creating the database {name!r} failed: {error}") from error
    return True


def portal_empty_webhook_tables(environment: dict[str, str]) -> None:
    """Delete every webhook delivery, fine, notification and unknown key (a reused database),
    and the dashboard's tallies of those fines."""
    script = (
        "from fleet.models import Fine, Notification, UnknownWebhookKey, WebhookDelivery\n"
        "from fleet.services.tallies import fine_tallies_rebuild\n"
        "for model in (UnknownWebhookKey, WebhookDelivery, Fine, Notification):\n"
        "    model.objects.all().delete()\n"
        "fine_tallies_rebuild()  # the dashboard's tallies: none left"
    )
    python_run(
        ["manage.py", "shell", "-v", "0", "-c", script], environment, what="emptying the records"
    )


def portal_prepare(environment: dict[str, str]) -> PortalUser:
    """Migrate the portal's database and create a manager who sees the whole fleet
    (`fleet.view_whole_fleet`), linked to the emulator's one."""
    user = PortalUser(username="bench-manager", password=secrets.token_urlsafe(16))
    portal_migrate(environment)
    python_run(
        ["manage.py", "shell", "-v", "0", "-c", _CREATE_MANAGER],
        environment
        | {
            "BENCH_USERNAME": user.username,
            "BENCH_PASSWORD": user.password,
            "BENCH_FLEET_EMAIL": DEMO_FLEET_EMAIL,
            "BENCH_FLEET_PASSWORD": DEMO_FLEET_PASSWORD,
        },
        what="creating the manager",
    )
    return user


def add_database_argument(parser: argparse.ArgumentParser) -> None:
    """`--database-url`: a PostgreSQL on this machine instead of the temporary SQLite."""
    parser.add_argument(
        "--database-url",
        type=_loopback_database,
        help="a PostgreSQL on this machine (postgres://user@127.0.0.1:5432/name) instead of "
        "SQLite; the benchmark empties its webhook tables",
    )


def _loopback_database(url: str) -> str:
    if urlsplit(url).hostname not in ("127.0.0.1", "localhost", "::1"):
        raise argparse.ArgumentTypeError("must be on the loopback interface")
    return url


def portal_log_in(session: requests.Session, portal_url: str, user: PortalUser) -> None:
    """Log `session` in through the login form, as a browser does."""
    login_url = f"{portal_url}/accounts/login/"
    session.get(login_url, timeout=10).raise_for_status()
    response = session.post(
        login_url,
        data={
            "csrfmiddlewaretoken": session.cookies["csrftoken"],
            "username": user.username,
            "password": user.password,
        },
        allow_redirects=False,  # the dashboard is not what we measure
        timeout=30,
    )
    if response.status_code != 302 or "sessionid" not in session.cookies:
        raise ServerFailed(f"logging in to the portal failed (HTTP {response.status_code})")
