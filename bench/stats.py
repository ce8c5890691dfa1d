"""Statistics of measured times: a summary of latencies, and percentiles."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Summary:
    """Latencies of one kind of request, in milliseconds."""

    name: str
    count: int
    p50: float
    p95: float
    mean: float


def summarize(name: str, seconds: Sequence[float]) -> Summary:
    """p50, p95 and mean of `seconds`, in milliseconds."""
    milliseconds = [value * 1000 for value in seconds]
    return Summary(
        name=name,
        count=len(milliseconds),
        p50=statistics.median(milliseconds),
        p95=statistics.quantiles(milliseconds, n=20, method="inclusive")[18],
        mean=statistics.fmean(milliseconds),
    )


def percentile(values: Sequence[float], fraction: float) -> float:
    """The `fraction` quantile of `values` (0.5: the median), by linear interpolation."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no values")
    position = (len(ordered) - 1) * fraction
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)
