"""What reached the API: call counts per route and the last requests in full.

Tests read it through `/_emulator/stats` and `/_emulator/requests` to check
how often, and with what headers and body, a client called.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, defaultdict, deque
from typing import Any

from emulator.messages import Request

RECENT_KEPT = 200
ANSWERS_KEPT = 10_000  # per route: when each call was answered, and how


class Traffic:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: Counter[str] = Counter()
        self._recent: deque[dict[str, Any]] = deque(maxlen=RECENT_KEPT)
        self._answers: defaultdict[str, deque[tuple[float, int | None]]] = defaultdict(
            lambda: deque(maxlen=ANSWERS_KEPT)
        )

    def arrive(self, request: Request, template: str | None) -> dict[str, Any]:
        """Count a call and keep its details; the entry to pass to `answered`.

        Done on arrival, before any injected delay, so a client that gave up
        waiting can already see its call counted. Calls are counted by method
        and route template ("GET /v2/crlv/requests/{requestId}"), or by the
        raw path when no route fits.
        """
        entry: dict[str, Any] = {
            "method": request.method,
            "path": request.path,
            "query": request.query,
            "route": template,
            "headers": dict(request.headers.items()),
            "body": request.body.decode("utf-8", errors="replace"),
            "status": None,  # until answered; stays None for a dropped connection
        }
        with self._lock:
            self._calls[f"{request.method} {template or request.path}"] += 1
            self._recent.append(entry)
        return entry

    def answered(self, entry: dict[str, Any], status: int | None) -> None:
        """Note the status a kept call was answered with (None: dropped), and when (wall
        clock: the soak compares calls of several hosts of the portal)."""
        key = f"{entry['method']} {entry['route'] or entry['path']}"
        with self._lock:
            entry["status"] = status
            self._answers[key].append((time.time(), status))

    def answers(self, key: str) -> list[tuple[float, int | None]]:
        """When each call of `key` ("GET /key/list-cars") was answered, and its status."""
        with self._lock:
            return list(self._answers.get(key, ()))

    def calls(self) -> dict[str, int]:
        with self._lock:
            return dict(self._calls)

    def recent(self) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(entry) for entry in self._recent]

    def clear(self) -> None:
        with self._lock:
            self._calls.clear()
            self._recent.clear()
            self._answers.clear()
