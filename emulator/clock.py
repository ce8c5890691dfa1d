"""The emulator's clock: real time plus an offset the control surface moves.

Everything that expires or moves with time (e-CRLV states, download links,
access keys, rate-limit windows) reads this clock, so a test can jump an
hour ahead instead of waiting for one.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta


class Clock:
    """Real UTC time shifted by an adjustable offset."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._offset = timedelta()

    def now(self) -> datetime:
        with self._lock:
            offset = self._offset
        return datetime.now(UTC) + offset

    @property
    def offset(self) -> float:
        """The shift from real time, in seconds."""
        with self._lock:
            return self._offset.total_seconds()

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._offset += timedelta(seconds=seconds)

    def set(self, moment: datetime) -> None:
        with self._lock:
            self._offset = moment - datetime.now(UTC)

    def reset(self) -> None:
        with self._lock:
            self._offset = timedelta()


def isoformat(moment: datetime) -> str:
    """ISO 8601 in UTC to the second, with a `Z`: the form every answer uses."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_isoformat(text: str) -> datetime:
    """An ISO 8601 moment; one without a zone is taken as UTC."""
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
