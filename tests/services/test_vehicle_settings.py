"""The vehicle list's settings: defaults, and bad values refused at start-up by name."""

from __future__ import annotations

import subprocess
import sys

import pytest
from django.conf import settings

from tests.conftest import ROOT
from tests.test_settings import start


def test_the_vehicle_list_defaults_to_a_60_second_ttl() -> None:
    assert settings.FLEET_VEHICLES_TTL == 60
    assert settings.FLEET_VEHICLES_KEEP >= settings.FLEET_VEHICLES_TTL
    assert settings.FLEET_VEHICLES_WAIT == 5


def test_the_settings_are_read_from_the_environment() -> None:
    script = (
        "import django; django.setup(); from django.conf import settings as s; "
        "print(s.FLEET_VEHICLES_TTL, s.FLEET_VEHICLES_KEEP, s.FLEET_VEHICLES_WAIT, "
        "s.FLEET_VEHICLES_FAILURE_BACKOFF)"
    )
    environment = {
        "DJANGO_SETTINGS_MODULE": "portal.settings",
        "DJANGO_ENV_FILE": "",
        "DJANGO_SECRET_KEY": "a-test-secret-key-long-enough-for-django",
        "FLEET_VEHICLES_TTL": "30",
        "FLEET_VEHICLES_KEEP": "3600",
        "FLEET_VEHICLES_WAIT": "2.5",
        "FLEET_VEHICLES_FAILURE_BACKOFF": "0",
        "PATH": "/usr/bin:/bin",
    }
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert result.stdout.split() == ["30.0", "3600.0", "2.5", "0.0"]


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("FLEET_VEHICLES_TTL", "a minute"),
        ("FLEET_VEHICLES_TTL", "0"),
        ("FLEET_VEHICLES_TTL", "inf"),
        ("FLEET_VEHICLES_WAIT", "-1"),
        ("FLEET_VEHICLES_FAILURE_BACKOFF", "nan"),
        ("FLEET_VEHICLES_KEEP", "30"),  # shorter than the TTL
    ],
)
def test_a_bad_value_stops_start_up_naming_the_variable(name: str, value: str) -> None:
    result = start(**{name: value})

    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert f"{name} must be a number of seconds" in result.stderr
