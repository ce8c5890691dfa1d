"""Start-up validation of the configuration: clear messages, never the value."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

_SETUP = "import django; django.setup(); print('started')"


def start(*, code: str = _SETUP, **overrides: str) -> subprocess.CompletedProcess[str]:
    """Load the settings in a fresh interpreter, as `manage.py` would, and run `code`."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("FLEET_", "DJANGO_", "DATABASE_URL", "CACHE_URL", "DEBUG"))
    }
    env |= {
        "DJANGO_SETTINGS_MODULE": "portal.settings",
        "DJANGO_ENV_FILE": "",
        "DJANGO_SECRET_KEY": "a-test-secret-key-long-enough-for-django",
    }
    env |= overrides
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_defaults_start_on_the_emulator():
    assert start().stdout.strip() == "started"


def test_a_redis_cache_url_gets_the_backend_that_keeps_its_clients():
    code = "from django.conf import settings; print(settings.CACHES['default']['BACKEND'])"

    result = start(code=code, CACHE_URL="redis://127.0.0.1:6379/3")

    assert result.stdout.strip() == "portal.cache.RedisCache"


@pytest.mark.parametrize(
    ("name", "value", "problem"),
    [
        ("FLEET_SECRET_KEY", "s3cr3t-value-one\n", "whitespace or a newline"),
        ("FLEET_SECRET_KEY", " s3cr3t-value-two", "whitespace or a newline"),
        ("FLEET_ACCESS_TOKEN", "tok-value-three ", "whitespace or a newline"),
        ("FLEET_ACCESS_TOKEN", '"tok-value-four"', "wrapped in quotes"),
        ("FLEET_SECRET_KEY", "'s3cr3t-value-five'", "wrapped in quotes"),
        ("FLEET_SECRET_KEY", "", "is empty"),
        ("FLEET_SECRET_KEY", "c2VjcmV0LXZhbHVlLXNpeC1iYXNlNjQ=", "looks base64-encoded"),
    ],
)
def test_bad_credentials_stop_start_up_naming_the_variable_not_the_value(name, value, problem):
    result = start(**{name: value})

    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert f"{name} " in result.stderr
    assert problem in result.stderr
    if secret_part := value.strip(" \n'\""):
        assert secret_part not in result.stderr


def test_production_requires_credentials():
    result = start(FLEET_ENVIRONMENT="production", FLEET_BASE_URL="https://api.example.com")

    assert result.returncode != 0
    assert "FLEET_LOGIN_URL is not set" in result.stderr


def test_production_refuses_plain_http():
    result = start(
        FLEET_ENVIRONMENT="production",
        FLEET_BASE_URL="http://api.example.com",
        FLEET_LOGIN_URL="https://app.example.com",
        FLEET_ACCESS_TOKEN="token-for-production",
        FLEET_SECRET_KEY="secret-for-production",
        FLEET_FIELD_KEYS="8kT2J3Yb9pKf7qTg8tq0p8W0B2q1Jd0O5QeR8rWcH2E=",
    )

    assert result.returncode != 0
    assert "FLEET_BASE_URL must use https" in result.stderr


def test_unknown_environment_is_refused():
    result = start(FLEET_ENVIRONMENT="staging")

    assert "FLEET_ENVIRONMENT must be one of emulator, sandbox, production" in result.stderr


def test_production_without_field_keys_is_refused():
    result = start(
        FLEET_ENVIRONMENT="production",
        FLEET_BASE_URL="https://api.example.com",
        FLEET_LOGIN_URL="https://app.example.com",
        FLEET_ACCESS_TOKEN="token-for-production",
        FLEET_SECRET_KEY="secret-for-production",
    )

    assert "FLEET_FIELD_KEYS is not set" in result.stderr


@pytest.mark.parametrize(
    ("name", "value", "problem"),
    [
        ("FLEET_WEBHOOK_MAX_BYTES", "lots", "must be a whole number."),
        ("FLEET_WEBHOOK_MAX_BYTES", "100", "must be a whole number, at least 1024."),
        ("FLEET_WEBHOOK_PROXY_COUNT", "-1", "must be a whole number, at least 0."),
        ("FLEET_COUNTS_POLL_SECONDS", "0", "must be a whole number, at least 1."),
    ],
)
def test_bad_webhook_and_poll_settings_stop_start_up(name, value, problem):
    result = start(**{name: value})

    assert result.returncode != 0
    assert f"{name} {problem}" in result.stderr


def test_a_webhook_token_with_stray_whitespace_is_refused_without_showing_it():
    result = start(FLEET_WEBHOOK_TOKENS="good-token-123456,bad-token-654321 ")

    assert result.returncode != 0
    assert "FLEET_WEBHOOK_TOKENS has a token that" in result.stderr
    assert "bad-token-654321" not in result.stderr
