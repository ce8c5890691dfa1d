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
        """The headers and the body (by its content-length): the whole POST was sent."""
        data = b""
        end = time.monotonic() + 10
        while b"\r\n\r\n" not in data and time.monotonic() < end:
            try:
                chunk = connection.recv(65536)
            except TimeoutError:
                continue
            if not chunk:
                return
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip() or 0)
        while len(body) < length and time.monotonic() < end:
            try:
                chunk = connection.recv(65536)
            except TimeoutError:
                continue
            if not chunk:
                return
            body += chunk
