"""The one way alerts leave the portal over HTTP: POSTing to webhook subscriptions.

A subscriber's server is not trusted: it may point its name at the portal's
own network, drip its answer a byte at a time, or answer gigabytes. So a POST

- goes only to an address checked here (`webhook_url_check` for the URL's
  form, the address rules below for where its name leads), when the
  subscription is made and again before each POST;
- resolves the host name once, refuses it if any address it gives is not
  allowed, and connects to that checked address: a name that answers
  differently the next time (DNS rebinding) changes nothing. The host name
  still goes in `Host` and in TLS (SNI, and the certificate is verified
  against it, with certifi's authorities);
- ends by one deadline, ALERTS_WEBHOOK_TIMEOUT seconds from the lookup to
  the last byte: the lookup, the connection, the TLS handshake and every
  read and write get only what is left of it;
- reads the status line and headers only, at most `ANSWER_BYTES` of them,
  never the body, and decodes nothing;
- follows no redirect and reads nothing from the environment (no proxy
  variables, no ~/.netrc).

The HTTP/1.1 exchange is httpcore's `HTTP11Connection` (h11 underneath), given
a connection made here: httpcore reads no environment, follows no redirects
and decodes no content, and handing it a connected stream keeps resolving,
checking, connecting and TLS in this module, where the deadline and the byte
budget are enforced on every socket call. requests and urllib3 resolve names
themselves and only know per-call timeouts.

Address rules (unless ALERTS_WEBHOOK_ALLOW_PRIVATE, for tests and demos):
an IPv4 address `ipaddress` calls global and not multicast; an IPv6 address
in global unicast (2000::/3, which leaves out IPv4-compatible `::a.b.c.d`,
IPv4-mapped, NAT64's 64:ff9b::/96, site-local and multicast) that `ipaddress`
calls global, and whose embedded 6to4 or Teredo IPv4 addresses follow the
IPv4 rule. Outside the emulator, https only, on ALERTS_WEBHOOK_PORTS (443).
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from functools import cache
from typing import Any, Final
from urllib.parse import quote, urlsplit

import certifi
import httpcore
from django.conf import settings
from django.utils.translation import gettext as _

USER_AGENT: Final = "FleetPortal-Alerts/1.0"
ANSWER_BYTES: Final = 64 * 1024  # of the answer: its status line and headers are enough
_GLOBAL_UNICAST: Final = ipaddress.IPv6Network("2000::/3")

type _IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
type _AddressInfo = tuple[socket.AddressFamily, socket.SocketKind, int, str, tuple[Any, ...]]


class WebhookAddressRefused(ValueError):
    """The address is not one the portal posts to; the message says why, for a person."""


class AnswerTooLong(httpcore.ReadError):
    """The answer's status line and headers did not end within `ANSWER_BYTES`."""


@dataclass(frozen=True, slots=True)
class PostOutcome:
    status_code: int | None
    error: str  # never the URL's path or query (they may hold a token): its host at most
    duration_ms: int

    @property
    def ok(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


@dataclass(frozen=True, slots=True)
class _Target:
    scheme: str
    host: str  # ASCII (IDNA), without an IPv6 literal's brackets
    port: int
    target: str  # the request line's path and query

    @property
    def authority(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.scheme == "https" else 80
        return host if self.port == default else f"{host}:{self.port}"


def webhook_url_check(url: str) -> None:
    """`WebhookAddressRefused` unless `url` has a form the portal posts to (no lookup)."""
    _target(url)


def webhook_address_check(url: str) -> None:
    """`WebhookAddressRefused` unless the portal may POST to `url`: its form, and where
    its host name leads now (looked up within ALERTS_WEBHOOK_TIMEOUT)."""
    target = _target(url)
    deadline = time.monotonic() + settings.ALERTS_WEBHOOK_TIMEOUT
    try:
        _checked_addresses(target, deadline=deadline)
    except httpcore.ConnectTimeout:
        raise WebhookAddressRefused(_("The address's host name could not be found.")) from None


def webhook_post(
    *, url: str, body: bytes, headers: dict[str, str], ssl_context: ssl.SSLContext | None = None
) -> PostOutcome:
    """POST `body` to `url`; what came back (never raises for the receiver's failures).

    Thread-safe, and touches no database. `ssl_context` replaces the verified default
    (certifi's authorities), for a test's own authority.
    """
    started = time.monotonic()
    deadline = started + settings.ALERTS_WEBHOOK_TIMEOUT
    status_code: int | None = None
    try:
        target = _target(url)
        stream = _connect(target, deadline=deadline, ssl_context=ssl_context or _verified())
        try:
            status_code = _exchange(stream, target, body=body, headers=headers)
        finally:
            stream.close()  # the body, if any, is never read
        error = "" if 200 <= status_code < 300 else f"answered {status_code}"
    except WebhookAddressRefused as refused:
        error = f"refused: {refused}"
    except (httpcore.TimeoutException, httpcore.NetworkError, httpcore.ProtocolError) as failure:
        error = _described(failure, host=urlsplit(url).hostname or "")
    elapsed = round((time.monotonic() - started) * 1000)
    return PostOutcome(status_code=status_code, error=error, duration_ms=elapsed)


# --- The address ------------------------------------------------------------------------


def _target(url: str) -> _Target:
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    on_emulator = settings.FLEET_ENVIRONMENT == "emulator"
    if scheme not in ("http", "https") or not parts.hostname:
        raise WebhookAddressRefused(_("The address must start with https:// (or http://)."))
    if scheme != "https" and not on_emulator:
        raise WebhookAddressRefused(_("The address must start with https://."))
    if parts.username or parts.password:
        raise WebhookAddressRefused(_("The address must not hold a user name or password."))
    try:
        port = parts.port or (443 if scheme == "https" else 80)
        host = _ascii_host(parts.hostname)
    except (ValueError, UnicodeError):
        raise WebhookAddressRefused(_("The address's host name or port is not valid.")) from None
    if not on_emulator and port not in settings.ALERTS_WEBHOOK_PORTS:
        raise WebhookAddressRefused(
            _("The address must use one of these ports: %(ports)s.")
            % {"ports": ", ".join(str(allowed) for allowed in settings.ALERTS_WEBHOOK_PORTS)}
        )
    path = quote(parts.path or "/", safe="/%:@!$&'()*+,;=~")
    query = quote(parts.query, safe="/?%:@!$&'()*+,;=~")
    return _Target(scheme, host, port, f"{path}?{query}" if query else path)


def _ascii_host(hostname: str) -> str:
    try:
        return str(ipaddress.ip_address(hostname))
    except ValueError:
        return hostname.encode("idna").decode("ascii")


def _checked_addresses(target: _Target, *, deadline: float) -> list[_AddressInfo]:
    """The host name's addresses, looked up once; all of them allowed, or refused."""
    found = _resolve(target.host, target.port, deadline=deadline)
    if not found:
        raise WebhookAddressRefused(_("The address's host name could not be found."))
    if not settings.ALERTS_WEBHOOK_ALLOW_PRIVATE and any(
        _forbidden(ipaddress.ip_address(str(info[4][0]).partition("%")[0])) for info in found
    ):
        raise WebhookAddressRefused(
            _("The address leads to a private, loopback or reserved network address.")
        )
    return found


def _forbidden(address: _IPAddress) -> bool:
    if isinstance(address, ipaddress.IPv6Address):
        if address not in _GLOBAL_UNICAST:
            return True
        embedded = [address.sixtofour, *(address.teredo or ())]
        if any(inner is not None and _forbidden(inner) for inner in embedded):
            return True
    return address.is_multicast or not address.is_global


def _resolve(host: str, port: int, *, deadline: float) -> list[_AddressInfo]:
    """getaddrinfo, given up at the deadline: it cannot be interrupted, so it runs in a
    thread of its own, which ends when the system's resolver gives up."""
    found: list[_AddressInfo] = []

    def look_up() -> None:
        with contextlib.suppress(OSError, UnicodeError):  # not found: an empty answer
            found.extend(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))

    lookup = threading.Thread(target=look_up, name="webhook-address-lookup", daemon=True)
    lookup.start()
    lookup.join(_left(deadline, httpcore.ConnectTimeout))
    if lookup.is_alive():
        raise httpcore.ConnectTimeout("address lookup")
    return list(found)


# --- The connection ---------------------------------------------------------------------


@cache
def _verified() -> ssl.SSLContext:
    """TLS as a browser does it: certifi's authorities, the host name checked. Made once,
    shared by every thread, and changed by none."""
    context = ssl.create_default_context(cafile=certifi.where())
    context.set_alpn_protocols(["http/1.1"])
    return context


def _connect(target: _Target, *, deadline: float, ssl_context: ssl.SSLContext) -> _BoundedStream:
    """A connection to the first checked address that answers, TLS done for https."""
    failure: OSError | None = None
    for family, kind, proto, _name, address in _checked_addresses(target, deadline=deadline):
        try:
            sock = socket.socket(family, kind, proto)
        except OSError as error:  # a family this host cannot use (IPv6 turned off)
            failure = error
            continue
        try:
            sock.settimeout(_left(deadline, httpcore.ConnectTimeout))
            sock.connect(address)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if target.scheme == "https":
                sock.settimeout(_left(deadline, httpcore.ConnectTimeout))
                # The host name, not the address connected to: SNI and the certificate's check.
                sock = ssl_context.wrap_socket(sock, server_hostname=target.host)
        except TimeoutError as timeout:
            sock.close()
            raise httpcore.ConnectTimeout("connect") from timeout
        except ssl.SSLError as refused:  # the certificate, or TLS itself: no other address helps
            sock.close()
            raise httpcore.ConnectError("TLS") from refused
        except OSError as error:
            sock.close()
            failure = error
            continue
        except BaseException:
            sock.close()
            raise
        return _BoundedStream(sock, deadline=deadline)
    raise httpcore.ConnectError("connect") from failure


def _left(deadline: float, timeout: type[httpcore.TimeoutException]) -> float:
    """Seconds left before the deadline; `timeout` raised once there are none."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise timeout("deadline")
    return left


class _BoundedStream(httpcore.NetworkStream):
    """A connected socket for httpcore whose every read and write ends by the POST's
    deadline (whatever timeout httpcore asks for), and which gives at most
    `ANSWER_BYTES` of the answer."""

    def __init__(self, sock: socket.socket, *, deadline: float) -> None:
        self._sock = sock
        self._deadline = deadline
        self._unread = ANSWER_BYTES

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        if self._unread <= 0:
            raise AnswerTooLong("answer")
        try:
            self._sock.settimeout(_left(self._deadline, httpcore.ReadTimeout))
            data = self._sock.recv(min(max_bytes, self._unread))
        except TimeoutError as error:
            raise httpcore.ReadTimeout("read") from error
        except OSError as error:
            raise httpcore.ReadError("read") from error
        self._unread -= len(data)
        return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        try:
            while buffer:
                self._sock.settimeout(_left(self._deadline, httpcore.WriteTimeout))
                buffer = buffer[self._sock.send(buffer) :]
        except TimeoutError as error:
            raise httpcore.WriteTimeout("write") from error
        except OSError as error:
            raise httpcore.WriteError("write") from error

    def close(self) -> None:
        self._sock.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        raise NotImplementedError("TLS is done when connecting")

    def get_extra_info(self, info: str) -> Any:
        return self._sock if info == "socket" else None


def _exchange(
    stream: _BoundedStream, target: _Target, *, body: bytes, headers: dict[str, str]
) -> int:
    """Send the request, read the answer's head; its status (the body is left unread)."""
    url = httpcore.URL(
        scheme=target.scheme, host=target.host, port=target.port, target=target.target
    )
    sent = {"host": target.authority} | headers | {"user-agent": USER_AGENT, "connection": "close"}
    with (
        httpcore.HTTP11Connection(origin=url.origin, stream=stream) as connection,
        connection.stream("POST", url, headers=list(sent.items()), content=body) as response,
    ):
        return response.status


def _described(failure: Exception, *, host: str) -> str:
    """What went wrong, for the admin and the log: its kind and the host, never the URL."""
    kind = type(failure).__name__
    cause = failure.__cause__
    if isinstance(cause, OSError) and not isinstance(cause, TimeoutError):
        # ConnectionRefusedError, SSLCertVerificationError...: what the admin can act on.
        kind = f"{kind}: {type(cause).__name__}"
    return f"{kind} ({host})" if host else kind
