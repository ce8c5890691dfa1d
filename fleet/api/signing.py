"""The request signature of the Fleet API (spec section 5.3).

The `Key` header is the lowercase hex HMAC-SHA256 of the access token, keyed
with the secret key. It covers neither body, URL nor time, so it is computed
once per credential pair and reused.
"""

from __future__ import annotations

import functools
import hashlib
import hmac


@functools.lru_cache(maxsize=8)
def signature(*, access_token: str, secret_key: str) -> str:
    """The value of the `Key` header for this credential pair."""
    return hmac.new(
        secret_key.encode("utf-8"), access_token.encode("utf-8"), hashlib.sha256
    ).hexdigest()
