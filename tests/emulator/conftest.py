"""Fixtures of the emulator tests (the `emulator` fixture itself is in tests/conftest.py)."""

from __future__ import annotations

import pytest

from tests.conftest import Emulator
from tests.emulator.support import Api


@pytest.fixture
def api(emulator: Emulator) -> Api:
    return Api(emulator.url)


@pytest.fixture
def emulator_url(emulator: Emulator) -> str:
    """The session emulator's URL, reset (seed 1, 200 vehicles)."""
    return emulator.url
