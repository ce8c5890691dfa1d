"""Signing outgoing webhooks as the Standard Webhooks specification says.

A secret is `whsec_` and the base64 of random bytes; the key is those bytes.
Each POST carries `webhook-id` (the same on every retry of one message, so
that a receiver can drop a repeat), `webhook-timestamp` (Unix seconds of
this attempt) and `webhook-signature`: `v1,` and the base64 of the
HMAC-SHA256 of `<id>.<timestamp>.<body>`. Pure functions: no settings, no
database.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from typing import Final

SECRET_PREFIX: Final = "whsec_"  # noqa: S105 - the format's prefix, not a secret
_SECRET_BYTES: Final = 32


def secret_new() -> str:
    """A new subscription secret, `whsec_` and 32 random bytes in base64."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(_SECRET_BYTES)).decode()


def signature(*, secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """The `webhook-signature` value of one attempt: `v1,<base64 HMAC-SHA256>`."""
    key = base64.b64decode(secret.removeprefix(SECRET_PREFIX))
    signed = f"{message_id}.{timestamp}.".encode() + body
    digest = hmac.new(key, signed, hashlib.sha256).digest()
    return f"v1,{base64.b64encode(digest).decode()}"


def signed_headers(*, secret: str, message_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """The three headers of the specification, and the body's content type."""
    return {
        "content-type": "application/json",
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signature(
            secret=secret, message_id=message_id, timestamp=timestamp, body=body
        ),
    }
