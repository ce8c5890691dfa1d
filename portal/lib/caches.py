"""What the portal keeps for speed: one declaration per cache, and keys no caller writes.

A cache kept for speed answers a request with what an earlier request computed, so its
key must name everything the answer depends on, first of all who asks: a key that
forgets the viewer's part of the fleet serves one manager's page to another. So no
caller builds a key. Each cache is declared once, at module level, as one of:

- `KeptHTML`: rendered templates kept in this process (`RenderCache`);
- `KeptValues`: values kept in the shared cache (Django's, Redis in production);

Each is declared either for a viewer, and then every use names the viewer's scope (an
object with a `key`, as `fleet.services.scopes.VehicleScope`), or `for_everyone`, which
says that what it keeps is the same whoever asks (and a test renders it for two scopes
and compares). Every key also holds the active language and time zone, and the parts
the caller names (a path, a data version).

Every cache reads `caches_on(its name)` before it answers from what it kept: with the
`SPEED_CACHES` setting off, its name in `SPEED_CACHES_OFF` (what a benchmark measures
it by), or inside `caches_off()` (the differential test, which answers each request
both ways), each answer is computed again and nothing is kept.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol, cast

from django.conf import settings
from django.core.cache import caches
from django.http import HttpRequest
from django.utils import timezone, translation
from django.utils.safestring import SafeString

from portal.lib.render_cache import RenderCache

_off: ContextVar[bool] = ContextVar("portal_caches_off", default=False)
_declared: dict[str, str] = {}  # name -> where it was declared: each name once
_declared_lock = threading.Lock()


class Scope(Protocol):
    """Who sees what, as a key: the same key for the same vehicles seen."""

    @property
    def key(self) -> str: ...


def caches_on(name: str = "") -> bool:
    """Whether what is kept for speed (by the cache `name`, if given) may answer now."""
    if _off.get() or not getattr(settings, "SPEED_CACHES", True):
        return False
    return not name or name not in getattr(settings, "SPEED_CACHES_OFF", ())


@contextmanager
def caches_off() -> Iterator[None]:
    """Within: every cache kept for speed computes its answer again (this thread or task
    only; what is kept stays as it was)."""
    token = _off.set(True)
    try:
        yield
    finally:
        _off.reset(token)


def declared() -> dict[str, str]:
    """The caches declared so far, by name: where each is (for the tests and the docs)."""
    return dict(_declared)


class _Declared:
    """A cache's name, and whose answers it keeps."""

    def __init__(self, name: str, *, for_everyone: bool) -> None:
        with _declared_lock:
            if name in _declared:
                raise ValueError(f"a cache named {name!r} is declared already")
            _declared[name] = "for everyone" if for_everyone else "per viewer"
        self.name = name
        self.for_everyone = for_everyone

    def _viewer(self, scope: Scope | None) -> tuple[str, str, str]:
        """The viewer's part of every key: their scope (none for a cache kept for
        everyone), the language and the time zone the answer is written in."""
        if self.for_everyone:
            if scope is not None:
                raise TypeError(f"{self.name} is kept for everyone: it takes no scope")
            seen = "everyone"
        else:
            if scope is None or not scope.key:
                raise TypeError(f"{self.name} is kept per viewer: name the viewer's scope")
            seen = scope.key
        language = translation.get_language() or ""
        return (seen, language, timezone.get_current_timezone_name())


class KeptHTML(_Declared):
    """Rendered templates kept in this process (at most `size`), per viewer or for
    everyone: `RenderCache`, each response's CSRF token, nonce and holes filled anew."""

    def __init__(self, name: str, *, size: int, for_everyone: bool = False) -> None:
        super().__init__(name, for_everyone=for_everyone)
        self._kept = RenderCache(size=size)

    def __len__(self) -> int:
        return len(self._kept)

    def clear(self) -> None:
        self._kept.clear()

    def render(
        self,
        request: HttpRequest,
        template_name: str,
        context: Callable[[], Mapping[str, Any]],
        *,
        scope: Scope | None = None,
        parts: Hashable = (),
        keep: bool = True,
        holes: Mapping[str, str] | None = None,
    ) -> SafeString:
        """`template_name` with `context()` for `request`, kept under the viewer, the
        language, the time zone and `parts` (all the template reads besides them);
        `keep` False: rendered now, not kept (a page that must not be reused)."""
        viewer = self._viewer(scope)
        key = (viewer, parts) if keep and caches_on(self.name) else None
        return self._kept.render(request, template_name, context, key=key, holes=holes)


class KeptValues(_Declared):
    """Values kept in a Django cache (`alias`: the shared one by default) for `timeout`
    seconds (or as many as it returns, read when a value is kept: a setting), per viewer
    or for everyone."""

    def __init__(
        self,
        name: str,
        *,
        timeout: float | Callable[[], float | None] | None,
        for_everyone: bool = False,
        alias: str = "default",
    ) -> None:
        super().__init__(name, for_everyone=for_everyone)
        self.timeout = timeout
        self.alias = alias

    def _timeout(self) -> float | None:
        return self.timeout() if callable(self.timeout) else self.timeout

    def key(self, *parts: object, scope: Scope | None = None) -> str:
        """The shared cache's key for `parts` and the viewer: for `cache.add` and
        `cache.delete` beside `get` and `set` (a lock taken while one process reads)."""
        text = repr((self._viewer(scope), parts))
        return f"portal:kept:{self.name}:{hashlib.sha256(text.encode()).hexdigest()[:32]}"

    def get(self, *parts: object, scope: Scope | None = None) -> Any:
        """What is kept for `parts` and the viewer, or None (caches off: always None)."""
        if not caches_on(self.name):
            return None
        return caches[self.alias].get(self.key(*parts, scope=scope))

    def set(self, value: object, *parts: object, scope: Scope | None = None) -> None:
        if caches_on(self.name):
            caches[self.alias].set(self.key(*parts, scope=scope), value, timeout=self._timeout())

    def get_or_compute[T](
        self, compute: Callable[[], T], *parts: object, scope: Scope | None = None
    ) -> T:
        found = self.get(*parts, scope=scope)
        if found is None:
            found = compute()
            self.set(found, *parts, scope=scope)
        return cast(T, found)

    def each[T](
        self,
        parts: Sequence[tuple[object, ...]],
        compute: Callable[[int], T],
        *,
        scope: Scope | None = None,
    ) -> list[T]:
        """For each of `parts`, what is kept, else `compute(its index)` (then kept): one
        read and one write of the cache for them all."""
        keys = [self.key(*each, scope=scope) for each in parts]
        found: dict[str, Any] = caches[self.alias].get_many(keys) if caches_on(self.name) else {}
        missing: dict[str, Any] = {}
        for index, key in enumerate(keys):
            if key not in found:
                missing[key] = found[key] = compute(index)
        if missing and caches_on(self.name):
            caches[self.alias].set_many(missing, timeout=self._timeout())
        return [found[key] for key in keys]
