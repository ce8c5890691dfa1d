"""Minimal mode from the command line: `--minimal`, `--spelling-seed`, the start banner."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from email.message import Message

import pytest
import requests

from emulator import api, state
from emulator.messages import Call, Request
from emulator.minimal import spellings
from tests.conftest import ROOT, start_emulator
from tests.emulator.support import list_cars

VEHICLE = {"id", "car_plate", "model", "active", "driver_id"}


@contextmanager
def started(*args: str) -> Iterator[tuple[str, list[str]]]:
    """An emulator started with `args`: its URL and its start banner's lines."""
    process, url = start_emulator(*args)
    try:
        assert process.stdout is not None
        banner = [f"Fleet API emulator listening on {url}\n"]
        while "Control surface" not in banner[-1] and banner[-1]:
            banner.append(process.stdout.readline())
        yield url, banner
    finally:
        process.terminate()
        process.wait(timeout=10)


def mode(url: str) -> dict[str, object]:
    answer: dict[str, object] = requests.get(f"{url}/_emulator/mode", timeout=10).json()
    return answer


@pytest.mark.parametrize("command", [(), ("serve",)])
def test_minimal_and_the_spelling_seed_from_the_command_line(command: tuple[str, ...]) -> None:
    arguments = (*command, "--minimal", "--spelling-seed", "1234", "--vehicles", "20")
    with started(*arguments) as (url, banner):
        assert "  Minimal mode: on, spelling seed 1234\n" in banner
        assert mode(url)["minimal"] is True
        assert mode(url)["spelling_seed"] == 1234
        vehicle = list_cars(url).json()["cars"]["data"][0]
        assert set(vehicle) > VEHICLE
        assert not {"year", "color", "renavam"} & set(vehicle)

        requests.post(f"{url}/_emulator/mode", json={"minimal": False}, timeout=10)
        requests.post(f"{url}/_emulator/reset", timeout=10).raise_for_status()

        assert (mode(url)["minimal"], mode(url)["spelling_seed"]) == (True, 1234)


def test_without_minimal_the_banner_says_off_and_a_seed_is_chosen() -> None:
    with started("--vehicles", "20") as (url, banner):
        assert "  Minimal mode: off\n" in banner
        assert mode(url)["minimal"] is False
        assert isinstance(mode(url)["spelling_seed"], int)
        assert "year" in list_cars(url).json()["cars"]["data"][0]


def test_a_random_spelling_seed_is_printed_to_repeat_the_run() -> None:
    with started("--minimal", "--vehicles", "20") as (url, banner):
        seed = mode(url)["spelling_seed"]
        assert f"  Minimal mode: on, spelling seed {seed}\n" in banner
        with started("--minimal", "--spelling-seed", str(seed), "--vehicles", "20") as (twin, _):
            assert mode(twin) == mode(url)
            assert list_cars(twin).content == list_cars(url).content


@pytest.mark.parametrize(
    "arguments", [("--spelling-seed", "abc"), ("--spelling-seed", "1.5"), ("--minimal=yes",)]
)
def test_a_bad_value_is_refused(arguments: tuple[str, ...]) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "emulator", *arguments],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )

    assert result.returncode == 2
    assert arguments[0].split("=")[0] in result.stderr


def test_a_minimal_fleet_of_100000_lists_every_vehicle() -> None:
    # How fast it lists is a benchmark's business (bench/), not a test's.
    with started("--minimal", "--spelling-seed", "3", "--vehicles", "100000") as (url, _):
        listed = list_cars(url)
        again = list_cars(url)

    cars = listed.json()["cars"]
    assert cars["total"] == len(cars["data"]) == 100_000
    assert again.content == listed.content


def test_a_minimal_list_cars_answer_is_serialised_once_per_spelling_seed() -> None:
    emulator = state.Emulator(state.Settings(vehicles=20, seed=3))
    request = Request("GET", "/key/list-cars", "", Message(), b"", "127.0.0.1:0")
    seed_3, seed_4 = Call(request, minimal=spellings(3)), Call(request, minimal=spellings(4))

    first = api.list_cars(emulator, seed_3).body

    assert api.list_cars(emulator, seed_3).body is first  # the same bytes, not made again
    assert api.list_cars(emulator, seed_4).body != first
    assert api.list_cars(emulator, seed_3).body is first
