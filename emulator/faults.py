"""Injected faults: what the next calls of a route answer instead of the truth.

A fault is armed for the next `count` calls whose route template matches
(`*` for any API route), optionally for one method only. Faults are consumed
in the order they were added and act before rate limiting and
authentication, as a failing gateway in front of the API would.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Collection, Mapping
from dataclasses import asdict, dataclass, fields
from http import HTTPStatus
from typing import Any

ANY_ROUTE = "*"
_ERROR_STATUSES = {status.value for status in HTTPStatus if 400 <= status.value <= 599}


@dataclass(frozen=True, slots=True)
class Fault:
    route: str
    method: str | None = None
    status: int | None = None
    retry_after: int | None = None
    delay: float = 0.0
    malformed: bool = False
    body: bytes | None = None  # replacement JSON, already encoded
    drop: bool = False
    cut: bool = False  # the answer's headers and half its body, then the connection closes

    @property
    def answers(self) -> bool:
        """False for a pure delay: the call then goes on to its real answer."""
        return self.drop or self.malformed or self.body is not None or self.status is not None

    def matches(self, template: str | None, method: str) -> bool:
        route_ok = self.route == ANY_ROUTE or self.route == template
        return route_ok and (self.method is None or self.method == method)

    def as_json(self) -> dict[str, Any]:
        described = asdict(self)
        described["body"] = None if self.body is None else json.loads(self.body)
        return described


_FIELDS = {field.name for field in fields(Fault)} | {"count"}


def parse_fault(data: Mapping[str, Any], routes: Collection[str]) -> tuple[Fault, int]:
    """A fault and its count from the control surface's JSON.

    Raises ValueError with a message that says what to fix.
    """
    unknown = set(data) - _FIELDS
    if unknown:
        raise ValueError(f"unknown fault fields: {sorted(unknown)}")
    route = data.get("route")
    if not isinstance(route, str) or (route != ANY_ROUTE and route not in routes):
        raise ValueError(f"route must be {ANY_ROUTE!r} or one of {sorted(routes)}")
    method = data.get("method")
    if method is not None and not isinstance(method, str):
        raise ValueError("method must be a string")
    status = _whole(data, "status", minimum=400)
    if status is not None and status not in _ERROR_STATUSES:
        raise ValueError("status must be an HTTP error status, 400 to 599")
    fault = Fault(
        route=route,
        method=method.upper() if method else None,
        status=status,
        retry_after=_whole(data, "retry_after", minimum=0),
        delay=_seconds(data, "delay"),
        malformed=data.get("malformed") is True,
        body=json.dumps(data["body"]).encode("utf-8") if "body" in data else None,
        drop=data.get("drop") is True,
        cut=data.get("cut") is True,
    )
    if fault.drop and (
        fault.status is not None or fault.malformed or fault.body is not None or fault.cut
    ):
        raise ValueError("drop closes the connection: it cannot be combined with an answer")
    if fault.malformed and fault.body is not None:
        raise ValueError("malformed and body are two different answers: choose one")
    if not fault.answers and not fault.delay and not fault.cut:
        raise ValueError("a fault needs status, delay, malformed, body, drop or cut")
    return fault, _whole(data, "count", minimum=1) or 1


def _whole(data: Mapping[str, Any], name: str, *, minimum: int) -> int | None:
    value = data.get(name)
    # bool is an int to Python, but never a count or a status here.
    if value is not None and (type(value) is not int or value < minimum):
        raise ValueError(f"{name} must be a whole number, at least {minimum}")
    return value


def _seconds(data: Mapping[str, Any], name: str) -> float:
    value = data.get(name, 0)
    if type(value) not in (int, float) or value < 0:
        raise ValueError(f"{name} must be a number of seconds, at least 0")
    return float(value)


@dataclass(slots=True)
class _Armed:
    id: int
    fault: Fault
    remaining: int


class FaultQueue:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._armed: list[_Armed] = []
        self._next_id = 1

    def add(self, fault: Fault, count: int) -> int:
        with self._lock:
            fault_id = self._next_id
            self._next_id += 1
            self._armed.append(_Armed(fault_id, fault, count))
            return fault_id

    def take(self, template: str | None, method: str) -> Fault | None:
        """The first armed fault for this call, used up by one."""
        with self._lock:
            for armed in self._armed:
                if armed.fault.matches(template, method):
                    armed.remaining -= 1
                    if armed.remaining == 0:
                        self._armed.remove(armed)
                    return armed.fault
            return None

    def pending(self) -> list[dict[str, Any]]:
        with self._lock:
            return [
                {"id": armed.id, "remaining": armed.remaining, **armed.fault.as_json()}
                for armed in self._armed
            ]

    def clear(self) -> int:
        with self._lock:
            cleared = len(self._armed)
            self._armed.clear()
            return cleared
