"""The HTTP under `FleetClient`: one pooled, signed session and its answers' bodies.

`signed_session` sends the three headers of spec 5.2 on every request and
retries connect errors within the call's budget (`retries.connect_retries`);
`read_body` reads an answer to its end, bounded in size and time;
`upstream_unavailable` says what a request that got no usable answer ran into, and
whether it was sent at all.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from http.cookiejar import DefaultCookiePolicy
from typing import Final

import requests
from requests.adapters import HTTPAdapter
from requests.auth import AuthBase
from urllib3.exceptions import (
    ConnectTimeoutError,
    DecodeError,
    MaxRetryError,
    ProtocolError,
    ReadTimeoutError,
)

from fleet.api.errors import UpstreamUnavailable
from fleet.api.retries import connect_retries
from fleet.api.signing import signature
from portal.lib.redaction import protect_library_loggers, register_secret

_USER_AGENT: Final = "fleet-portal-api-client/1"


class _FleetAuth(AuthBase):
    """The three headers of spec 5.2, on every request of the session."""

    __slots__ = ("_headers",)

    def __init__(self, access_token: str, key: str) -> None:
        self._headers = {
            "Authorization": f"Basic {access_token}",
            "Key": key,
            "cache-control": "no-cache",
        }

    def __repr__(self) -> str:
        return "<FleetAuth>"

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        request.headers.update(self._headers)
        return request


def signed_session(*, access_token: str, secret_key: str, max_attempts: int) -> requests.Session:
    """A pooled session that signs every request with this credential pair.

    The pair and its signature are registered for redaction from every log.
    """
    # The signature covers neither body, URL nor time (spec 5.3): once per session.
    key = signature(access_token=access_token, secret_key=secret_key)
    register_secret(access_token, secret_key, key)
    protect_library_loggers()
    session = requests.Session()
    session.auth = _FleetAuth(access_token, key)  # also keeps ~/.netrc out
    session.headers.update({"User-Agent": _USER_AGENT, "Accept": "application/json"})
    # Server-to-server calls carry no state between users.
    session.cookies.set_policy(DefaultCookiePolicy(allowed_domains=[]))
    adapter = HTTPAdapter(
        pool_connections=4, pool_maxsize=32, max_retries=connect_retries(max_attempts)
    )
    session.mount("https://", adapter)
    session.mount("http://", adapter)
    return session


class AnswerTooLarge(requests.RequestException):
    """The answer's body is larger than the client reads (`read_body`'s `max_bytes`)."""


class AnswerTooSlow(requests.RequestException):
    """The answer's body took longer to arrive than the client waits (`seconds`)."""


# What `read_body` asks of the connection at a time: one read of the socket at most.
_READ: Final = 1 << 20


def read_body(
    response: requests.Response,
    *,
    max_bytes: int,
    seconds: float,
    clock: Callable[[], float] = time.monotonic,
) -> bytearray:
    """The whole body, decoded, as it arrives: at most `max_bytes` of it (after any
    Content-Encoding is undone: a small gzip can hold gigabytes), within `seconds` of
    its headers (each read of the socket waits the read timeout at most, so a server
    that sends a byte just in time can hold the answer that long, no longer);
    `AnswerTooLarge` or `AnswerTooSlow` past either, `AnswerTooLarge` at once for a
    Content-Length past it. The answer is hostile until read: its size and pace are the
    server's to choose.

    Read into one growing buffer (a large one grows in place): a large fleet's answer of
    a hundred megabytes is never held twice. The connection goes back to the pool once
    the body is read. urllib3's errors become the `requests` errors that
    `response.content` raises, so that callers see one family.
    """
    try:
        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > max_bytes:
            raise AnswerTooLarge(f"Content-Length {declared}", response=response)
        ends = clock() + seconds
        body = bytearray()
        while chunk := response.raw.read1(_READ, decode_content=True):
            body += chunk
            if len(body) > max_bytes:
                raise AnswerTooLarge(f"more than {max_bytes} bytes", response=response)
            if clock() > ends:
                raise AnswerTooSlow(f"not whole after {seconds:g} s", response=response)
        return body
    except ReadTimeoutError as exc:
        raise requests.ReadTimeout(exc, response=response) from exc
    except ProtocolError as exc:  # the connection ended before the body did
        raise requests.ConnectionError(exc, response=response) from exc
    except DecodeError as exc:
        raise requests.exceptions.ContentDecodingError(exc, response=response) from exc
    finally:
        response.close()


def upstream_unavailable(
    error: requests.RequestException, *, read_timeout: float, route: str, method: str
) -> UpstreamUnavailable:
    """The `FleetError` of a request that got no usable answer."""
    return UpstreamUnavailable(
        _describe(error, read_timeout),
        sent=not _nothing_was_sent(error),
        route=route,
        method=method,
    )


def _nothing_was_sent(error: requests.RequestException) -> bool:
    """True for connect errors: the request never left, urllib3 has retried them."""
    if isinstance(error, requests.ConnectTimeout):
        return True
    cause = error.args[0] if error.args else None
    if isinstance(cause, MaxRetryError):
        cause = cause.reason
    # NewConnectionError (refused, unresolvable) is a ConnectTimeoutError too.
    return isinstance(cause, ConnectTimeoutError)


def _describe(error: requests.RequestException, read_timeout: float) -> str:
    if isinstance(error, AnswerTooLarge):
        return f"the answer was too large to read ({error}; FLEET_ANSWER_MAX_BYTES)"
    if isinstance(error, AnswerTooSlow):
        return f"the answer came too slowly ({error}; FLEET_ANSWER_SECONDS)"
    if isinstance(error, requests.ConnectTimeout):
        return "could not connect in time"
    if isinstance(error, requests.ReadTimeout):
        return f"no answer within {read_timeout:g} s"
    if _nothing_was_sent(error):
        return "could not connect"
    if isinstance(error, requests.ConnectionError):
        return "the connection was closed before a complete answer"
    return f"the request failed ({type(error).__name__})"
