"""Fixtures of the page tests."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest

CHIP = re.compile(
    r'data-testid="filter-chip"><span>([^<]*)</span>\s*<a class="chip__remove" href="([^"]*)"'
)


def chips(page: str) -> list[tuple[str, str]]:
    """(text, address without it) of each filter the list says it applies."""
    return [(html.unescape(text), html.unescape(href)) for text, href in CHIP.findall(page)]


@pytest.fixture
def manager_client(client: Any, manager: Any) -> Any:
    """Django's test client, logged in as the fleet manager."""
    client.force_login(manager)
    return client
