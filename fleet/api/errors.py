"""Every way a Fleet API call can fail, as one exception hierarchy.

```
FleetError
├── ApiError                    the server answered with an error
│   ├── CredentialsRejected
│   │   ├── NotAuthorized           v1 fbk_001
│   │   ├── Unauthorized            v2 …:error:unauthorized
│   │   └── AuthenticationFailed    v2 …:error:authentication-failed
│   ├── PermissionDenied            v1 fbk_002, v2 …:error:forbidden
│   ├── LoginRejected               POST /key/generator refused the user (a known code)
│   ├── NotFound                    404
│   │   └── IndicationRouteMissing  404 on POST /v2/driver-indications (fleet.api.indications)
│   ├── IndicationRefused           422 …:error:indication-refused (fleet.api.indications)
│   └── RetryLater                  the server asked to come back later
│       ├── RateLimited             429
│       └── GatewayTimeout          504
├── UpstreamUnavailable         no usable answer: connection, timeout, 5xx
└── InvalidResponse             an answer that is not what the spec says
```

The two error formats (v1 envelope, v2 RFC 7807 problem) are read by
`parse_v1_error` and `parse_v2_problem`; `error_for_response` turns an answer
into the right exception. Nothing here knows about HTTP libraries.

Each class carries its `outcome`: what the failure means to the person who
asked, the one classification every feature starts from.
"""

from __future__ import annotations

import email.utils
import math
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import UTC
from enum import StrEnum
from typing import Any, ClassVar, Final, Literal

from portal.lib.redaction import redact


class Outcome(StrEnum):
    """What a failed call means to the person who asked; a feature that must tell more
    apart (a CNH lookup's charge) refines it. The values are stored: never change one."""

    RATE_LIMITED = "rate_limited"  # 429, or the route cooling down: wait `retry_after`
    UNAVAILABLE = "unavailable"  # no usable answer, or a 504: try again later
    CREDENTIALS_REJECTED = "credentials_rejected"  # the portal's API credentials
    PERMISSION_DENIED = "permission_denied"  # valid credentials, not for this company
    LOGIN_REJECTED = "login_rejected"  # a web-app user's e-mail or password
    NOT_FOUND = "not_found"
    ERROR = "error"  # anything else: refused or unreadable


class FleetError(Exception):
    """A Fleet API call failed. `str()` is safe to log and show an operator."""

    summary = "The Fleet API call failed"
    outcome: ClassVar[Outcome] = Outcome.ERROR
    # Seconds before the API may be called again, when it said so (`RetryLater`).
    retry_after: float | None = None

    def __init__(
        self,
        message: str = "",
        *,
        status: int | None = None,
        code: str | None = None,
        trace_id: str | None = None,
        route: str = "",
        method: str | None = None,
    ) -> None:
        # The server's own words are kept, minus anything that looks like a
        # credential: some servers echo what they were sent.
        self.message = redact(message) or self.summary
        self.status = status
        self.code = code
        self.trace_id = trace_id
        self.route = route
        self.method = method
        super().__init__(self.message)

    def _details(self) -> list[str]:
        details = []
        if where := " ".join(p for p in (self.method, self.route) if p):
            details.append(where)
        if self.status is not None:
            details.append(f"HTTP {self.status}")
        if self.code:
            details.append(f"code {self.code}")
        if self.trace_id:
            details.append(f"trace {self.trace_id}")
        return details

    def __str__(self) -> str:
        text = self.summary if self.message == self.summary else f"{self.summary}: {self.message}"
        details = self._details()
        return f"{text} ({', '.join(details)})" if details else text

    def __repr__(self) -> str:
        fields = ", ".join(
            f"{name}={value!r}" for name, value in vars(self).items() if value is not None
        )
        return f"{type(self).__name__}({fields})"

    def __reduce__(self) -> tuple[Any, ...]:
        # Keyword-only fields would be lost by Exception's default pickling.
        return (type(self), (self.message,), vars(self))


class ApiError(FleetError):
    """The API answered with an error body (or an error status without one)."""

    summary = "The Fleet API refused the request"


class CredentialsRejected(ApiError):
    """The access token or the signature was refused (spec 5.4)."""

    summary = "The Fleet API rejected the credentials (check the access token and secret key)"
    outcome = Outcome.CREDENTIALS_REJECTED


class NotAuthorized(CredentialsRejected):
    """v1 `fbk_001`: unknown token or wrong signature; the API does not say which."""


class Unauthorized(CredentialsRejected):
    """v2 `…:error:unauthorized`: `Authorization`/`Key` missing or not `Basic`."""


class AuthenticationFailed(CredentialsRejected):
    """v2 `…:error:authentication-failed`: wrong signature or unknown token."""


class PermissionDenied(ApiError):
    """The credentials are valid but the account may not access the company."""

    summary = "The Fleet API account has no permission for this company"
    outcome = Outcome.PERMISSION_DENIED


class LoginRejected(ApiError):
    """`POST /key/generator` refused the web-app user's e-mail or password."""

    summary = "The fleet web application refused this user's e-mail or password"
    outcome = Outcome.LOGIN_REJECTED


class NotFound(ApiError):
    """The resource does not exist (404)."""

    summary = "The Fleet API does not know this resource"
    outcome = Outcome.NOT_FOUND


class RetryLater(ApiError):
    """The server asked to come back later; `retry_after` says when, in seconds."""

    summary = "The Fleet API asked to retry later"

    def __init__(self, message: str = "", *, retry_after: float | None = None, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.retry_after = retry_after

    def _details(self) -> list[str]:
        details = super()._details()
        if self.retry_after is not None:
            details.append(f"retry after {math.ceil(self.retry_after)} s")
        return details


class RateLimited(RetryLater):
    """429, or a call refused locally because the route is cooling down."""

    summary = "The Fleet API rate limit was reached"
    outcome = Outcome.RATE_LIMITED


class GatewayTimeout(RetryLater):
    """504: an upstream service of the API did not answer in time (spec 7.3)."""

    summary = "The Fleet API timed out waiting for an upstream service"
    outcome = Outcome.UNAVAILABLE


class UpstreamUnavailable(FleetError):
    """No usable answer: refused or dropped connection, timeout, or a 5xx.

    `sent` is False only when the request certainly never reached the server
    (a connect error); otherwise a POST may have been processed.
    """

    summary = "The Fleet API is unavailable"
    outcome = Outcome.UNAVAILABLE

    def __init__(self, message: str = "", *, sent: bool = True, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.sent = sent


# The methods that only read: sent twice, they do nothing twice.
IDEMPOTENT: Final = frozenset({"GET", "HEAD", "OPTIONS"})


def resendable(error: FleetError, *, method: str) -> bool:
    """Whether the request that failed with `error` may be sent again without risk of
    doing (and being charged for) what it asked twice: the API said to come back later
    (429, 504: it did nothing), the request never left this machine (a connect error),
    or it was sent, no answer came, and it only reads. The client's retries and the CNH
    lookups' ask this one question."""
    if isinstance(error, RetryLater):
        return True
    if isinstance(error, UpstreamUnavailable):
        return not error.sent or (error.status is None and method in IDEMPOTENT)
    return False


class InvalidResponse(FleetError):
    """The answer is not JSON, or not the shape the spec describes."""

    summary = "The Fleet API answered something unexpected"


@dataclass(frozen=True, slots=True)
class ErrorBody:
    """The members of a v1 or v2 error body that every error carries."""

    format: Literal["v1", "v2"]
    code: str | None
    message: str
    trace_id: str | None = None


def parse_v1_error(body: object) -> ErrorBody | None:
    """The v1 envelope `{"error": true, "code": "fbk_xxx", "message": …}`, if it is one.

    Recognised by `error: true` alone, whatever the HTTP status: v1 may answer
    200 with an error envelope.
    """
    if not isinstance(body, dict) or body.get("error") is not True:
        return None
    code, message, trace_id = body.get("code"), body.get("message"), body.get("traceId")
    return ErrorBody(
        "v1",
        code=code if isinstance(code, str) else None,
        message=message if isinstance(message, str) else "",
        # Not in v1's envelope (7.1), but kept when a server adds one: support asks for it.
        trace_id=trace_id if isinstance(trace_id, str) and trace_id else None,
    )


def parse_v2_problem(body: object) -> ErrorBody | None:
    """An RFC 7807 problem (`type`, `title`, `detail`, `traceId`…), if it is one."""
    if not isinstance(body, dict) or not isinstance(body.get("type"), str):
        return None
    detail, title, trace_id = body.get("detail"), body.get("title"), body.get("traceId")
    message = detail if isinstance(detail, str) and detail else title
    return ErrorBody(
        "v2",
        code=body["type"],
        message=message if isinstance(message, str) else "",
        trace_id=trace_id if isinstance(trace_id, str) else None,
    )


_V1_CODES: dict[str, type[FleetError]] = {
    "fbk_001": NotAuthorized,
    "fbk_002": PermissionDenied,
}
# Matched by suffix: the service name inside the URN is not fixed by the spec.
_V2_TYPES: tuple[tuple[str, type[FleetError]], ...] = (
    (":error:unauthorized", Unauthorized),
    (":error:authentication-failed", AuthenticationFailed),
    (":error:forbidden", PermissionDenied),
    (":error:not-found", NotFound),
    (":error:too-many-requests", RateLimited),
    (":error:gateway-timeout", GatewayTimeout),
)
_STATUSES: dict[int, type[FleetError]] = {
    401: CredentialsRejected,
    403: PermissionDenied,
    404: NotFound,
    429: RateLimited,
    504: GatewayTimeout,
}


def _error_class(
    body: ErrorBody | None, status: int, *, login: bool, wrong_login_codes: Collection[str]
) -> type[FleetError]:
    if body is not None and body.code:
        if body.format == "v1" and (known := _V1_CODES.get(body.code)):
            return known
        if body.format == "v2":
            for suffix, cls in _V2_TYPES:
                if body.code.endswith(suffix):
                    return cls
        # The login route's refusal of the user's own password has a v1 code the
        # spec does not document: only the codes the deployment was told about
        # (FLEET_WRONG_LOGIN_CODES) mean "wrong password". Any other code is an
        # error of its own, shown with its code and message, whatever the status
        # (a 401 here is not the portal's credentials: those are fbk_001).
        if login and body.format == "v1" and status not in (429,) and status < 500:
            return LoginRejected if body.code in wrong_login_codes else ApiError
    if known := _STATUSES.get(status):
        return known
    if status >= 500:
        return UpstreamUnavailable
    if body is None:
        return InvalidResponse if status < 400 else ApiError
    return ApiError


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a `Retry-After` header: delta-seconds or an HTTP date."""
    if value is None or not (value := value.strip()):
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = when.timestamp() - (time.time() if now is None else now)
    if math.isnan(seconds):
        return None
    return max(0.0, seconds)


def error_for_response(
    *,
    status: int,
    body: object,
    headers: Mapping[str, str],
    route: str,
    method: str | None = None,
    login: bool = False,
    wrong_login_codes: Collection[str] = (),
) -> FleetError | None:
    """The exception an answer stands for, or None when it is a success.

    `body` is the decoded JSON (None when the answer was not JSON); `headers`
    any case-insensitive mapping. `login` marks `POST /key/generator`: its
    v1 codes in `wrong_login_codes` become `LoginRejected`, any other code an
    `ApiError` that keeps the code and the vendor's message.
    """
    parsed = parse_v1_error(body)
    content_type = headers.get("Content-Type", "")
    # A success body may well have members called `type` and `status`; only
    # an error status or the problem media type make it a problem.
    if parsed is None and (status >= 400 or "problem+json" in content_type):
        parsed = parse_v2_problem(body)
    if parsed is None and 200 <= status < 300:
        return None
    cls = _error_class(parsed, status, login=login, wrong_login_codes=wrong_login_codes)
    trace_id = (parsed.trace_id if parsed else None) or headers.get("X-Trace-Id")
    if parsed is not None:
        message = parsed.message
    elif 300 <= status < 400:
        message = f"unexpected redirect (HTTP {status})"
    else:
        message = f"HTTP {status} without a Fleet API error body"
    fields: dict[str, Any] = {
        "status": status,
        "code": parsed.code if parsed else None,
        "trace_id": trace_id,
        "route": route,
        "method": method,
    }
    if issubclass(cls, RetryLater):
        return cls(message, retry_after=parse_retry_after(headers.get("Retry-After")), **fields)
    return cls(message, **fields)
