"""An answer of the Fleet API is hostile until read: a server that declares a terabyte,
streams without end, sends a gzip that holds a hundred times the limit, or drips its
body one chunk at a time forever gets its answer refused (`UpstreamUnavailable`, which
names the setting), and the client reads no further. Played over real sockets by a
server of the test's own; time is the client's clock, moved by the test."""

from __future__ import annotations

import gzip
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from fleet.api.client import FleetClient
from fleet.api.errors import UpstreamUnavailable
from tests.api.conftest import DEMO_SECRET, DEMO_TOKEN

LIMIT = 2**20  # the client's FLEET_ANSWER_MAX_BYTES here
ZEROS = b"0" * 65536


@dataclass
class Hostile:
    """A server on loopback that answers every request as `mode` says, and counts what
    it managed to send before the client hung up."""

    mode: str
    listener: socket.socket = field(default_factory=socket.socket)
    sent: int = 0
    hung_up: threading.Event = field(default_factory=threading.Event)
    stop: threading.Event = field(default_factory=threading.Event)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}"

    def serve(self) -> None:
        self.listener.settimeout(0.2)
        while not self.stop.is_set():
            try:
                peer, _address = self.listener.accept()
            except TimeoutError:
                continue
            threading.Thread(target=self.answer, args=(peer,), daemon=True).start()

    def answer(self, peer: socket.socket) -> None:
        with peer:
            request = b""
            while b"\r\n\r\n" not in request:
                chunk = peer.recv(65536)
                if not chunk:
                    return
                request += chunk
            try:
                peer.sendall(self.head())
                for part in self.body():
                    if self.stop.is_set():
                        return
                    peer.sendall(part)
                    self.sent += len(part)
            except OSError:  # the client closed the connection: what is asked of it
                self.hung_up.set()

    def head(self) -> bytes:
        headers = {
            "declared": "Content-Length: 1000000000000",
            "endless": "Transfer-Encoding: chunked",
            "drip": "Transfer-Encoding: chunked",
            "bomb": f"Content-Encoding: gzip\r\nContent-Length: {len(BOMB)}",
        }[self.mode]
        return f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n{headers}\r\n\r\n".encode()

    def body(self) -> Iterator[bytes]:
        if self.mode == "bomb":
            yield BOMB
            return
        chunked = self.mode != "declared"
        piece = ZEROS[:10] if self.mode == "drip" else ZEROS
        while True:
            yield b"%x\r\n%b\r\n" % (len(piece), piece) if chunked else piece


# A hundred times the limit of zeros, gzipped: about a hundred kilobytes on the wire.
BOMB = gzip.compress(b"0" * (100 * LIMIT), compresslevel=9)


class SteppingClock:
    """A monotonic clock that moves a second each time it is read."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


@pytest.fixture
def hostile(request: pytest.FixtureRequest) -> Iterator[Hostile]:
    server = Hostile(request.param)
    server.listener.bind(("127.0.0.1", 0))
    server.listener.listen()
    serving = threading.Thread(target=server.serve, daemon=True)
    serving.start()
    yield server
    server.stop.set()
    serving.join(timeout=5)
    server.listener.close()


def client_of(server: Hostile, **options: object) -> FleetClient:
    return FleetClient(
        base_url=server.url,
        access_token=DEMO_TOKEN,
        secret_key=DEMO_SECRET,
        read_timeout=5.0,
        retry_budget=0.0,
        max_attempts=1,
        answer_max_bytes=LIMIT,
        **options,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("hostile", ["declared", "endless", "bomb"], indirect=True)
def test_an_answer_larger_than_the_limit_is_refused_and_read_no_further(hostile):
    with client_of(hostile) as client, pytest.raises(UpstreamUnavailable) as refused:
        client.list_vehicle_columns()

    assert "too large" in str(refused.value)
    assert "FLEET_ANSWER_MAX_BYTES" in str(refused.value)
    if hostile.mode != "bomb":  # the rest never read: the server finds the line cut
        assert hostile.hung_up.wait(timeout=30)
        # Past the limit, only what the sockets' buffers held on the way.
        assert hostile.sent < 64 * LIMIT


@pytest.mark.parametrize("hostile", ["drip"], indirect=True)
def test_an_answer_that_never_ends_is_refused_after_its_time(hostile):
    clock = SteppingClock()
    with (
        client_of(hostile, answer_seconds=30.0, clock=clock) as client,
        pytest.raises(UpstreamUnavailable) as refused,
    ):
        client.list_vehicle_columns()

    assert "too slowly" in str(refused.value)
    assert "FLEET_ANSWER_SECONDS" in str(refused.value)
    assert hostile.hung_up.wait(timeout=30)
    assert hostile.sent < LIMIT  # refused on time, not on size
