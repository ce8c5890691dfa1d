"""Reading the environment for portal/settings.py: each reader takes a variable's name,
and a value it cannot use stops start-up with an `ImproperlyConfigured` that names the
variable and the problem, never the value (credentials end up in terminals and log
aggregators otherwise)."""

from __future__ import annotations

import ipaddress
import os
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

from fleet.api.credentials import credential_problems


def credential(name: str, *, default: str | None) -> str:
    """A credential, refusing the copy-paste mistakes of spec section 5.3."""
    value = os.environ.get(name, default if default is not None else None)
    if value is None:
        raise ImproperlyConfigured(f"{name} is not set.")
    problems = credential_problems(value)
    if problems:
        raise ImproperlyConfigured(f"{name} {'; '.join(problems)}.")
    return value


def url(name: str, *, default: str | None, environment: str) -> str:
    """An absolute http(s) URL, without its last slash; https unless on the emulator."""
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


def names(name: str) -> list[str]:
    """A comma-separated variable as a list, spaces around the commas allowed."""
    return [part.strip() for part in os.environ.get(name, "").split(",") if part.strip()]


def hosts(name: str) -> list[str]:
    """Host names, or `.example.com` for a domain and its subdomains; no URLs, no wildcards."""
    hosts = [host.lower().strip("[]") for host in names(name)]
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


def number[N: (int, float)](name: str, *, default: N, minimum: N, kind: type[N], what: str) -> N:
    """A number of `kind`, at least `minimum`; `default` when unset or empty."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = kind(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be {what}.") from None
    if not minimum <= value < float("inf"):
        raise ImproperlyConfigured(f"{name} must be {what}, at least {minimum:g}.")
    return value


def seconds(name: str, *, default: float, minimum: float = 0.0) -> float:
    """A number of seconds, at least `minimum`."""
    return number(name, default=default, minimum=minimum, kind=float, what="a number of seconds")


def ports(name: str, *, default: list[int]) -> list[int]:
    """Comma-separated TCP port numbers; `default` when unset or empty."""
    given = names(name)
    if not all(port.isascii() and port.isdigit() and 1 <= int(port) <= 65535 for port in given):
        raise ImproperlyConfigured(
            f"{name} must list port numbers (1 to 65535) separated by commas."
        )
    return [int(port) for port in given] or default
