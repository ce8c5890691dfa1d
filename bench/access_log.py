"""gunicorn's access log, read phase by phase: the server's own time of each request.

The portal is started with `ACCESS_LOG_FORMAT` (the worker's pid, the status, `%(D)s`
microseconds and the request line); `AccessLog` reads the lines written since an offset,
so that each phase of a benchmark gets the requests it sent.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

ACCESS_LOG_FORMAT = '%(p)s %(s)s %(D)s "%(r)s"'
_ACCESS_LINE = re.compile(r'<(\d+)> (\d{3}) (\d+) "GET (\S+) [^"]*"')
_SETTLE = 0.3  # seconds for the last requests of a phase to reach the access log


@dataclass(frozen=True, slots=True)
class Hit:
    """One line of gunicorn's access log."""

    pid: int
    status: int
    micros: int
    target: str


class AccessLog:
    """gunicorn's access log, read by phase: the lines written since an offset."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def end(self) -> int:
        time.sleep(_SETTLE)
        return self.path.stat().st_size if self.path.exists() else 0

    def since(self, offset: int) -> list[Hit]:
        time.sleep(_SETTLE)
        with self.path.open("rb") as log:
            log.seek(offset)
            text = log.read().decode(errors="replace")
        return [
            Hit(int(m[1]), int(m[2]), int(m[3]), m[4])
            for m in map(_ACCESS_LINE.fullmatch, text.splitlines())
            if m
        ]
