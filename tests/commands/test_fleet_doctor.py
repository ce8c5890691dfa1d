from __future__ import annotations

import hashlib
import hmac
import io

import pytest
from django.core.management import CommandError, call_command
from django.utils import translation


def doctor(*args: str) -> tuple[str, bool]:
    """Run fleet_doctor in English; return its output and whether it passed."""
    out = io.StringIO()
    with translation.override("en"):
        try:
            call_command("fleet_doctor", *args, stdout=out)
        except CommandError:
            return out.getvalue(), False
    return out.getvalue(), True


def test_working_configuration_passes_with_one_call_per_version(fleet_settings, emulator):
    output, passed = doctor()

    assert passed, output
    assert "the account lists 200 vehicles" in output
    assert "The Fleet API configuration works." in output
    assert emulator.calls("GET /key/list-cars") == 1
    assert emulator.calls("GET /v2/crlv/vehicles/{carPlate}") == 1


@pytest.mark.parametrize(
    ("token", "key"),
    [
        ("other-env-access-token", "other-env-secret-key"),  # the other environment's pair
        ("demo-secret-key", "demo-access-token"),  # token and key swapped
        ("demo-access-token", "demo-secret-key-old"),  # a stale key
    ],
)
def test_rejected_signature_is_explained(fleet_settings, token, key):
    fleet_settings.FLEET_ACCESS_TOKEN = token
    fleet_settings.FLEET_SECRET_KEY = key

    output, passed = doctor()

    assert not passed
    assert "the signature was rejected: check that FLEET_SECRET_KEY is the key exactly" in output
    assert "belong to the emulator environment" in output
    assert key not in output


def test_a_secret_key_that_looks_base64_is_accepted_and_works(fleet_settings, emulator):
    fleet_settings.FLEET_ACCESS_TOKEN = "base64-looking-access-token"
    fleet_settings.FLEET_SECRET_KEY = "c2VjcmV0LWtleS1vZi10aGUtcGFuZWwrLzEyMzQ1Ng=="

    output, passed = doctor()

    assert passed, output
    assert "FLEET_SECRET_KEY: set, no stray characters" in output
    assert fleet_settings.FLEET_SECRET_KEY not in output
    assert emulator.calls("GET /key/list-cars") == 1


def test_secret_key_with_a_trailing_newline_is_caught(fleet_settings):
    fleet_settings.FLEET_SECRET_KEY = "demo-secret-key\n"

    output, passed = doctor("--offline")

    assert not passed
    assert "FLEET_SECRET_KEY: has whitespace or a newline" in output


def test_account_without_permission_is_explained(fleet_settings):
    fleet_settings.FLEET_ACCESS_TOKEN = "no-permission-access-token"
    fleet_settings.FLEET_SECRET_KEY = "no-permission-secret-key"

    output, passed = doctor()

    assert not passed
    assert "the account has no permission for this company" in output


def test_unreachable_api_is_explained(fleet_settings):
    fleet_settings.FLEET_BASE_URL = "http://127.0.0.1:9"  # the discard port: nothing listens

    output, passed = doctor()

    assert not passed
    assert "the Fleet API could not be reached at http://127.0.0.1:9" in output


def test_offline_checks_call_nothing(fleet_settings, emulator):
    output, passed = doctor("--offline")

    assert passed, output
    assert emulator.calls("GET /key/list-cars") == 0


def test_output_never_contains_the_secret_or_the_signature(fleet_settings):
    signature = hmac.new(b"demo-secret-key", b"demo-access-token", hashlib.sha256).hexdigest()

    output, _ = doctor()

    assert "demo-secret-key" not in output
    assert signature not in output
