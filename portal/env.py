"""Reading the environment for portal/settings.py, as HackSoft's `config/env.py` does.

Each reader takes a variable's name. A value it cannot use stops start-up with
an `ImproperlyConfigured` that names the variable and the problem, never the
value: credentials end up in terminals and log aggregators otherwise. Flags,
plain text, comma-separated lists and the database and cache URLs are read by
django-environ; the rest is checked here.
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import environ
from django.core.exceptions import ImproperlyConfigured

from fleet.api.credentials import credential_problems
from fleet.api.paths import api_path as _fleet_api_path
from fleet.webhooks.tokens import webhook_token_problems

_environ = environ.Env()


def load_file(name: str, *, default: Path) -> None:
    """Load the `.env` file that `name` points at (`default` when unset; empty: none).

    Variables already set in the environment keep their values.
    """
    path = os.environ.get(name, str(default))
    if path and Path(path).is_file():
        _environ.read_env(path)


# --- Plain values (django-environ) ----------------------------------------------------


def flag(name: str, *, default: bool) -> bool:
    """`true`, `yes`, `on`, `1`… as True; any other value as False."""
    value: bool = _environ.bool(name, default=default)
    return value


def text(name: str, *, default: str) -> str:
    value: str = _environ.str(name, default=default)
    return value


def comma_list(name: str, *, default: list[str] | None = None, exact: bool = False) -> list[str]:
    """Comma-separated values, empty ones dropped; `default` (none) when unset. Spaces
    around the commas are ignored, unless `exact`: secrets are kept as written, so that
    stray whitespace is refused and seen rather than trimmed."""
    value = os.environ.get(name)
    if value is None:
        return list(default or [])
    parts = value.split(",") if exact else [part.strip() for part in value.split(",")]
    return [part for part in parts if part.strip()]


def database(name: str, *, default: str) -> dict[str, Any]:
    """Django's DATABASES entry from a database URL (`postgres://…`, `sqlite:///…`)."""
    config: dict[str, Any] = _environ.db(name, default=default)
    return config


def cache(name: str, *, default: str) -> dict[str, Any]:
    """Django's CACHES entry from a cache URL (`redis://…`, `locmemcache://…`)."""
    config: dict[str, Any] = _environ.cache(name, default=default)
    return config


# --- Checked values ---------------------------------------------------------------------


def credential(name: str, *, default: str | None) -> str:
    """A credential, refusing the copy-paste mistakes of spec section 5.3."""
    value = os.environ.get(name, default if default is not None else None)
    if value is None:
        raise ImproperlyConfigured(f"{name} is not set.")
    problems = credential_problems(value)
    if problems:
        raise ImproperlyConfigured(f"{name} {'; '.join(problems)}.")
    return value


def url(name: str, *, default: str | None, environment: str, optional: bool = False) -> str:
    """An absolute http(s) URL, without its last slash; https unless on the emulator.

    `optional`: an unset or blank variable gives "" instead of stopping start-up.
    """
    if optional and not os.environ.get(name, "").strip():
        return ""
    value = os.environ.get(name, default)
    if not value:
        raise ImproperlyConfigured(f"{name} is not set.")
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ImproperlyConfigured(f"{name} must be an absolute http(s) URL.")
    # The spec requires HTTPS; plain HTTP is only for the local emulator.
    if parts.scheme != "https" and environment != "emulator":
        raise ImproperlyConfigured(
            f"{name} must use https when FLEET_ENVIRONMENT is {environment}."
        )
    return value.rstrip("/")


def choice(name: str, *, choices: Iterable[str], default: str) -> str:
    """One of `choices`, exactly as written; `default` when unset."""
    value = os.environ.get(name, default)
    return _one_of(name, value, choices)


def optional_choice(name: str, *, choices: Iterable[str]) -> str | None:
    """One of `choices`, in any case; None when unset or empty (decided elsewhere)."""
    value = os.environ.get(name, "").strip().lower()
    return _one_of(name, value, choices) if value else None


def _one_of(name: str, value: str, choices: Iterable[str]) -> str:
    allowed = [str(item) for item in choices]
    if value not in allowed:
        raise ImproperlyConfigured(f"{name} must be one of {', '.join(allowed)}.")
    return value


def hosts(name: str) -> list[str]:
    """Host names, or `.example.com` for a domain and its subdomains; no URLs, no wildcards."""
    hosts = [host.lower().strip("[]") for host in comma_list(name)]
    for host in hosts:
        if (
            not host.strip(".")
            or any(mark in host for mark in ("/", "*", "@", "\\", " "))
            or (":" in host and not _is_ipv6(host))  # a port: the host alone is compared
        ):
            raise ImproperlyConfigured(
                f"{name} must list host names (docs.vendor.example, or .vendor.example for it "
                "and its subdomains), not URLs or wildcards."
            )
    return hosts


def _is_ipv6(host: str) -> bool:
    try:
        ipaddress.IPv6Address(host)
    except ValueError:
        return False
    return True


def _number[N: (int, float)](name: str, *, default: N, minimum: N, kind: type[N], what: str) -> N:
    """A number of `kind`, at least `minimum`; `default` when unset or empty."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = kind(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be {what}.") from None
    if not minimum <= value < float("inf"):
        least = f"{minimum:g}" if isinstance(minimum, float) else str(minimum)
        raise ImproperlyConfigured(f"{name} must be {what}, at least {least}.")
    return value


def whole_number(name: str, *, default: int, minimum: int, unit: str = "") -> int:
    """A whole number (of `unit`, when given), at least `minimum`."""
    what = f"a whole number of {unit}" if unit else "a whole number"
    return _number(name, default=default, minimum=minimum, kind=int, what=what)


def seconds(name: str, *, default: float, minimum: float = 0.0) -> float:
    """A number of seconds, at least `minimum`."""
    return _number(name, default=default, minimum=minimum, kind=float, what="a number of seconds")


def ports(name: str, *, default: list[int]) -> list[int]:
    """Comma-separated TCP port numbers; `default` when unset or empty."""
    given = comma_list(name)
    if not all(port.isascii() and port.isdigit() and 1 <= int(port) <= 65535 for port in given):
        raise ImproperlyConfigured(
            f"{name} must list port numbers (1 to 65535) separated by commas."
        )
    return [int(port) for port in given] or default


def days_list(name: str, *, default: list[int]) -> list[int]:
    """Comma-separated whole numbers of days (0 to 366), without repeats, largest first;
    `default` when unset or empty."""
    given = comma_list(name)
    if not all(day.isascii() and day.isdigit() and int(day) <= 366 for day in given):
        raise ImproperlyConfigured(
            f"{name} must list whole numbers of days (0 to 366) separated by commas."
        )
    return sorted({int(day) for day in given}, reverse=True) or default


def api_path(name: str, *, default: str) -> str:
    """A route of the Fleet API of its own (`fleet.api.paths.api_path`); `default` when
    unset or blank."""
    value = os.environ.get(name, "").strip() or default
    try:
        return _fleet_api_path(value)
    except ValueError:
        raise ImproperlyConfigured(
            f"{name} must be a path of the Fleet API starting with '/', without a query."
        ) from None


# --- Secrets the portal keeps ----------------------------------------------------------


def webhook_tokens(name: str, *, on_emulator: bool) -> list[str]:
    """The accepted webhook tokens; outside the emulator each must look random (anyone who
    guesses one can post fines), see fleet/webhooks/tokens.py."""
    tokens = comma_list(name, default=["dev-webhook-token"] if on_emulator else [], exact=True)
    for position, token in enumerate(tokens, start=1):
        hint = ""
        problems = credential_problems(token)
        if not problems and not on_emulator:
            problems = webhook_token_problems(token)
            hint = ' (make one with `python -c "import secrets; print(secrets.token_urlsafe(32))"`)'
        if problems:
            raise ImproperlyConfigured(
                f"{name}: token number {position} {'; '.join(problems)}{hint}."
            )
    return tokens


def metrics_token(name: str) -> str:
    """The bearer token `/metrics` asks for; empty (unset), the path is a 404. It must look
    random, as a webhook token must: anyone who has it reads the portal's activity."""
    token = os.environ.get(name, "").strip()
    if not token:
        return ""
    problems = credential_problems(token) or webhook_token_problems(token)
    if problems:
        raise ImproperlyConfigured(
            f"{name} {'; '.join(problems)} (make one with "
            '`python -c "import secrets; print(secrets.token_urlsafe(32))"`).'
        )
    return token


def fernet_keys(name: str, *, default: list[str]) -> list[str]:
    """One or more Fernet keys, newest first (rotation)."""
    keys = comma_list(name, default=default, exact=True)
    if not keys:
        raise ImproperlyConfigured(
            f"{name} is not set: give one or more Fernet keys, newest first."
        )
    for position, key in enumerate(keys, start=1):
        try:
            valid = len(base64.urlsafe_b64decode(key.encode())) == 32
        except ValueError:
            valid = False
        if not valid:
            raise ImproperlyConfigured(
                f"{name}: key number {position} is not a Fernet key "
                "(32 url-safe base64-encoded bytes; make one with "
                "`python -c 'from cryptography.fernet import Fernet; "
                "print(Fernet.generate_key())'`)."
            )
    return keys


def fernet_key_from(secret: str) -> str:
    """A Fernet key derived from `secret`: convenient locally, never in production."""
    digest = hashlib.sha256(f"fleet-field-keys:{secret}".encode()).digest()
    return base64.urlsafe_b64encode(digest).decode()


# --- Groups of variables ----------------------------------------------------------------


def mailer(name: str, *, default: str, sent_folder: Path) -> dict[str, object]:
    """Django 6.1's MAILERS entry from the e-mail URL in `name` (django-environ's:
    `smtp+tls://user:password@host:587`, `consolemail://`, `filemail:///folder`).

    SMTP waits EMAIL_TIMEOUT seconds at most; `filemail://` without a folder
    writes to `sent_folder`.
    """
    value = os.environ.get(name, "").strip() or default
    try:
        parsed = _environ.email_url_config(value)
    except (ImproperlyConfigured, ValueError):
        raise ImproperlyConfigured(
            f"{name} must be an e-mail URL: smtp://, smtp+tls://, smtp+ssl://, "
            "consolemail:// or filemail:///folder."
        ) from None
    backend = parsed["EMAIL_BACKEND"]
    options: dict[str, object] = {}
    if backend.endswith(".smtp.EmailBackend"):
        options_by_setting = {
            "EMAIL_HOST": "host",
            "EMAIL_PORT": "port",
            "EMAIL_HOST_USER": "username",
            "EMAIL_HOST_PASSWORD": "password",
            "EMAIL_USE_TLS": "use_tls",
            "EMAIL_USE_SSL": "use_ssl",
        }
        options = {
            option: parsed[setting]
            for setting, option in options_by_setting.items()
            if parsed.get(setting)
        }
        options.setdefault("host", "localhost")
        options["timeout"] = seconds("EMAIL_TIMEOUT", default=30.0, minimum=1.0)
    elif backend.endswith(".filebased.EmailBackend"):
        folder = parsed["EMAIL_FILE_PATH"]  # the URL's path without its first slash
        options["file_path"] = f"/{folder}" if folder else str(sent_folder)
    return {"BACKEND": backend, "OPTIONS": options}


def oidc_provider(*, environment: str) -> dict[str, object] | None:
    """The identity provider of the OIDC_* variables, as an allauth app; None without
    OIDC_ISSUER."""
    issuer = url("OIDC_ISSUER", default=None, environment=environment, optional=True)
    if not issuer:
        return None
    client_id = credential("OIDC_CLIENT_ID", default=None)
    client_secret = credential("OIDC_CLIENT_SECRET", default=None)
    return {
        "provider_id": text("OIDC_PROVIDER_ID", default="sso"),
        "name": text("OIDC_PROVIDER_NAME", default="") or urlsplit(issuer).hostname,
        "client_id": client_id,
        "secret": client_secret,
        "settings": {
            "server_url": issuer,
            "allowed_domains": comma_list("OIDC_ALLOWED_DOMAINS"),
            "groups_claim": text("OIDC_GROUPS_CLAIM", default="groups") or "groups",
            "manager_groups": comma_list("OIDC_MANAGER_GROUPS"),
            "admin_groups": comma_list("OIDC_ADMIN_GROUPS"),
        }
        | _oidc_scopes("OIDC_SCOPES"),
    }


def _oidc_scopes(name: str) -> dict[str, list[str]]:
    """Space-separated scopes as the provider's `scope` setting; unset, nothing: the
    portal then asks for `openid profile email` and the groups claim's scope."""
    scopes = os.environ.get(name, "").split()
    if not scopes:
        return {}
    if "openid" not in scopes:
        raise ImproperlyConfigured(f"{name} must include openid.")
    # RFC 6749 3.3: printable ASCII, no double quote or backslash.
    if any(char in '"\\' or not "!" <= char <= "~" for scope in scopes for char in scope):
        raise ImproperlyConfigured(
            f"{name} may hold only printable ASCII, no quote or backslash, "
            "its scopes separated by spaces."
        )
    return {"scope": scopes}
