"""The soak's timeline and what failed on it: when the bursts and faults come (fractions
of the run), the faults as injected (from when to when, and how long after their end
they may still explain a failure), the requests locust logged, and which fault explains
a failed request. A 5xx no fault explains is what the soak must not see.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

WEBHOOK_ROUTE = "/webhooks/fleet/[token]/ (POST)"


@dataclass
class Fault:
    """An injected fault: what, from when to when (seconds into the run), and for how long
    after its end it may still explain a failure (a reconnection, a retry's wait)."""

    name: str
    start: float
    end: float = 0.0
    grace: float = 5.0

    def explains(self, request: Request) -> bool:
        """Whether `request` was under way while the fault acted."""
        return request.at <= max(self.end, self.start) + self.grace and request.ended >= self.start


@dataclass
class Timeline:
    seconds: float
    burst_rate: int
    bursts: list[dict[str, float]] = field(default_factory=list)

    def __post_init__(self) -> None:
        first = min(30.0, self.seconds / 3)
        second = min(30.0, self.seconds * 0.06)
        for start, length in ((0.30 * self.seconds, first), (0.78 * self.seconds, second)):
            self.bursts.append({"start": start, "end": start + length, "rate": self.burst_rate})

    def at(self, fraction: float) -> float:
        return fraction * self.seconds

    @property
    def deliveries(self) -> int:
        return round(sum((b["end"] - b["start"]) * b["rate"] for b in self.bursts))

    @property
    def without_slow(self) -> tuple[float, float]:
        return self.at(0.05), self.at(0.15)  # the sign-ins of the start left out

    @property
    def with_slow(self) -> tuple[float, float]:
        return self.at(0.16), self.at(0.30)


@dataclass(frozen=True)
class Request:
    at: float  # seconds into the run, when it started
    route: str
    status: int  # 0: no answer
    milliseconds: float

    @property
    def ended(self) -> float:
        return self.at + self.milliseconds / 1000

    @property
    def failed(self) -> bool:
        return self.status == 0 or self.status >= 500


def explanation(request: Request, faults: Sequence[Fault]) -> str | None:
    """The latest fault begun before `request` that can explain its failure."""
    candidates = [
        fault
        for fault in faults
        if fault.explains(request)
        and not fault.name.startswith("db_worker")  # the background worker answers no request
        # The receiver never calls the Fleet API.
        and not (fault.name.startswith("emulator") and request.route == WEBHOOK_ROUTE)
    ]
    return max(candidates, key=lambda fault: fault.start).name if candidates else None
