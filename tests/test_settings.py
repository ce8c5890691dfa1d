"""Start-up validation of the configuration: clear messages, never the value."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys

import pytest

from tests.conftest import ROOT

_SETUP = "import django; django.setup(); print('started')"


def start(*, code: str = _SETUP, **overrides: str) -> subprocess.CompletedProcess[str]:
    """Load the settings in a fresh interpreter, as `manage.py` would, and run `code`."""
    return run([sys.executable, "-c", code], **overrides)


def run(command: list[str], **overrides: str) -> subprocess.CompletedProcess[str]:
    """`command` in the project folder, with the portal's variables only as given."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(
            ("FLEET_", "DJANGO_", "DATABASE_URL", "CACHE_URL", "DEBUG", "OIDC_", "LOCAL_LOGIN")
        )
        and key not in ("ALLOWED_HOSTS", "CSRF_TRUSTED_ORIGINS")
        and not key.startswith(("SECURE_", "SESSION_", "CSRF_", "USE_X_FORWARDED"))
    }
    env |= {
        "DJANGO_SETTINGS_MODULE": "portal.settings",
        "DJANGO_ENV_FILE": "",
        "DJANGO_SECRET_KEY": "a-test-secret-key-long-enough-for-django",
    }
    env |= overrides
    return subprocess.run(
        command,
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


@pytest.mark.parametrize(
    "secret_key",
    [
        "c2VjcmV0LXZhbHVlLXNpeC1iYXNlNjQ=",  # looks base64, with padding
        "yPNYb08DdAuyyniZDspCMm/XbbYCTNdhk0F1BOD22As=",
        "s3cr3t-K3y/with+chars=",
        "c8f3586f4f03740bb2ca78990eca42326fd76db6024cd76193417504e0f6d80b",  # hex
    ],
)
def test_any_secret_key_the_panel_could_issue_starts(secret_key):
    # Spec 5.3 forbids a base64 signature, not a key that looks like base64.
    result = start(**PRODUCTION | {"FLEET_SECRET_KEY": secret_key})

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "started"


def test_production_requires_credentials():
    result = start(FLEET_ENVIRONMENT="production", FLEET_BASE_URL="https://api.example.com")

    assert result.returncode != 0
    assert "FLEET_LOGIN_URL is not set" in result.stderr


# A production configuration that starts; each test below changes one thing.
PRODUCTION = {
    "FLEET_ENVIRONMENT": "production",
    "FLEET_BASE_URL": "https://api.example.com",
    "FLEET_LOGIN_URL": "https://app.example.com",
    "FLEET_ACCESS_TOKEN": "token-for-production",
    "FLEET_SECRET_KEY": "secret-for-production",
    "FLEET_FIELD_KEYS": "8kT2J3Yb9pKf7qTg8tq0p8W0B2q1Jd0O5QeR8rWcH2E=",
}


def test_production_refuses_plain_http():
    result = start(**PRODUCTION | {"FLEET_BASE_URL": "http://api.example.com"})

    assert result.returncode != 0
    assert "FLEET_BASE_URL must use https" in result.stderr


def test_unknown_environment_is_refused():
    result = start(FLEET_ENVIRONMENT="staging")

    assert "FLEET_ENVIRONMENT must be one of emulator, sandbox, production" in result.stderr


def test_production_without_field_keys_is_refused():
    result = start(**PRODUCTION | {"FLEET_FIELD_KEYS": ""})

    assert "FLEET_FIELD_KEYS is not set" in result.stderr


@pytest.mark.parametrize(
    ("name", "value", "problem"),
    [
        ("FLEET_WEBHOOK_MAX_BYTES", "lots", "must be a whole number."),
        ("FLEET_WEBHOOK_MAX_BYTES", "100", "must be a whole number, at least 1024."),
        ("FLEET_WEBHOOK_PROXY_COUNT", "-1", "must be a whole number, at least 0."),
        ("FLEET_WEBHOOK_UNKNOWN_KEYS_MAX", "-1", "must be a whole number, at least 0."),
        ("FLEET_WEBHOOK_UNKNOWN_KEYS_MAX", "many", "must be a whole number."),
        ("FLEET_COUNTS_POLL_SECONDS", "0", "must be a whole number, at least 1."),
        ("FLEET_READ_TIMEOUT", "ten", "must be a number of seconds."),
        ("FLEET_READ_TIMEOUT", "0", "must be a number of seconds, at least 1."),
        ("FLEET_ANSWER_MAX_BYTES", "1000", "must be a whole number of bytes, at least 1048576."),
        ("FLEET_ANSWER_SECONDS", "0", "must be a number of seconds, at least 1."),
        ("FLEET_INTERACTIVE_RETRY_BUDGET", "-1", "must be a number of seconds, at least 0."),
        ("FLEET_INTERACTIVE_RETRY_BUDGET", "inf", "must be a number of seconds, at least 0."),
    ],
)
def test_bad_numbers_stop_start_up_naming_the_variable(name, value, problem):
    result = start(**{name: value})

    assert result.returncode != 0
    assert f"{name} {problem}" in result.stderr


def test_a_webhook_token_with_stray_whitespace_is_refused_without_showing_it():
    result = start(FLEET_WEBHOOK_TOKENS="good-token-123456,bad-token-654321 ")

    assert result.returncode != 0
    assert "FLEET_WEBHOOK_TOKENS: token number 2 has whitespace" in result.stderr
    assert "bad-token-654321" not in result.stderr


# Made like the README says (secrets.token_urlsafe(32)); never refused.
RANDOM_TOKEN = "q8Xv2LkT0cRwZp7NfB4sYh1GmJd9AeUo3iKx6VtCn5E"


@pytest.mark.parametrize(
    ("environment", "weak", "problem"),
    [
        ("production", "dev-webhook-token", "an example value from the documentation"),
        ("production", "Zq4wX9tLm2Rk8pV", "shorter than 32 characters"),
        ("production", "Change-Me-Before-Going-Live-2031-Q4", "looks like a placeholder"),
        ("sandbox", "x" * 40, "one character repeated"),
        ("production", "abcdefghijklmnopqrstuvwxyz0123456789", "consecutive characters"),
    ],
)
def test_outside_the_emulator_a_weak_webhook_token_stops_start_up_naming_its_position(
    environment, weak, problem
):
    tokens = f"{RANDOM_TOKEN},{weak}"
    result = start(
        **PRODUCTION | {"FLEET_ENVIRONMENT": environment, "FLEET_WEBHOOK_TOKENS": tokens}
    )

    assert result.returncode != 0
    assert "ImproperlyConfigured: FLEET_WEBHOOK_TOKENS: token number 2 " in result.stderr
    assert problem in result.stderr
    assert "secrets.token_urlsafe(32)" in result.stderr  # how to make a good one
    assert weak not in result.stderr
    assert RANDOM_TOKEN not in result.stderr


def test_random_webhook_tokens_start_in_production():
    tokens = [
        RANDOM_TOKEN,
        "3f9c1e7a0b5d4c2e8f6a9b1d0c7e5a3f",
        "1b4e28ba-2fa1-4d3c-9e6a-8c2f0a7d5b91",
    ]

    result = start(**PRODUCTION, FLEET_WEBHOOK_TOKENS=",".join(tokens))

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "started"


def test_the_emulator_keeps_accepting_its_development_token():
    code = "from django.conf import settings; print(settings.FLEET_WEBHOOK_TOKENS)"

    assert start(code=code).stdout.strip() == "['dev-webhook-token']"


def test_download_hosts_are_a_list_of_host_names_in_lower_case():
    code = _SETUP.replace("'started'", "settings.FLEET_DOWNLOAD_HOSTS")
    code = "from django.conf import settings; " + code

    result = start(code=code, FLEET_DOWNLOAD_HOSTS="Docs.Vendor.example, .cdn.vendor.example,[::1]")

    assert result.stdout.strip() == "['docs.vendor.example', '.cdn.vendor.example', '::1']"


@pytest.mark.parametrize(
    "value", ["https://docs.vendor.example/", "docs.vendor.example:443", "*.vendor.example", "."]
)
def test_download_hosts_that_are_not_host_names_stop_start_up(value):
    result = start(FLEET_DOWNLOAD_HOSTS=f"docs.vendor.example,{value}")

    assert result.returncode != 0
    assert "FLEET_DOWNLOAD_HOSTS must list host names" in result.stderr


_PROVIDER = (
    "from django.conf import settings; "
    "print(settings.SOCIALACCOUNT_PROVIDERS['openid_connect']['APPS']); "
    "print(settings.LOCAL_LOGIN)"
)


def test_one_identity_provider_comes_from_the_environment():
    result = start(
        code=_SETUP.replace("print('started')", _PROVIDER),
        OIDC_ISSUER="https://login.example.com/tenant/v2.0",
        OIDC_CLIENT_ID="portal-client",
        OIDC_CLIENT_SECRET="portal-client-secret-value",
        OIDC_PROVIDER_NAME="Acme SSO",
        OIDC_ALLOWED_DOMAINS="acme.com.br, acme.com",
        OIDC_GROUPS_CLAIM="roles",
        OIDC_MANAGER_GROUPS="Fleet.Manager",
        OIDC_ADMIN_GROUPS="Fleet.Admin,Fleet.Owner",
        LOCAL_LOGIN="Staff",
    )

    apps, local_login = result.stdout.strip().splitlines()
    assert "'provider_id': 'sso', 'name': 'Acme SSO', 'client_id': 'portal-client'" in apps
    assert "'server_url': 'https://login.example.com/tenant/v2.0'" in apps
    assert "'allowed_domains': ['acme.com.br', 'acme.com']" in apps
    assert "'groups_claim': 'roles'" in apps
    assert (
        "'manager_groups': ['Fleet.Manager'], 'admin_groups': ['Fleet.Admin', 'Fleet.Owner']"
        in apps
    )
    assert local_login == "staff"


def test_without_an_issuer_there_is_no_provider_and_local_login_decides_itself():
    result = start(code=_SETUP.replace("print('started')", _PROVIDER))

    assert result.stdout.strip().splitlines() == ["[]", "None"]


@pytest.mark.parametrize(
    ("overrides", "message", "secret"),
    [
        ({"OIDC_ISSUER": "login.example.com"}, "OIDC_ISSUER must be an absolute http(s) URL", ""),
        ({"OIDC_CLIENT_SECRET": ""}, "OIDC_CLIENT_SECRET is empty", ""),
        (
            {"OIDC_CLIENT_SECRET": "a-pasted-secret-value\n"},
            "OIDC_CLIENT_SECRET has whitespace or a newline",
            "a-pasted-secret-value",
        ),
        ({"OIDC_CLIENT_ID": None}, "OIDC_CLIENT_ID is not set", ""),
        ({"LOCAL_LOGIN": "sometimes"}, "LOCAL_LOGIN must be one of on, staff, off", ""),
        ({"SESSION_IDLE_MINUTES": "0"}, "SESSION_IDLE_MINUTES must be a whole number", ""),
        ({"LOGIN_FAILURE_LIMIT": "many"}, "LOGIN_FAILURE_LIMIT must be a whole number", ""),
    ],
)
def test_bad_sign_in_settings_stop_start_up_naming_the_variable(overrides, message, secret):
    provider = {
        "OIDC_ISSUER": "https://login.example.com",
        "OIDC_CLIENT_ID": "portal-client",
        "OIDC_CLIENT_SECRET": "portal-client-secret-value",
    }
    environment = {
        name: value for name, value in (provider | overrides).items() if value is not None
    }

    result = start(**environment)

    assert result.returncode != 0
    assert message in result.stderr
    if secret:
        assert secret not in result.stderr


def test_production_refuses_an_identity_provider_over_plain_http():
    result = start(
        **PRODUCTION,
        OIDC_ISSUER="http://login.example.com",
        OIDC_CLIENT_ID="portal-client",
        OIDC_CLIENT_SECRET="portal-client-secret-value",
    )

    assert "OIDC_ISSUER must use https" in result.stderr


def test_the_deploy_check_of_a_production_configuration_has_no_warning():
    """`check --deploy` passes at WARNING level; what
    it would still say is silenced in portal/settings.py, each with its reason."""
    production = PRODUCTION | {
        "DEBUG": "False",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "frota.example.com.br",
        "CSRF_TRUSTED_ORIGINS": "https://frota.example.com.br",
        "USE_X_FORWARDED_PROTO": "true",
        "DATABASE_URL": "postgres://portal@db.internal:5432/portal",
        "CACHE_URL": "redis://cache.internal:6379/1",
        "OIDC_ISSUER": "https://login.example.com/tenant/v2.0",
        "OIDC_CLIENT_ID": "portal-client",
        "OIDC_CLIENT_SECRET": "portal-client-secret-value",
        "OIDC_ALLOWED_DOMAINS": "example.com.br",
        "FLEET_WEBHOOK_TOKENS": secrets.token_urlsafe(32),
    }

    result = run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        **production,
    )

    assert result.returncode == 0, result.stderr
    assert "System check identified no issues" in result.stdout


def test_production_redirects_to_https_and_sends_hsts_but_lets_healthz_answer_over_http():
    code = (
        "from django.conf import settings; "
        "print(settings.SECURE_SSL_REDIRECT, settings.SECURE_HSTS_SECONDS, "
        "settings.SECURE_REDIRECT_EXEMPT)"
    )

    production = start(code=f"import django; django.setup(); {code}", **PRODUCTION)
    emulator = start(code=f"import django; django.setup(); {code}")

    assert production.stdout.strip() == "True 31536000 ['^healthz$']"
    assert emulator.stdout.strip() == "False 0 ['^healthz$']"


# --- Alerts: the mailer from EMAIL_URL, the portal's own address ------------------------

_MAILER = (
    "import json; from django.conf import settings; "
    "print(json.dumps([settings.MAILERS['default'], settings.PORTAL_BASE_URL]))"
)


def test_an_smtp_email_url_becomes_the_default_mailer():
    result = start(
        code=_MAILER, EMAIL_URL="smtp+tls://alerts%40acme.example:pw@smtp.acme.example:587"
    )

    mailer, _portal = json.loads(result.stdout)
    assert mailer == {
        "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
        "OPTIONS": {
            "host": "smtp.acme.example",
            "port": 587,
            "username": "alerts@acme.example",
            "password": "pw",
            "use_tls": True,
            "timeout": 30.0,
        },
    }


def test_without_an_email_url_debug_prints_emails_and_production_uses_the_local_smtp():
    debug, _ = json.loads(start(code=_MAILER, DEBUG="True", EMAIL_URL="").stdout)
    production, _ = json.loads(start(code=_MAILER, **PRODUCTION).stdout)

    assert debug["BACKEND"] == "django.core.mail.backends.console.EmailBackend"
    assert production["OPTIONS"]["host"] == "localhost"


def test_a_bad_email_url_is_named_without_its_value():
    result = start(EMAIL_URL="mailgun://key-secret-value@example")

    assert "EMAIL_URL must be an e-mail URL" in result.stderr
    assert "key-secret-value" not in result.stderr


def test_the_portal_address_for_alert_links_is_https_outside_the_emulator():
    assert json.loads(start(code=_MAILER).stdout)[1] == "http://127.0.0.1:8000"
    assert json.loads(start(code=_MAILER, **PRODUCTION).stdout)[1] == ""  # alerts wait
    refused = start(**PRODUCTION, PORTAL_BASE_URL="http://portal.acme.example")
    assert "PORTAL_BASE_URL must use https" in refused.stderr
