"""The HTTP side: a threading HTTP/1.1 server and the handler that feeds the routes.

The handler reads a request (keep-alive, Content-Length or chunked body),
sends it to the right area by its first path segment, and writes the answer
with a Content-Length, so a pooled client can reuse the connection.
"""

from __future__ import annotations

import sys
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from emulator import api, control, files, webapp
from emulator.messages import Request, Response, json_response
from emulator.state import Emulator

MAX_BODY = 1024 * 1024


def dispatch(emulator: Emulator, request: Request) -> Response:
    """The area that answers this path: control, files, web app, or the API."""
    area = request.path.split("/", 2)[1] if request.path.startswith("/") else ""
    if request.path == "/healthz":
        return json_response(200, {"status": "ok"})
    if area == "_emulator":
        return control.handle(emulator, request)
    if area == "files":
        return files.handle(emulator, request)
    if area == "app":
        return webapp.handle(emulator, request)
    return api.handle(emulator, request)


class FleetServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # benchmarks open many connections at once

    def __init__(self, address: tuple[str, int], emulator: Emulator, *, verbose: bool) -> None:
        super().__init__(address, Handler)
        self.emulator = emulator
        self.verbose = verbose

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up mid-answer is not news; anything else is a bug.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive
    server_version = "FleetApiEmulator/1.0"
    # Headers and body go out in separate writes; without this, Nagle's
    # algorithm and delayed ACKs can add 40 ms to each keep-alive answer.
    disable_nagle_algorithm = True
    timeout = 300  # idle keep-alive connections do not hold a thread forever
    server: FleetServer

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def do_PUT(self) -> None:
        self._serve()

    def do_PATCH(self) -> None:
        self._serve()

    def do_DELETE(self) -> None:
        self._serve()

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.verbose:
            super().log_message(format, *args)

    def _serve(self) -> None:
        body = self._read_body()
        if body is None:
            return
        path, _, query = self.path.partition("?")
        host, port = self.server.server_address[:2]
        request = Request(
            method=self.command,
            path=path,
            query=query,
            headers=self.headers,
            body=body,
            server_address=f"{host!s}:{port}",
        )
        try:
            response = dispatch(self.server.emulator, request)
        except Exception:
            # A bug of the emulator: show it, and still answer (API bugs are
            # answered in the API's own format by api.handle).
            traceback.print_exc()
            response = json_response(500, {"error": "internal error of the emulator"})
        if response.drop:
            self.close_connection = True
            return
        if response.cut:
            # The whole body's Content-Length, half the body: an answer cut off mid-way.
            self._write(response, body=response.body[: len(response.body) // 2])
            self.close_connection = True
            return
        self._write(response)

    def _read_body(self) -> bytes | None:
        """The request body, or None after answering a body we will not read."""
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            return self._read_chunked()
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            self._refuse(400, "Content-Length is not a number")
            return None
        if not 0 <= length <= MAX_BODY:
            self._refuse(413, "body too large")
            return None
        return self.rfile.read(length)

    def _read_chunked(self) -> bytes | None:
        body = bytearray()
        while True:
            size_line = self.rfile.readline(1024).split(b";")[0].strip()
            try:
                size = int(size_line, 16)
            except ValueError:
                self._refuse(400, "bad chunk size")
                return None
            if size == 0:
                while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return bytes(body)
            if len(body) + size > MAX_BODY:
                self._refuse(413, "body too large")
                return None
            body += self.rfile.read(size)
            self.rfile.readline(1024)  # the CRLF after the chunk

    def _refuse(self, status: int, reason: str) -> None:
        # The rest of the request is unread, so this connection cannot go on.
        self.close_connection = True
        self._write(json_response(status, {"error": reason}), close=True)

    def _write(self, response: Response, *, close: bool = False, body: bytes | None = None) -> None:
        self.send_response(response.status)
        if response.content_type:
            self.send_header("Content-Type", response.content_type)
        self.send_header("Content-Length", str(len(response.body)))
        for name, value in response.headers:
            self.send_header(name, value)
        if close:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(response.body if body is None else body)
