"""The `python -m emulator` process: start-up line, determinism, size, signals, logging."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from email.message import Message

import pytest
import requests

from emulator import api, state
from emulator.messages import Call, Request
from tests.conftest import ROOT, start_emulator
from tests.emulator.support import Api, list_cars


@contextmanager
def running(*args: str) -> Iterator[str]:
    process, url = start_emulator(*args)
    try:
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_the_same_seed_gives_the_same_fleet_and_requests(emulator_url: str) -> None:
    with running("--vehicles", "200", "--seed", "1") as twin:
        assert list_cars(twin).content == list_cars(emulator_url).content
        assert _crlv_requests(twin) == _crlv_requests(emulator_url)


def test_another_seed_gives_another_fleet(emulator_url: str) -> None:
    with running("--vehicles", "200", "--seed", "2") as other:
        assert list_cars(other).content != list_cars(emulator_url).content
        assert _crlv_requests(other) != _crlv_requests(emulator_url)


def test_a_fleet_of_100000_starts_and_lists_every_vehicle() -> None:
    # How fast it starts and lists is a benchmark's business (bench/), not a test's.
    with running("--vehicles", "100000", "--seed", "3") as url:
        listed = list_cars(url)
        again = list_cars(url)

    cars = listed.json()["cars"]
    assert cars["total"] == len(cars["data"]) == 100_000
    assert len({vehicle["car_plate"] for vehicle in cars["data"]}) == 100_000
    assert again.content == listed.content


def test_the_list_cars_answer_is_serialised_once_and_served_as_it_is() -> None:
    emulator = state.Emulator(state.Settings(vehicles=20, seed=3))
    call = Call(Request("GET", "/key/list-cars", "", Message(), b"", "127.0.0.1:0"))

    first, again = api.list_cars(emulator, call), api.list_cars(emulator, call)

    assert first.body is again.body is emulator.fleet.list_cars_body


def test_the_bare_command_and_serve_are_the_same(emulator_url: str) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "emulator", "serve", "--port", "0", "--vehicles", "200"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().split("listening on ")[1].strip()
        assert list_cars(url).content == list_cars(emulator_url).content
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_the_first_line_names_the_url_and_then_the_credentials() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "emulator", "--host", "127.0.0.1", "--port", "0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    first = process.stdout.readline()
    process.terminate()
    rest = process.stdout.read()  # the same buffered stream as readline, up to EOF
    process.wait(timeout=10)

    assert first.startswith("Fleet API emulator listening on http://127.0.0.1:")
    for credential in ("demo-access-token", "other-env-access-token", "no-permission-access-token"):
        assert credential in rest


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_it_stops_cleanly_on_a_signal(signum: signal.Signals) -> None:
    process, url = start_emulator(stderr=True)
    list_cars(url)

    process.send_signal(signum)
    _, stderr = process.communicate(timeout=10)

    assert process.returncode == 0
    assert "Traceback" not in stderr


def test_it_logs_nothing_per_request_unless_verbose() -> None:
    logs = {}
    for flags in ((), ("--verbose",)):
        process, url = start_emulator(*flags, stderr=True)
        api = Api(url)
        api.get("/key/list-cars")
        api.get("/key/list-cars", headers={})
        process.terminate()
        _, logs[flags] = process.communicate(timeout=10)

    assert logs[()] == ""
    assert "/key/list-cars" in logs[("--verbose",)]


def test_bad_arguments_are_refused() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "emulator", "--vehicles", "1000001"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )

    assert result.returncode == 2
    assert "--vehicles" in result.stderr


def _crlv_requests(url: str) -> list[dict[str, str]]:
    listed: list[dict[str, str]] = requests.get(f"{url}/_emulator/crlv/requests", timeout=10).json()
    return listed
