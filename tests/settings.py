"""Settings for the test suite: the portal's own, read from a fixed environment.

pytest-django loads settings before any conftest runs, so the environment is
fixed here: a developer's `.env` or shell cannot change what the tests see.
DATABASE_URL and CACHE_URL pass through, for CI's PostgreSQL and Redis leg.
"""

from __future__ import annotations

import os

os.environ["DJANGO_ENV_FILE"] = ""
os.environ["DJANGO_SECRET_KEY"] = "test-only-django-secret-key"
os.environ["FLEET_ENVIRONMENT"] = "emulator"
for _name in (
    "DEBUG",
    "FLEET_ACCESS_TOKEN",
    "FLEET_SECRET_KEY",
    "FLEET_BASE_URL",
    "FLEET_LOGIN_URL",
    "FLEET_WEBHOOK_TOKENS",
    "FLEET_WEBHOOK_MAX_BYTES",
    "FLEET_WEBHOOK_PROXY_COUNT",
    "FLEET_WEBHOOK_UNKNOWN_KEYS_MAX",
    "FLEET_COUNTS_POLL_SECONDS",
    "FLEET_FIELD_KEYS",
    "FLEET_WRONG_LOGIN_CODES",
    "FLEET_DOWNLOAD_HOSTS",
    "LOCAL_LOGIN",
    "LOGIN_FAILURE_LIMIT",
    "LOGIN_LOCKOUT_MINUTES",
    "SESSION_IDLE_MINUTES",
    "SESSION_MAX_HOURS",
    "LOG_FORMAT",
    "FLEET_DRIVER_HISTORY",
):
    os.environ.pop(_name, None)
# A provider from a developer's shell would change every sign-in test: tests configure their own.
for _name in [name for name in os.environ if name.startswith("OIDC_")]:
    os.environ.pop(_name)

from portal.settings import *  # noqa: E402, F403

# Hashing demo passwords at full strength only slows the suite down.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":  # noqa: F405
    import tempfile
    from pathlib import Path

    # A file rather than memory, so that a `manage.py db_worker` started by the
    # browser tests works on the same test database from its own process. One
    # per test run (pid): two runs at once must not share it.
    DATABASES["default"]["TEST"] = {  # noqa: F405
        "NAME": str(Path(tempfile.gettempdir()) / f"fleet-portal-tests-{os.getpid()}.sqlite3")
    }

# The Fleet API of a test that points at none: a loopback port nothing listens on. The
# emulator's default address (127.0.0.1:8001) is where a developer's `make run` answers
# while the suite runs, and a test would read that demo's vehicles (seen: a flake hunt
# beside `make run`). A test that talks to the API points at its own emulator
# (`fleet_settings`).
FLEET_BASE_URL = "http://127.0.0.1:1"
# A refresh of the vehicle list writes the history of who had each vehicle in the
# database, which most tests of the list do not open: those of the history turn it on
# (`driver_history` in tests/conftest.py).
FLEET_DRIVER_HISTORY = False
