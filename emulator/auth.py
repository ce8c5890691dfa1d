"""Authentication of API calls (spec section 5), with the emulator's own HMAC code.

The `Key` header must be the lowercase hex HMAC-SHA256 of the access token,
keyed with the secret key. Anything else (base64, upper-case hex, key and
message swapped, another algorithm, stray whitespace, a pair from the other
environment) simply fails to compare equal, which is the point: the
emulator holds the one right answer and accepts nothing near it.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

from emulator.errors import (
    AUTHENTICATION_FAILED,
    FORBIDDEN,
    NO_CACHE_MISSING,
    UNAUTHORIZED,
    Failure,
)
from emulator.messages import Request


@dataclass(frozen=True, slots=True)
class Credential:
    access_token: str
    secret_key: str
    may_access_company: bool = True


DEMO = Credential("demo-access-token", "demo-secret-key")
NO_PERMISSION = Credential(
    "no-permission-access-token", "no-permission-secret-key", may_access_company=False
)
# A valid pair whose secret key happens to look like base64 (letters, digits, `+`,
# `/`, `=` padding): the panel may issue such a key, and it signs like any other.
# The spec forbids a base64 *signature*, not this.
BASE64_LOOKING = Credential(
    "base64-looking-access-token", "c2VjcmV0LWtleS1vZi10aGUtcGFuZWwrLzEyMzQ1Ng=="
)
# Valid only in the vendor's other environment (sandbox vs production): it is
# printed at start-up for tests, and unknown here, like any foreign token.
OTHER_ENVIRONMENT = Credential("other-env-access-token", "other-env-secret-key")

_CREDENTIALS = {
    credential.access_token: credential for credential in (DEMO, NO_PERMISSION, BASE64_LOOKING)
}
_SCHEME = "basic "


def signature(*, access_token: str, secret_key: str) -> str:
    """The value the `Key` header must carry for this pair."""
    return hmac.new(
        secret_key.encode("utf-8"), access_token.encode("utf-8"), hashlib.sha256
    ).hexdigest()


def access_token(request: Request) -> str | None:
    """The token after `Basic `, exactly as sent (no trimming), or None."""
    authorization = request.header("Authorization")
    if authorization is None or authorization[: len(_SCHEME)].lower() != _SCHEME:
        return None
    return authorization[len(_SCHEME) :] or None


def authenticate(request: Request) -> Failure | None:
    """Why this call may not proceed, or None when it may.

    Checked in order: the credential headers are there, the token and the
    signature are right, the account may access the company, and
    `cache-control: no-cache` is sent.
    """
    token = access_token(request)
    key = request.header("Key")
    if token is None or key is None:
        return UNAUTHORIZED
    credential = _CREDENTIALS.get(token)
    # An unknown token is compared against a throwaway secret all the same,
    # so the answer takes as long as for a wrong signature.
    expected = signature(
        access_token=token,
        secret_key=credential.secret_key if credential else "unknown-token",
    )
    # Header values arrive as Latin-1 text; compare the bytes that were sent.
    signed = hmac.compare_digest(expected.encode("ascii"), key.encode("latin-1"))
    if credential is None or not signed:
        return AUTHENTICATION_FAILED
    if not credential.may_access_company:
        return FORBIDDEN
    if not _asks_no_cache(request.header("cache-control")):
        return NO_CACHE_MISSING
    return None


def _asks_no_cache(value: str | None) -> bool:
    directives = (value or "").lower().split(",")
    return any(directive.strip() == "no-cache" for directive in directives)
