"""Webhook deliveries sent to a URL, as the fleet platform would, and what came back.

`send` POSTs each body as JSON over keep-alive connections, several at
once, and counts the answers. A transport error or a 5xx is retried (as a
platform would); anything else is an answer. What is sent is made up by
`emulator.webhooks`.
"""

from __future__ import annotations

import http.client
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

USER_AGENT = "FleetApiEmulator-Webhooks/1.0"


@dataclass(slots=True)
class Report:
    """What the receiver answered, by status; `errors`: deliveries never answered."""

    statuses: Counter[int] = field(default_factory=Counter)
    errors: int = 0
    retries: int = 0
    seconds: float = 0.0
    error_samples: list[str] = field(default_factory=list)

    @property
    def answered(self) -> int:
        return self.statuses.total()

    def as_json(self) -> dict[str, Any]:
        return {
            "answered": self.answered,
            "statuses": {str(status): n for status, n in sorted(self.statuses.items())},
            "errors": self.errors,
            "retries": self.retries,
            "seconds": round(self.seconds, 3),
        }


def send(
    url: str,
    bodies: Sequence[bytes],
    *,
    concurrency: int = 4,
    timeout: float = 10.0,
    attempts: int = 3,
) -> Report:
    """POST each body to `url`, `concurrency` at a time over keep-alive connections."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("url must be an absolute http(s) URL")
    target = parts.path or "/"
    if parts.query:
        target = f"{target}?{parts.query}"
    report = Report()
    lock = threading.Lock()
    queue = iter(range(len(bodies)))
    started = time.monotonic()

    def connect() -> http.client.HTTPConnection:
        kind = (
            http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        )
        return kind(parts.hostname or "", parts.port, timeout=timeout)

    def worker() -> None:
        connection = connect()
        try:
            while True:
                with lock:
                    index = next(queue, None)
                if index is None:
                    return
                body = bodies[index]
                for attempt in range(attempts):
                    status, problem = _post(connection, target, body)
                    if status is not None and status < 500:
                        break
                    connection.close()
                    connection = connect()
                    if attempt + 1 < attempts:
                        with lock:
                            report.retries += 1
                        time.sleep(0.05 * 2**attempt)
                with lock:
                    if status is None:
                        report.errors += 1
                        if len(report.error_samples) < 5:
                            report.error_samples.append(problem)
                    else:
                        report.statuses[status] += 1
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(max(1, concurrency))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    report.seconds = time.monotonic() - started
    return report


def _post(
    connection: http.client.HTTPConnection, target: str, body: bytes
) -> tuple[int | None, str]:
    """The status of one POST (None on a transport error) and what went wrong, if anything."""
    try:
        connection.request(
            "POST",
            target,
            body=body,
            headers={"Content-Type": "application/json", "User-Agent": USER_AGENT},
        )
        response = connection.getresponse()
        response.read()
    except (OSError, http.client.HTTPException) as error:
        return None, f"{type(error).__name__}: {error}"
    if response.will_close:
        connection.close()
    return response.status, ""


def where(url: str) -> str:
    """`url` without its path: the path of a webhook URL holds its token."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"
