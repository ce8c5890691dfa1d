"""Rate limiting per access token (spec section 8: 429 with Retry-After on all routes).

A fixed window per token, on the emulator's clock: `limit` calls per
`window` seconds, counted from the token's first call in the window. Moving
the clock past the window lifts the limit, so tests need not wait.
"""

from __future__ import annotations

import math
import threading


class RateLimiter:
    def __init__(self, limit: int, window: float) -> None:
        self._lock = threading.Lock()
        self._limit = limit
        self._window = window
        self._windows: dict[str, tuple[float, int]] = {}  # key -> (start, calls)

    @property
    def config(self) -> dict[str, float]:
        with self._lock:
            return {"limit": self._limit, "window": self._window}

    def configure(self, *, limit: int, window: float) -> None:
        """Set the quota (0 turns limiting off) and start every window afresh."""
        with self._lock:
            self._limit, self._window = limit, window
            self._windows.clear()

    def hit(self, key: str, now: float) -> int | None:
        """Count a call; the seconds to wait when it is over the quota, else None."""
        with self._lock:
            if self._limit == 0:
                return None
            start, calls = self._windows.get(key, (now, 0))
            if not start <= now < start + self._window:  # a new window (or the clock went back)
                start, calls = now, 0
            calls += 1
            self._windows[key] = (start, calls)
            if calls <= self._limit:
                return None
            return max(1, math.ceil(start + self._window - now))
