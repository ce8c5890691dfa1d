"""The values that pass between the HTTP handler and the routes.

The handler turns the socket into a `Request`; a route turns a `Call` (the
request plus what routing found) into a `Response`; the handler writes it.
Routes never touch sockets, so they read as plain functions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from email.message import Message
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from emulator.minimal import Spellings

JSON = "application/json"
PROBLEM_JSON = "application/problem+json"
HTML = "text/html; charset=utf-8"
TEXT = "text/plain; charset=utf-8"

# A Host header we are willing to echo into an absolute URL.
_HOST = re.compile(r"[A-Za-z0-9.-]+(:\d{1,5})?|\[[0-9A-Fa-f:.]+\](:\d{1,5})?")


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    path: str  # as received: still percent-encoded, without the query string
    query: str
    headers: Message[str, str]
    body: bytes
    server_address: str  # host:port the server listens on, when Host is unusable

    def header(self, name: str) -> str | None:
        return self.headers.get(name)

    @property
    def is_v2(self) -> bool:
        return self.path == "/v2" or self.path.startswith("/v2/")

    @property
    def base_url(self) -> str:
        """The server's address as the client named it (links must work for it)."""
        host = self.header("Host") or ""
        if not _HOST.fullmatch(host):
            host = self.server_address
        return f"http://{host}"


@dataclass(frozen=True, slots=True)
class Call:
    """A request matched to a route."""

    request: Request
    params: Mapping[str, str] = field(default_factory=dict)
    trace_id: str | None = None  # set on v2 calls: every v2 answer carries one
    # The spellings of minimal mode, as it was when the call arrived; None: normal mode.
    minimal: Spellings | None = None


@dataclass(slots=True)
class Response:
    status: int
    body: bytes = b""
    content_type: str | None = None
    headers: list[tuple[str, str]] = field(default_factory=list)
    drop: bool = False  # close the connection without answering (a fault)
    cut: bool = False  # send the headers and half the body, then close (a fault)


def encode_json(payload: object) -> bytes:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def json_response(
    status: int,
    payload: object,
    *,
    content_type: str = JSON,
    headers: Iterable[tuple[str, str]] = (),
) -> Response:
    return Response(status, encode_json(payload), content_type, list(headers))


def text_response(status: int, text: str, *, content_type: str = TEXT) -> Response:
    return Response(status, text.encode("utf-8"), content_type)


def parse_json_object(body: bytes) -> dict[str, object]:
    """The body as a JSON object; an empty body is an empty object.

    Raises ValueError with a message fit for the caller.
    """
    if not body.strip():
        return {}
    try:
        payload = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"the body is not valid JSON ({error})") from None
    if not isinstance(payload, dict):
        raise ValueError("the body must be a JSON object")
    return payload
