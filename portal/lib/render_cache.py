"""Rendered HTML kept in each process, with what belongs to one response filled in each time.

A page rendered from data that changes rarely (the fleet's vehicle list, which
carries a version) need not go through the template language on every
request: `RenderCache.render` renders it once per key and process, then
answers with a dict lookup and a join. What must be new on every response is
never kept: the CSRF token and the CSP nonce are rendered as holes (random
markers, unknown outside this process) that each response fills with its own
request's values, as `{% csrf_token %}` and `{% htmx_script %}` would have.
The caller may name more holes (HTML rendered apart, such as a fragment with
a cache of its own).

The key must name everything the template reads besides those holes (data
version, language, path, the user shown in the page's header, ...): a key that
forgets one serves one user's or one language's page to another. So no page uses
it directly: `portal.lib.caches.KeptHTML` builds its keys with the viewer's scope,
language and time zone. A request
with messages to show is rendered and not kept, since showing them consumes
them.

Entries live until the cache is full (oldest dropped first), a setting
changes (tests) or a template file changes (`runserver`).
"""

from __future__ import annotations

import re
import secrets
import threading
import weakref
from collections.abc import Callable, Hashable, Mapping
from pathlib import Path
from typing import Any

from django.contrib.messages import get_messages
from django.core.signals import setting_changed
from django.http import HttpRequest
from django.middleware.csp import get_nonce
from django.middleware.csrf import get_token
from django.template.loader import render_to_string
from django.utils.autoreload import file_changed
from django.utils.safestring import SafeString, mark_safe

from portal.lib.bounded import bounded_put

# Letters and digits only, so that escaping leaves a hole as it is.
_MARK = secrets.token_hex(16)
_HOLE = re.compile(f"{_MARK}([a-z_]+){_MARK}")
_CSRF, _NONCE = "csrf", "nonce"


def _hole(name: str) -> SafeString:
    return mark_safe(f"{_MARK}{name}{_MARK}")  # noqa: S308 -- letters and digits only


class RenderCache:
    """Up to `size` rendered templates of this process, by key, split at their holes."""

    def __init__(self, *, size: int) -> None:
        self.size = size
        # A key's parts: literal HTML at even positions, names of holes at odd ones.
        self._entries: dict[Hashable, list[str]] = {}
        self._lock = threading.Lock()
        _caches.add(self)

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def render(
        self,
        request: HttpRequest,
        template_name: str,
        context: Callable[[], Mapping[str, Any]],
        *,
        key: Hashable | None,
        holes: Mapping[str, str] | None = None,
    ) -> SafeString:
        """`template_name` rendered with `context()` and `holes` for `request`.

        `context` is called only when the template is rendered. `key` None:
        rendered now and not kept. `holes`: HTML (safe) put where the template
        shows the context variable of that name.
        """
        holes = holes or {}
        if key is None or len(get_messages(request)):
            return render_to_string(template_name, {**context(), **holes}, request)
        nonce = get_nonce(request)
        entry = (key, template_name, nonce is None)
        parts = self._entries.get(entry)
        if parts is None:
            marked: dict[str, SafeString | None] = {name: _hole(name) for name in holes}
            marked["csrf_token"] = _hole(_CSRF)
            marked["csp_nonce"] = None if nonce is None else _hole(_NONCE)
            parts = _HOLE.split(render_to_string(template_name, {**context(), **marked}, request))
            self._store(entry, parts)
        values = dict(holes)
        filled = parts.copy()
        for position in range(1, len(filled), 2):
            name = filled[position]
            if name not in values:  # asked for only when the page shows it, as the tags do
                values[name] = get_token(request) if name == _CSRF else str(nonce)
            filled[position] = values[name]
        # Literal parts are HTML already; a token and a nonce are letters, digits, - and _.
        return mark_safe("".join(filled))  # noqa: S308

    def _store(self, entry: Hashable, parts: list[str]) -> None:
        with self._lock:
            bounded_put(self._entries, entry, parts, size=self.size)


_caches: weakref.WeakSet[RenderCache] = weakref.WeakSet()


def _clear_all(**kwargs: Any) -> None:
    for cache in _caches:
        cache.clear()


def _template_changed(sender: object, file_path: Path, **kwargs: Any) -> None:
    if file_path.suffix == ".html":
        _clear_all()
    # None: the autoreloader goes on deciding whether to restart.


setting_changed.connect(_clear_all, dispatch_uid="portal.lib.render_cache")
file_changed.connect(_template_changed, dispatch_uid="portal.lib.render_cache")
