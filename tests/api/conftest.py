"""Fixtures of the API client tests: clients pointed at the test emulator."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from fleet.api.client import FleetClient
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


def wait_for_calls(emulator: Emulator, key: str, expected: int, timeout: float = 3.0) -> int:
    """The emulator's count of `key` once it reaches `expected` (or the timeout).

    The emulator counts a delayed call when its delay ends, which can be after
    the client has given up on it.
    """
    deadline = time.monotonic() + timeout
    while (count := emulator.calls(key)) < expected and time.monotonic() < deadline:
        time.sleep(0.05)
    return count


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
    """A factory of clients of the test emulator; short timeouts keep tests fast."""
    made: list[FleetClient] = []

    def make(**options: Any) -> FleetClient:
        settings: dict[str, Any] = {
            "base_url": emulator.url,
            "access_token": DEMO_TOKEN,
            "secret_key": DEMO_SECRET,
            "read_timeout": 2.0,
            "retry_budget": 2.0,
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
def closed_port_url() -> str:
    """The URL of a loopback port nobody listens on: connections are refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"
