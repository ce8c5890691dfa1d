"""Outside the emulator a webhook token must look random (fleet/webhooks/tokens.py);
tests/test_settings.py checks that start-up stops on one that does not."""

from __future__ import annotations

import re
import secrets
import string
import uuid

import pytest

from fleet.webhooks.tokens import webhook_token_problems
from tests.conftest import ROOT


@pytest.mark.parametrize(
    "make",
    [
        lambda: secrets.token_urlsafe(32),
        lambda: secrets.token_urlsafe(24),  # 32 characters
        lambda: secrets.token_hex(16),
        lambda: secrets.token_hex(32),
        lambda: str(uuid.uuid4()),
        lambda: "".join(secrets.choice(string.digits) for _ in range(32)),
    ],
    ids=["urlsafe-32", "urlsafe-24", "hex-16", "hex-32", "uuid4", "digits"],
)
def test_it_accepts_what_a_random_generator_makes(make):
    refused = [token for token in (make() for _ in range(3000)) if webhook_token_problems(token)]

    assert refused == []


@pytest.mark.parametrize(
    ("token", "problem"),
    [
        ("k3Jq9ZtX2mWv8RbLp4Nc", "is shorter than 32 characters"),
        ("dev-webhook-token", "an example value from the documentation"),
        ("dev-webhook-token-Xq84KzLm2Vt9Rw3Np7Bc", "an example value from the documentation"),
        ("changeme-changeme-changeme-changeme", "looks like a placeholder"),
        ("Change_Me_Before-Going-Live-2031-Q4", "looks like a placeholder"),
        ("<your-token-here-at-least-32-chars>", "looks like a placeholder"),
        ("our-fleet-portal-webhook-for-production", "looks like a placeholder"),
        ("Qwerty-Uiop-Zxcv-Bnm-Lkj-Hgf-Dsa-9182", "looks like a placeholder"),
        ("a" * 40, "is one character repeated"),
        ("Xk7#Xk7#Xk7#Xk7#Xk7#Xk7#Xk7#Xk7#", "is a short sequence repeated"),
        ("1111111111222222222233333333334444", "has fewer than 6 different characters"),
        ("abcdefghijklmnopqrstuvwxyz0123456789", "consecutive characters"),
        ("98765432109876543210zyxwvutsrqpon", "consecutive characters"),
    ],
)
def test_it_refuses_a_guessable_token_saying_why_without_the_value(token, problem):
    problems = webhook_token_problems(token)

    assert any(problem in phrase for phrase in problems), problems
    assert not any(token in phrase for phrase in problems)


def _documented_tokens() -> set[str]:
    """Webhook tokens the documentation shows: in a receiver URL, or as the default."""
    found = set()
    for document in ("README.md", "emulator/README.md"):
        text = (ROOT / document).read_text()
        found |= set(re.findall(r"/webhooks/fleet/([^/\s`<>]+)/", text))
        found |= set(re.findall(r"\| `FLEET_WEBHOOK_TOKENS` \| `([^`]+)`", text))
    return found


def test_it_refuses_every_token_the_documentation_shows():
    documented = _documented_tokens()

    assert "dev-webhook-token" in documented  # the scan finds what is there
    assert {token for token in documented if not webhook_token_problems(token)} == set()
