"""Webhook subscribers on loopback, real sockets: one that takes every alert and counts
it, one that drips its answer a byte at a time, one that never answers.

The soak subscribes managers to them (`bench.soak`), and the tests of the worker
beside slow subscribers use the last two (tests/alerts/test_slow_subscribers.py).
"""

from __future__ import annotations

import contextlib
import socket
import socketserver
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from bench.support import LOOPBACK


class Counting:
    """Answers 204 to every POST and counts them by `webhook-id` (an alert sent twice
    shows as a count of 2)."""

    def __init__(self) -> None:
        self.received: Counter[str] = Counter()
        self._lock = threading.Lock()
        counting = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                with counting._lock:
                    counting.received[self.headers.get("webhook-id", "")] += 1
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


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True


class _Stalling:
    """A TCP server whose every connection is handled by `stall` in a thread of its own;
    `connections` counts those accepted."""

    def __init__(self) -> None:
        self.connections = 0
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        stalling = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                with stalling._lock:
                    stalling.connections += 1
                self.request.settimeout(0.2)
                # OSError: the portal gave up and closed, as it is meant to.
                with contextlib.suppress(OSError):
                    stalling.stall(self.request)

        self._server = _Server((LOOPBACK, 0), Handler)
        self.url = f"http://{LOOPBACK}:{self._server.server_address[1]}/fleet-events"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stall(self, connection: socket.socket) -> None:
        raise NotImplementedError

    def _read_until_closed(self, connection: socket.socket, *, seconds: float) -> None:
        """Read (and drop) what comes for up to `seconds`, or until the peer closes."""
        end = time.monotonic() + seconds
        while not self._stopping.is_set() and time.monotonic() < end:
            try:
                if not connection.recv(65536):
                    return
            except TimeoutError:
                continue

    def stop(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()


class Silent(_Stalling):
    """Accepts the connection, reads the POST, and never sends a byte (for up to `hold`
    seconds, then closes)."""

    def __init__(self, *, hold: float = 300.0) -> None:
        self.hold = hold
        super().__init__()

    def stall(self, connection: socket.socket) -> None:
        self._read_until_closed(connection, seconds=self.hold)


class Dripping(_Stalling):
    """Reads the POST, then answers a 200 one byte every `every` seconds: a header that
    goes on for `longest` seconds, then the end of the answer. A reader that waits for
    each byte only a few seconds never times out."""

    def __init__(self, *, every: float = 0.5, longest: float = 60.0) -> None:
        self.every = every
        self.longest = longest
        super().__init__()

    def stall(self, connection: socket.socket) -> None:
        self._read_request(connection)
        connection.sendall(b"HTTP/1.1 200 OK\r\nx-drip: ")
        end = time.monotonic() + self.longest
        while not self._stopping.is_set() and time.monotonic() < end:
            connection.sendall(b"z")
            time.sleep(self.every)
        connection.sendall(b"\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")

    def _read_request(self, connection: socket.socket) -> None:
        """Read until the headers and the body (by its content-length) have come."""
        data = b""
        end = time.monotonic() + 10
        while not _whole_request(data) and time.monotonic() < end:
            try:
                chunk = connection.recv(65536)
            except TimeoutError:
                continue
            if not chunk:
                return
            data += chunk


def _whole_request(data: bytes) -> bool:
    head, ended, body = data.partition(b"\r\n\r\n")
    if not ended:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value.strip() or 0)
    return True


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
        self.dripping = Dripping(every=1.0, longest=30.0)
        self.silent = Silent()

    def stop(self) -> None:
        for server in (self.healthy, self.dripping, self.silent):
            server.stop()

    def subscriptions(self, usernames: list[str]) -> list[dict[str, str]]:
        """What SUBSCRIBE reads: the first three of `usernames`, one subscriber each."""
        urls = {HEALTHY: self.healthy.url, DRIPS: self.dripping.url, SILENT: self.silent.url}
        return [
            {"username": username, "url": url, "description": DESCRIPTION + name}
            for username, (name, url) in zip(usernames, urls.items(), strict=False)
        ]

    def report(self, state: dict[str, Any], *, worker_kills: int) -> int:
        """Print what each subscriber got; the healthy one's alerts lost or sent more than
        the worker's kills explain (one repeat each at most: the POST under way)."""
        print("\n== Outgoing webhooks: three managers' subscriptions ==")
        healthy = state.get(HEALTHY)
        if healthy is None:
            print("  no subscriptions (fewer than three managers)")
            return 0
        sent = set(healthy["sent_ids"])
        received = self.healthy.received
        lost = sum(n for status, n in healthy["alerts"].items() if status != "sent")
        lost += len(sent - set(received))
        repeats = sum(n - 1 for n in received.values() if n > 1)
        print(
            f"  {HEALTHY:<14} {sum(healthy['alerts'].values()):>6,} alerts, {len(sent):,} sent;"
            f" received {len(received):,} ({repeats} twice: a worker killed between the"
            f" answer and the mark), {lost} lost"
        )
        for name, server in ((DRIPS, self.dripping), (SILENT, self.silent)):
            got = state[name]
            statuses = ", ".join(f"{status} {n:,}" for status, n in sorted(got["alerts"].items()))
            errors = ", ".join(f"{error} {n}" for error, n in got["errors"].items()) or "none"
            print(
                f"  {name:<14} {sum(got['alerts'].values()):>6,} alerts ({statuses});"
                f" {server.connections} POSTs, {got['ok']} answered 2xx, the longest"
                f" {got['longest_ms'] / 1000:.1f} s; errors: {errors}"
            )
        unexplained_repeats = max(0, repeats - worker_kills)
        return lost + unexplained_repeats


def portal_state() -> dict[str, Any]:
    """Per soak subscription: its alerts by status, the ids of those sent, and its
    attempts (in a configured Django process: `bench.support.portal_call`)."""
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
