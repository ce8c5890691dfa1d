"""Playwright driving Debian's Chromium against a live portal and a live emulator.

When Chromium is missing, these tests are skipped with a loud message, except
under CI=true, where a missing browser is a failure: CI must run them.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# Playwright's sync API runs an event loop in this thread; Django's ORM refuses
# to run next to one unless told that this test-only use is safe.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))
# Flags that keep Chromium off the (closed) network and quiet in a sandbox.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        message = f"{CHROMIUM} is missing: browser tests cannot run (make test installs it as root)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        warnings.warn(message, stacklevel=1)
        pytest.skip(f"!!! SKIPPED: {message}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any, live_server: Any, fleet_settings: Any) -> Iterator[Any]:
    """A fresh browser context (no cookies) on the live portal."""
    context = browser.new_context(base_url=live_server.url, locale="pt-BR")
    context.set_default_timeout(10_000)
    new_page = context.new_page()
    yield new_page
    context.close()


@pytest.fixture
def page_without_javascript(browser: Any, live_server: Any, fleet_settings: Any) -> Iterator[Any]:
    """Like `page`, with JavaScript off: what the pages must do without it."""
    context = browser.new_context(
        base_url=live_server.url, java_script_enabled=False, locale="pt-BR"
    )
    context.set_default_timeout(10_000)
    yield context.new_page()
    context.close()


def log_in(page: Any, username: str, password: str) -> None:
    page.goto("/accounts/login/")
    page.get_by_label("Nome de usuário").fill(username)
    page.get_by_label("Senha").fill(password)
    page.get_by_role("button", name="Entrar").click()
