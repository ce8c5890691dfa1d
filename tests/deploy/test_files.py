"""deploy/'s environment template and systemd units: complete, and pointing at what is shipped."""

from __future__ import annotations

import configparser
import re

from tests.conftest import ROOT

DEPLOY = ROOT / "deploy"
# A variable the settings read: a name in capitals as the first argument of a reader,
# in portal/settings.py (env.seconds("FLEET_READ_TIMEOUT", ...)) or inside portal/env.py,
# whose readers of a group of variables call the others (text("OIDC_PROVIDER_ID", ...)).
_READ = re.compile(r'(?<![\w.])(?:env\.)?[a-z_]\w*\(\s*"([A-Z][A-Z0-9_]{2,})"')


def _variables_read(path) -> set[str]:
    return set(_READ.findall(path.read_text()))


def _template_variables() -> set[str]:
    text = (DEPLOY / "fleet-portal.env.example").read_text()
    return set(re.findall(r"^#?([A-Z][A-Z0-9_]+)=", text, flags=re.MULTILINE))


def test_the_environment_template_lists_every_variable_the_portal_and_gunicorn_read():
    read = _variables_read(ROOT / "portal" / "settings.py")
    read |= _variables_read(ROOT / "portal" / "env.py")
    read |= set(re.findall(r'"(GUNICORN_[A-Z_]+)"', (DEPLOY / "gunicorn.conf.py").read_text()))

    assert len(read) > 50  # the pattern still finds the settings' variables
    assert read - _template_variables() == set()


def test_the_environment_template_holds_no_secret_value():
    text = (DEPLOY / "fleet-portal.env.example").read_text()

    for name in (
        "DJANGO_SECRET_KEY",
        "FLEET_SECRET_KEY",
        "FLEET_ACCESS_TOKEN",
        "FLEET_WEBHOOK_TOKENS",
        "FLEET_FIELD_KEYS",
        "OIDC_CLIENT_SECRET",
    ):
        assert re.search(rf"^{name}=$", text, flags=re.MULTILINE), name


def _unit(name: str) -> configparser.ConfigParser:
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read(DEPLOY / "systemd" / name)
    return unit


def test_the_units_run_the_shipped_configuration_restart_and_read_the_environment_file():
    portal, worker = _unit("fleet-portal.service"), _unit("fleet-portal-worker.service")

    assert "--config /srv/fleet-portal/deploy/gunicorn.conf.py" in portal["Service"]["ExecStart"]
    assert worker["Service"]["ExecStart"].endswith("manage.py db_worker")
    for unit in (portal, worker):
        service = unit["Service"]
        assert service["EnvironmentFile"] == "/etc/fleet-portal/env"
        assert service["Restart"] == "always"
        assert service["User"] == "fleet-portal"
        assert service["NoNewPrivileges"] == "yes"
    # Stopping waits longer than gunicorn's graceful_timeout (30 s).
    assert int(portal["Service"]["TimeoutStopSec"]) > 30
    assert _unit("nginx.service.d/fleet-portal.conf")["Service"]["Restart"] == "on-failure"
