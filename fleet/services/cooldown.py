"""The Retry-After pause of each API route, shared by every worker through Django's cache.

After a 429 or 504 with `Retry-After`, no process of the deployment may call
that route before the time is up: the client's retry budget consults this
`Cooldown` before every attempt and feeds it after every such answer, so the
budget and the pause are one mechanism.

Each paused route holds an absolute deadline on the wall clock (`time.time()`,
the clock all processes and hosts share), under a key that expires a second
after it.
"""

from __future__ import annotations

import math
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

from django.core.cache import cache

_PREFIX: Final = "fleet:cooldown"
# Guards the read-compare-write of `hold`; far longer than that takes.
_HOLD_LOCK_SECONDS: Final = 5
_HOLD_LOCK_WAIT: Final = 0.5
_HOLD_LOCK_POLL: Final = 0.01


class CacheCooldown:
    """A `fleet.api.cooldown.Cooldown` stored in Django's default cache.

    `scope` separates the pauses of different APIs or accounts sharing one
    cache (a rate limit is per access token).
    """

    def __init__(self, *, scope: str = "") -> None:
        self.scope = scope

    def __repr__(self) -> str:
        return f"<CacheCooldown scope={self.scope!r}>"

    def remaining(self, route: str) -> float:
        deadline = cache.get(self._key(route))
        if not isinstance(deadline, int | float):
            return 0.0
        return max(0.0, deadline - time.time())

    def hold(self, route: str, seconds: float) -> None:
        if not seconds > 0:  # also NaN
            return
        key = self._key(route)
        deadline = time.time() + seconds
        timeout = math.ceil(seconds) + 1
        if cache.add(key, deadline, timeout=timeout):
            return
        # Two workers told to wait different times must keep the longer one.
        with _briefly_locked(f"{key}:hold"):
            current = cache.get(key)
            if not isinstance(current, int | float) or current < deadline:
                cache.set(key, deadline, timeout=timeout)

    def _key(self, route: str) -> str:
        return f"{_PREFIX}:{self.scope}:{route}" if self.scope else f"{_PREFIX}:{route}"


@contextmanager
def _briefly_locked(key: str) -> Iterator[None]:
    """Hold a short cache lock; after a brief wait, go ahead without it.

    A pause written a little too short is better than a caller stuck
    behind a worker that died holding the lock.
    """
    token = secrets.token_hex(8)
    give_up = time.monotonic() + _HOLD_LOCK_WAIT
    owned = cache.add(key, token, timeout=_HOLD_LOCK_SECONDS)
    while not owned and time.monotonic() < give_up:
        time.sleep(_HOLD_LOCK_POLL)
        owned = cache.add(key, token, timeout=_HOLD_LOCK_SECONDS)
    try:
        yield
    finally:
        if owned and cache.get(key) == token:
            cache.delete(key)
