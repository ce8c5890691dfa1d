"""Rendered HTML kept per process: what is kept, and what each response gets of its own."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.contrib import messages
from django.contrib.messages.storage.fallback import FallbackStorage
from django.contrib.sessions.backends.signed_cookies import SessionStore
from django.middleware import csrf
from django.test import RequestFactory
from django.utils.autoreload import file_changed
from django.utils.csp import LazyNonce

from portal.lib.render_cache import RenderCache

PAGE = (
    '<body hx-headers=\'{"X-CSRFToken": "{{ csrf_token }}"}\'>'
    '<script src="/htmx.js"{% if csp_nonce %} nonce="{{ csp_nonce }}"{% endif %}></script>'
    "<form>{% csrf_token %}</form><p>{{ n }}</p><div>{{ inner }}</div></body>"
)
TOKENS = re.compile(r'"X-CSRFToken": "(\w+)".*name="csrfmiddlewaretoken" value="(\w+)"')
NONCE = re.compile(r'nonce="([\w-]+)"')
unmask = csrf._unmask_cipher_token  # type: ignore[attr-defined]  # Django's, private


def found(pattern: re.Pattern[str], text: str) -> str:
    match = pattern.search(text)
    assert match, f"{pattern.pattern} not in {text}"
    return match[1]


@pytest.fixture(autouse=True)
def templates(settings: Any) -> None:
    settings.TEMPLATES = [
        {
            "BACKEND": "django.template.backends.django.DjangoTemplates",
            "OPTIONS": {
                "loaders": [("django.template.loaders.locmem.Loader", {"page.html": PAGE})],
                "context_processors": ["django.template.context_processors.csp"],
            },
        }
    ]


def request(*, nonce: bool = True) -> Any:
    """A request as the middleware leaves it: a CSP nonce, a session, messages."""
    made: Any = RequestFactory().get("/")
    if nonce:
        made._csp_nonce = LazyNonce()
    made.session = SessionStore()
    made._messages = FallbackStorage(made)
    return made


def test_a_kept_page_is_rendered_once_per_key() -> None:
    kept = RenderCache(size=8)

    first = kept.render(request(), "page.html", lambda: {"n": 1}, key="k")
    again = kept.render(request(), "page.html", lambda: {"n": 2}, key="k")
    other = kept.render(request(), "page.html", lambda: {"n": 3}, key="other")

    assert "<p>1</p>" in first
    assert "<p>1</p>" in again  # kept, not rendered again
    assert "<p>3</p>" in other
    assert len(kept) == 2


def test_each_response_gets_its_own_csrf_token_and_nonce() -> None:
    kept = RenderCache(size=8)
    requests = [request() for _ in range(3)]

    pages = [kept.render(made, "page.html", lambda: {"n": 1}, key="k") for made in requests]

    tokens = [TOKENS.findall(page)[0] for page in pages]
    nonces = [found(NONCE, page) for page in pages]
    for made, (header, field), nonce in zip(requests, tokens, nonces, strict=True):
        assert header == field  # one token per page, as `{{ csrf_token }}` renders it
        assert unmask(header) == made.META["CSRF_COOKIE"]  # this request's
        assert nonce == str(made._csp_nonce)
    assert len({header for header, _field in tokens}) == 3
    assert len(set(nonces)) == 3


def test_a_request_without_a_nonce_gets_no_nonce_attribute() -> None:
    kept = RenderCache(size=8)
    kept.render(request(), "page.html", lambda: {"n": 1}, key="k")

    page = kept.render(request(nonce=False), "page.html", lambda: {"n": 1}, key="k")

    assert "nonce" not in page
    assert TOKENS.search(page)


def test_named_holes_are_filled_with_the_html_given() -> None:
    kept = RenderCache(size=8)
    kept.render(request(), "page.html", lambda: {"n": 1}, key="k", holes={"inner": "<b>one</b>"})

    page = kept.render(
        request(), "page.html", lambda: {"n": 1}, key="k", holes={"inner": "<i>two</i>"}
    )

    assert "<div><i>two</i></div>" in page


def test_without_a_key_nothing_is_kept() -> None:
    kept = RenderCache(size=8)

    kept.render(request(), "page.html", lambda: {"n": 1}, key=None)
    page = kept.render(request(), "page.html", lambda: {"n": 2}, key=None)

    assert "<p>2</p>" in page
    assert len(kept) == 0


def test_a_request_with_messages_is_rendered_for_itself() -> None:
    kept = RenderCache(size=8)
    kept.render(request(), "page.html", lambda: {"n": 1}, key="k")
    with_message = request()
    messages.info(with_message, "Saved.")

    page = kept.render(with_message, "page.html", lambda: {"n": 2}, key="k")

    assert "<p>2</p>" in page


def test_the_oldest_page_goes_when_full() -> None:
    kept = RenderCache(size=2)
    for n, key in enumerate(("a", "b", "c")):
        kept.render(request(), "page.html", {"n": n}.copy, key=key)

    assert "<p>9</p>" in kept.render(request(), "page.html", lambda: {"n": 9}, key="a")
    assert "<p>2</p>" in kept.render(request(), "page.html", lambda: {"n": 9}, key="c")
    assert len(kept) == 2


def test_a_changed_template_file_empties_every_cache() -> None:
    kept = RenderCache(size=8)
    kept.render(request(), "page.html", lambda: {"n": 1}, key="k")

    file_changed.send(sender=None, file_path=Path("templates/fleet/vehicles.py"))
    assert len(kept) == 1
    file_changed.send(sender=None, file_path=Path("templates/fleet/vehicles.html"))
    assert len(kept) == 0


def test_a_changed_setting_empties_every_cache(settings: Any) -> None:
    kept = RenderCache(size=8)
    kept.render(request(), "page.html", lambda: {"n": 1}, key="k")

    settings.FLEET_ENVIRONMENT = "sandbox"

    assert len(kept) == 0
