"""`Throttle`: something this process does at most once per interval, whatever its threads."""

from __future__ import annotations

import threading
import time


class Throttle:
    """At most once per interval (monotonic clock), for all the threads of a process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._next_at = 0.0

    def due(self, interval: float) -> bool:
        """Whether it is time again; if so, the next time is `interval` seconds away."""
        now = time.monotonic()
        with self._lock:
            if now < self._next_at:
                return False
            self._next_at = now + interval
            return True

    def reset(self) -> None:
        """Due at once (what was to be done could not be: the next caller does it)."""
        with self._lock:
            self._next_at = 0.0
