"""`credential_problems`: the copy-paste mistakes of spec 5.3, named without the value."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from fleet.api.client import FleetClient
from fleet.api.credentials import credential_problems
from fleet.api.signing import signature
from tests.api.conftest import MakeClient


def test_empty_value_is_reported() -> None:
    assert credential_problems("") == ["is empty"]


def test_whitespace_only_value_is_reported_as_such_not_as_quotes() -> None:
    assert credential_problems("   ") == ["is only whitespace"]


@pytest.mark.parametrize("value", [" token", "token ", "token\n", "\ttoken", "token\r\n"])
def test_whitespace_or_newline_at_the_ends_is_reported(value: str) -> None:
    problems = credential_problems(value)
    assert len(problems) == 1
    assert "start or end" in problems[0]


def test_newline_inside_the_value_is_reported() -> None:
    assert credential_problems("abc\ndef") == ["contains a newline or a tab"]


@pytest.mark.parametrize("value", ['"token"', "'token'", "token'", "\u201ctoken\u201d", "`token`"])
def test_quotes_are_reported(value: str) -> None:
    assert credential_problems(value) == ["is wrapped in quotes (remove them)"]


@pytest.mark.parametrize(
    "value",
    [
        "yPNYb08DdAuyyniZDspCMm/XbbYCTNdhk0F1BOD22As=",  # base64 of 32 bytes
        "c2VjcmV0LWtleS1vZi10aGUtcGFuZWwrLzEyMzQ1Ng==",  # the emulator's base64-looking key
        "s3cr3t-K3y/with+chars=",  # a vector's key
        "c8f3586f4f03740bb2ca78990eca42326fd76db6024cd76193417504e0f6d80b",  # hex
    ],
)
def test_a_secret_key_that_looks_base64_or_hex_is_a_valid_key(value: str) -> None:
    # Spec 5.3 forbids a base64 *signature*; the panel may issue any key.
    assert credential_problems(value) == []


def test_a_base64_looking_key_signs_with_the_hex_digest_and_the_emulator_accepts_it(
    make_client: MakeClient,
) -> None:
    secret = "c2VjcmV0LWtleS1vZi10aGUtcGFuZWwrLzEyMzQ1Ng=="
    expected = hmac.new(secret.encode(), b"base64-looking-access-token", hashlib.sha256)
    assert signature(access_token="base64-looking-access-token", secret_key=secret) == (
        expected.hexdigest()
    )

    client = make_client(access_token="base64-looking-access-token", secret_key=secret)

    assert client.list_vehicle_columns().total == 200


@pytest.mark.parametrize(
    "value", ["demo-secret-key", "demo-access-token", "7f1c2a9e-3b4d-4e5f-8a6b-1c2d3e4f5a6b"]
)
def test_good_values_have_no_problems(value: str) -> None:
    assert credential_problems(value) == []


def test_problems_never_quote_the_value() -> None:
    value = ' "s3cr3t-value\n'
    problems = credential_problems(value)
    assert len(problems) >= 2
    assert all("s3cr3t" not in problem for problem in problems)


def test_client_refuses_a_secret_with_a_trailing_newline_without_showing_it() -> None:
    with pytest.raises(ValueError, match="secret_key has whitespace") as raised:
        FleetClient(
            base_url="http://127.0.0.1:9", access_token="demo-access-token", secret_key="s3cr3t\n"
        )
    assert "s3cr3t" not in str(raised.value)


def test_client_refuses_an_empty_access_token() -> None:
    with pytest.raises(ValueError, match="access_token is empty"):
        FleetClient(base_url="http://127.0.0.1:9", access_token="", secret_key="demo-secret-key")
