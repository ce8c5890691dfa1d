"""The request signature of the Fleet API (spec section 5.3).

The `Key` header is the lowercase hex HMAC-SHA256 of the access token, keyed
with the secret key. It covers neither body, URL nor time, so callers compute
it once per credential pair and keep it (`FleetClient` does, in its auth).
"""

from __future__ import annotations

import hashlib
import hmac


def signature(*, access_token: str, secret_key: str) -> str:
    """The value of the `Key` header for this credential pair.

    Not memoised here on purpose: a module-level cache would keep every secret
    key it ever saw alive for the life of the process.
    """
    return hmac.new(
        secret_key.encode("utf-8"), access_token.encode("utf-8"), hashlib.sha256
    ).hexdigest()
