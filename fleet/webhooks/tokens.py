"""What a webhook token must look like outside the emulator: random, and not an example.

The token in `/webhooks/fleet/<token>/` is all that tells the fleet platform's
deliveries from anyone else's POST (the spec gives webhooks no signature), so
a token that can be guessed lets anyone create fines and notifications. The
API credentials come from the vendor's panel and are refused only for certain
copy-paste mistakes (`fleet.api.credentials`); this token is made by whoever
deploys the portal, so outside the emulator it is also refused unless it looks
like the output of a random generator, e.g.
`python -c "import secrets; print(secrets.token_urlsafe(32))"`.

The rules are calibrated so that such a generator's output (hex, url-safe
base64, a UUID, even digits alone) is practically never refused. Messages
name the problem, never the value or a part of it.

Pure functions, no Django: `portal/env.py` calls `webhook_token_problems`.
"""

from __future__ import annotations

import itertools
import re
from typing import Final

MIN_LENGTH: Final = 32
# Fewer different characters than this in 32 or more is not random: 32 random digits
# have fewer than 6 less than once in ten million tries, hex or base64 far less often.
_MIN_DISTINCT: Final = 6
_MIN_RUN: Final = 4
# Values the documentation, the emulator and the tests show (compared without case).
DOCUMENTED_EXAMPLES: Final = frozenset(
    {
        "dev-webhook-token",
        "bench-webhook-token",
        "demo-access-token",
        "demo-secret-key",
        "demo-password",
        "other-env-access-token",
        "other-env-secret-key",
        "no-permission-access-token",
        "no-permission-secret-key",
        "django-insecure-dev-only-not-for-production",
    }
)
# Words that mark a placeholder, looked for without case and separators ("Change-Me").
# Six letters or more: a random token contains one by chance less than once in ten
# million (a shorter word, such as "test", would refuse a good token now and then).
_PLACEHOLDER_WORDS: Final = (
    "changeme",
    "replaceme",
    "example",
    "placeholder",
    "yourtoken",
    "secret",
    "password",
    "webhook",
    "insecure",
    "default",
    "qwerty",
    "asdfgh",
)
_SEPARATORS = re.compile(r"[\s\-_.:/+=~]+")


def webhook_token_problems(token: str) -> list[str]:
    """Why `token` does not look random enough to guard the receiver, as phrases
    without the value; empty when it does."""
    problems = []
    if len(token) < MIN_LENGTH:
        problems.append(f"is shorter than {MIN_LENGTH} characters")
    folded = token.lower()
    squeezed = _SEPARATORS.sub("", folded)
    if any(example in folded for example in DOCUMENTED_EXAMPLES):
        problems.append("is, or contains, an example value from the documentation")
    elif any(word in squeezed for word in _PLACEHOLDER_WORDS):
        problems.append("looks like a placeholder (a word such as 'changeme' or 'secret' in it)")
    if token and len(set(token)) == 1:
        problems.append("is one character repeated")
    elif _repeats_a_sequence(token):
        problems.append("is a short sequence repeated")
    elif len(set(token)) < _MIN_DISTINCT:
        problems.append(f"has fewer than {_MIN_DISTINCT} different characters")
    if _mostly_consecutive(token):
        problems.append("is mostly a run of consecutive characters (abcd…, 1234…)")
    return problems


def _repeats_a_sequence(token: str) -> bool:
    """Whether `token` is a sequence of at most half its length, repeated (`abcabcab`)."""
    return any(
        token == (token[:period] * (len(token) // period + 1))[: len(token)]
        for period in range(1, len(token) // 2 + 1)
    )


def _mostly_consecutive(token: str) -> bool:
    """Whether runs of four or more consecutive characters (`abcd`, `9876`) make up half
    of `token` or more; 32 random digits have such runs over half of them practically never."""
    covered = 0
    run, direction = 1, 0
    for previous, current in itertools.pairwise(token):
        step = ord(current) - ord(previous)
        if step in (-1, 1) and step == direction:
            run += 1
            continue
        covered += run if run >= _MIN_RUN else 0
        run, direction = (2, step) if step in (-1, 1) else (1, 0)
    covered += run if run >= _MIN_RUN else 0
    return covered * 2 >= len(token) > 0
