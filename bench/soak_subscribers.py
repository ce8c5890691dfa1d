"""Webhook subscribers on loopback, real sockets: one that takes every alert and counts
it, and `HostileServer`, whose every connection is read (the request, by its
Content-Length) then handed to an `answer` that may drip it a byte at a time
(`drip`, `dripping_head`) or never answer (`never_answering`).

The soak subscribes managers to a healthy one, one that drips and one that never
answers (`bench.soak`); the tests of the outgoing webhooks use them too
(tests/alerts/: test_slow_subscribers.py, and hostile.py's further answers).
"""

from __future__ import annotations

import socket
import ssl
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from bench.servers import LOOPBACK

HEAD_END = b"\r\n\r\n"


class Counting:
    """Answers 204 to every POST and counts them by `webhook-id` (an alert sent twice
    shows as a count of 2), noting when each was first and last received (`time.time()`)."""

    def __init__(self) -> None:
        self.received: Counter[str] = Counter()
        self.first_at: dict[str, float] = {}
        self.last_at: dict[str, float] = {}
        self._lock = threading.Lock()
        counting = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                with counting._lock:
                    message_id = self.headers.get("webhook-id", "")
                    counting.received[message_id] += 1
                    now = time.time()
                    counting.first_at.setdefault(message_id, now)
                    counting.last_at[message_id] = now
                self.send_response(204)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer((LOOPBACK, 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://{LOOPBACK}:{self._server.server_address[1]}/fleet-events"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@dataclass
class Request:
    head: bytes
    body: bytes

    @property
    def headers(self) -> dict[str, str]:
        lines = self.head.decode("latin-1").split("\r\n")[1:]
        return {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}


@dataclass
class HostileServer:
    """A server on 127.0.0.1 whose `answer(connection, server)` follows each request."""

    answer: Callable[[socket.socket, HostileServer], None]
    tls: ssl.SSLContext | None = None
    read_request: bool = True  # False: answer at once (before a TLS ClientHello is read)
    requests: list[Request] = field(default_factory=list)
    connections: int = 0
    bytes_sent: int = 0
    server_names: list[str | None] = field(default_factory=list)  # SNI, over TLS
    hung_up: threading.Event = field(default_factory=threading.Event)  # the client left
    stopped: threading.Event = field(default_factory=threading.Event)  # answers end early
    _listener: socket.socket = field(init=False)

    def __post_init__(self) -> None:
        self._listener = socket.create_server((LOOPBACK, 0))
        if self.tls is not None:
            self.tls.sni_callback = lambda sock, name, context: self.server_names.append(name)
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def port(self) -> int:
        return int(self._listener.getsockname()[1])

    def url(self, path: str = "/hook", *, host: str = LOOPBACK) -> str:
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}{path}"

    def stop(self) -> None:
        self.stopped.set()
        self._listener.close()

    def send(self, connection: socket.socket, data: bytes) -> bool:
        """Send `data`; False once the client has hung up."""
        try:
            connection.sendall(data)
        except OSError:
            self.hung_up.set()
            return False
        self.bytes_sent += len(data)
        return True

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return  # stopped
            self.connections += 1
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        try:
            if self.tls is not None:
                connection.settimeout(10)
                connection = self.tls.wrap_socket(connection, server_side=True)
            if self.read_request:
                self.requests.append(_read_request(connection))
            self.answer(connection, self)
        except OSError:
            self.hung_up.set()
        finally:
            connection.close()


def _read_request(connection: socket.socket) -> Request:
    connection.settimeout(10)
    data = b""
    while HEAD_END not in data:
        chunk = connection.recv(65536)
        if not chunk:
            raise ConnectionResetError("the client left before its request ended")
        data += chunk
    head, _, body = data.partition(HEAD_END)
    request = Request(head, body)
    length = int(request.headers.get("content-length", "0"))
    while len(request.body) < length:
        chunk = connection.recv(65536)
        if not chunk:
            break
        request.body += chunk
    return request


# --- Answers ------------------------------------------------------------------------


def status(code: int) -> Callable[[socket.socket, HostileServer], None]:
    """A plain answer: `code` and no body."""

    def answer(connection: socket.socket, server: HostileServer) -> None:
        server.send(connection, f"HTTP/1.1 {code} Whatever\r\nContent-Length: 0\r\n\r\n".encode())

    return answer


def drip(payload: bytes, *, every_s: float) -> Callable[[socket.socket, HostileServer], None]:
    """`payload` one byte at a time, `every_s` apart, until it ends, the client leaves or
    the server stops."""

    def answer(connection: socket.socket, server: HostileServer) -> None:
        for byte in payload:
            if server.stopped.is_set() or not server.send(connection, bytes([byte])):
                return
            time.sleep(every_s)

    return answer


def never_answering(*, hold: float = 300.0) -> Callable[[socket.socket, HostileServer], None]:
    """Reads the POST and never sends a byte, for up to `hold` seconds (or until the client
    leaves or the server stops), then closes."""

    def answer(connection: socket.socket, server: HostileServer) -> None:
        connection.settimeout(0.2)
        end = time.monotonic() + hold
        while not server.stopped.is_set() and time.monotonic() < end:
            try:
                if not connection.recv(65536):
                    return
            except TimeoutError:
                continue

    return answer


def dripping_head(
    *, every: float = 0.5, longest: float = 60.0
) -> Callable[[socket.socket, HostileServer], None]:
    """A 200 one byte every `every` seconds: a header that goes on for `longest` seconds
    (or until the server stops), then the end of the answer. A reader that waits for each
    byte only a few seconds never times out."""

    def answer(connection: socket.socket, server: HostileServer) -> None:
        if not server.send(connection, b"HTTP/1.1 200 OK\r\nx-drip: "):
            return
        end = time.monotonic() + longest
        while not server.stopped.is_set() and time.monotonic() < end:
            if not server.send(connection, b"z"):
                return
            time.sleep(every)
        server.send(connection, b"\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")

    return answer


# --- The soak's three subscribers ------------------------------------------------------

DESCRIPTION = "soak: "  # + the subscriber's name, on its subscription
HEALTHY, DRIPS, SILENT = "healthy", "drips", "never answers"

# Run by `manage.py shell` with the portal's environment: one subscription per line of
# stdin's JSON, made as the alerts page makes them.
SUBSCRIBE = """
import json, sys
from django.contrib.auth import get_user_model
from alerts.services.subscriptions import webhook_subscription_create
for wanted in json.load(sys.stdin):
    user = get_user_model().objects.get(username=wanted["username"])
    webhook_subscription_create(user=user, url=wanted["url"], description=wanted["description"])
"""


class Subscribers:
    """A healthy receiver, one that drips and one that never answers, each the webhook
    subscription of one manager."""

    def __init__(self) -> None:
        self.healthy = Counting()
        # Longer than the portal's deadline for one POST (ALERTS_WEBHOOK_TIMEOUT, 10 s).
        self.dripping = HostileServer(dripping_head(every=1.0, longest=30.0))
        self.silent = HostileServer(never_answering())

    def stop(self) -> None:
        for server in (self.healthy, self.dripping, self.silent):
            server.stop()

    def subscriptions(self, usernames: list[str]) -> list[dict[str, str]]:
        """What SUBSCRIBE reads: the first three of `usernames`, one subscriber each."""
        urls = {
            HEALTHY: self.healthy.url,
            DRIPS: self.dripping.url("/fleet-events"),
            SILENT: self.silent.url("/fleet-events"),
        }
        return [
            {"username": username, "url": url, "description": DESCRIPTION + name}
            for username, (name, url) in zip(usernames, urls.items(), strict=False)
        ]

    def report(self, state: dict[str, Any], *, interruptions: list[Interruption]) -> int:
        """Print what each subscriber got; return the healthy one's alerts lost plus those
        it received twice that no interruption explains.

        An alert is posted again only when its POST was answered but not marked sent: the
        worker killed, or the database gone, between the two. So one of `interruptions`
        (a fault's window, in `time.time()` seconds) must have come between a repeated
        alert's first receipt and its last: what the order of events requires, and no
        guess of how long a busy worker takes to mark a POST (a window that began 2 s
        before the fault called a repeat first received earlier unexplained)."""
        print("\n== Outgoing webhooks: three managers' subscriptions ==")
        healthy = state.get(HEALTHY)
        if healthy is None:
            print("  no subscriptions (fewer than three managers)")
            return 0
        sent = set(healthy["sent_ids"])
        received = self.healthy.received
        lost = sum(n for status, n in healthy["alerts"].items() if status != "sent")
        lost += len(sent - set(received))
        causes: Counter[str] = Counter()
        unexplained: list[str] = []
        for message_id, n in received.items():
            if n > 1:
                first, last = self.healthy.first_at[message_id], self.healthy.last_at[message_id]
                cause = next(
                    (i.name for i in interruptions if i.start <= last and first <= i.end), None
                )
                causes[cause or "UNEXPLAINED"] += n - 1
                if cause is None:
                    unexplained.append(f"{message_id} again {last - first:.1f} s after")
        repeats = ", ".join(f"{n} at {cause}" for cause, n in causes.items()) or "none"
        print(
            f"  {HEALTHY:<14} {sum(healthy['alerts'].values()):>6,} alerts, {len(sent):,} sent;"
            f" received {len(received):,} (twice: {repeats}), {lost} lost"
        )
        for line in unexplained:
            print(f"    repeated with no fault between: {line}")
        for name, server in ((DRIPS, self.dripping), (SILENT, self.silent)):
            got = state[name]
            statuses = ", ".join(f"{status} {n:,}" for status, n in sorted(got["alerts"].items()))
            errors = ", ".join(f"{error} {n}" for error, n in got["errors"].items()) or "none"
            print(
                f"  {name:<14} {sum(got['alerts'].values()):>6,} alerts ({statuses});"
                f" {server.connections} POSTs, {got['ok']} answered 2xx, the longest"
                f" {got['longest_ms'] / 1000:.1f} s; errors: {errors}"
            )
        return lost + causes["UNEXPLAINED"]


@dataclass(frozen=True)
class Interruption:
    """A fault that may come between a POST's answer and its mark: a name, and its
    window (`time.time()` seconds), from the fault to the end of its grace."""

    name: str
    start: float
    end: float


def portal_state() -> dict[str, Any]:
    """Per soak subscription: its alerts by status, the ids of those sent, and its
    attempts (in a configured Django process: `bench.servers.portal_call`)."""
    from django.db.models import Max

    from alerts.models import Alert, WebhookAttempt, WebhookSubscription

    found: dict[str, Any] = {}
    for subscription in WebhookSubscription.objects.filter(description__startswith=DESCRIPTION):
        alerts = Alert.objects.filter(subscription=subscription)
        attempts = WebhookAttempt.objects.filter(subscription=subscription)
        failures = attempts.exclude(error="").values_list("error", flat=True)
        errors = Counter(error.split(":")[0] for error in failures)  # its kind, not the detail
        found[subscription.description.removeprefix(DESCRIPTION)] = {
            "alerts": dict(Counter(alerts.values_list("status", flat=True))),
            "sent_ids": list(alerts.filter(status="sent").values_list("message_id", flat=True)),
            "ok": attempts.filter(ok=True).count(),
            "errors": dict(errors.most_common(3)),
            "longest_ms": attempts.aggregate(longest=Max("duration_ms"))["longest"] or 0,
        }
    return found
