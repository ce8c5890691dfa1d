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


@pytest.fixture
def indicating_client(client: Any, django_user_model: Any) -> Any:
    """Django's test client, logged in as "marcos": a manager of the whole fleet who may
    change fines' deadlines and indications."""
    from django.contrib.auth.models import Permission

    from tests.scopes import grant_whole_fleet

    user = django_user_model.objects.create_user("marcos", password="pw-123456")
    grant_whole_fleet(user)
    user.user_permissions.add(Permission.objects.get(codename="change_fine_indication"))
    client.force_login(user)
    return client
