"""Fixtures of the API client tests: clients pointed at the test emulator."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.servers import free_port
from fleet.api.client import FleetClient
from fleet.api.cooldown import LocalCooldown
from tests.conftest import Emulator
from tests.conftest import Recorder as Recorder  # where the API tests have always found it

ROOT = Path(__file__).resolve().parents[2]
VECTORS_PATH = ROOT.parent / "shared" / "vectors" / "hmac.json"

DEMO_TOKEN = "demo-access-token"
DEMO_SECRET = "demo-secret-key"
DEMO_USER = "manager@example.com"
DEMO_PASSWORD = "demo-password"

MakeClient = Callable[..., FleetClient]


def hmac_vectors() -> list[dict[str, Any]]:
    vectors: list[dict[str, Any]] = json.loads(VECTORS_PATH.read_text())["vectors"]
    return vectors


def wait_for_calls(emulator: Emulator, key: str, expected: int, timeout: float = 10.0) -> int:
    """The emulator's count of `key` once it reaches `expected` (or the timeout).

    The emulator counts a call on arrival, on a thread of its own: the count can
    lag a client that has already given up on the call.
    """
    deadline = time.monotonic() + timeout
    while (count := emulator.calls(key)) < expected and time.monotonic() < deadline:
        time.sleep(0.05)
    return count


class StoppedClock:
    """A monotonic clock that moves only when a client sleeps on it, and the waits asked of it.

    A client made with `make_client(waits_on=clock)` never really waits to retry and
    spends its budget only on the waits it asks for: tests assert those waits, not
    the time that passed.
    """

    def __init__(self) -> None:
        self.now = 1_000.0
        self.waits: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds


def seeded_crlv_requests(emulator: Emulator) -> list[dict[str, str]]:
    """The emulator's known e-CRLV requests as {"id", "plate", "status"}."""
    return [
        {
            "id": r.get("requestId") or r["id"],
            "plate": r.get("carPlate") or r["plate"],
            "status": r["status"],
        }
        for r in emulator.control("GET", "crlv/requests")
    ]


@pytest.fixture
def make_client(emulator: Emulator) -> Iterator[MakeClient]:
    """A factory of clients of the test emulator; short timeouts keep tests fast.

    `waits_on=clock` makes a client that waits on that `StoppedClock`, its own
    cooldown included.
    """
    made: list[FleetClient] = []

    def make(*, waits_on: StoppedClock | None = None, **options: Any) -> FleetClient:
        settings: dict[str, Any] = {
            "base_url": emulator.url,
            "access_token": DEMO_TOKEN,
            "secret_key": DEMO_SECRET,
            "read_timeout": 2.0,
            "retry_budget": 2.0,
        }
        if waits_on is not None:
            settings |= {
                "sleep": waits_on.sleep,
                "clock": waits_on.monotonic,
                "cooldown": LocalCooldown(clock=waits_on.monotonic),
            }
        settings.update(options)
        client = FleetClient(**settings)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


@pytest.fixture
def client(make_client: MakeClient) -> FleetClient:
    return make_client()


@pytest.fixture
def clock() -> StoppedClock:
    return StoppedClock()


@pytest.fixture
def closed_port_url() -> str:
    """The URL of a loopback port nobody listens on: connections are refused."""
    return f"http://127.0.0.1:{free_port()}"
