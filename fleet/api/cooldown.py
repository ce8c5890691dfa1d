"""The shared "come back later" state of each API route.

After a 429 or 504 with `Retry-After`, every caller of that route, not only
the one that got the answer, should wait: hammering a rate-limited route
only extends the penalty. `FleetClient` consults a `Cooldown` before each
call and feeds it after each such answer. `LocalCooldown` is per process;
the portal plugs a cache-backed implementation into the same hook so that
all its workers share it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol


class Cooldown(Protocol):
    """Per-route pause shared by all calls; routes are templates like `/key/list-cars`."""

    def remaining(self, route: str) -> float:
        """Seconds until `route` may be called again; 0 when it may be now."""
        ...

    def hold(self, route: str, seconds: float) -> None:
        """Pause `route` for `seconds` from now (never shortening a longer pause)."""
        ...


class LocalCooldown:
    """An in-process, thread-safe `Cooldown` on a monotonic clock."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._until: dict[str, float] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<LocalCooldown routes={sorted(self._until)}>"

    def remaining(self, route: str) -> float:
        with self._lock:
            until = self._until.get(route)
            if until is None:
                return 0.0
            left = until - self._clock()
            if left <= 0:
                del self._until[route]
                return 0.0
            return left

    def hold(self, route: str, seconds: float) -> None:
        if seconds <= 0:
            return
        with self._lock:
            until = self._clock() + seconds
            self._until[route] = max(until, self._until.get(route, until))
