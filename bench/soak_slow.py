"""Slowloris: connections that send a request's headers a line at a time, never ending them.

Each connection sends the start of a request, then one more header line every
few seconds. nginx closes a connection whose headers take longer than its
`client_header_timeout`; a closed one is opened again at once, so that
`count` stay open from `start()` to `stop()`.
"""

from __future__ import annotations

import select
import socket
import threading
import time

from bench.servers import LOOPBACK

_TRICKLE_SECONDS = 4.0


class SlowConnections:
    def __init__(self, port: int, count: int) -> None:
        self.port, self.count = port, count
        self.opened = self.closed = 0
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="slowloris", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _open(self) -> socket.socket | None:
        try:
            connection = socket.create_connection((LOOPBACK, self.port), timeout=5)
            connection.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: slowloris\r\n")
        except OSError:
            return None
        connection.setblocking(False)
        self.opened += 1
        return connection

    def _run(self) -> None:
        connections: list[socket.socket] = []
        last_trickle = time.monotonic()
        try:
            while not self._stopping.is_set():
                while len(connections) < self.count and not self._stopping.is_set():
                    connection = self._open()
                    if connection is None:
                        break
                    connections.append(connection)
                if connections:
                    # A connection nginx closed (or answered 408) is readable.
                    readable, _, _ = select.select(connections, [], [], 0.5)
                else:
                    readable = []
                    self._stopping.wait(0.5)
                for connection in readable:
                    self._close(connection, connections)
                if time.monotonic() - last_trickle >= _TRICKLE_SECONDS:
                    last_trickle = time.monotonic()
                    for connection in list(connections):
                        try:
                            connection.send(b"X-Slow: 1\r\n")
                        except OSError:
                            self._close(connection, connections)
        finally:
            for connection in connections:
                connection.close()

    def _close(self, connection: socket.socket, connections: list[socket.socket]) -> None:
        connections.remove(connection)
        connection.close()
        self.closed += 1
