"""Fixtures of the page tests."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def manager_client(client: Any, manager: Any) -> Any:
    """Django's test client, logged in as the fleet manager."""
    client.force_login(manager)
    return client
