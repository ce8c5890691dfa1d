"""Reading what `wrk --latency` printed about one load run."""

from __future__ import annotations

import re
from dataclasses import dataclass

from bench.servers import ServerFailed

_WRK_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3}


@dataclass(frozen=True, slots=True)
class Load:
    """One load run against one URL: what the client saw."""

    requests: int
    seconds: float
    p50_ms: float
    p99_ms: float
    errors: int  # socket errors, timeouts and answers the client counted as failed


def parse_wrk(output: str, errors: str, returncode: int) -> Load:
    """What `wrk --latency` printed: requests, time, p50/p99, and failures of any kind."""
    done = re.search(r"(\d+) requests in ([\d.]+)(us|ms|s|m),", output)
    percentiles = dict(re.findall(r"^\s+(50|99)\.?0*%\s+([\d.]+\w+)\s*$", output, re.MULTILINE))
    if returncode != 0 or not done or set(percentiles) != {"50", "99"}:
        raise ServerFailed(f"wrk failed (exit {returncode}):\n{output}{errors}")
    socket_errors = re.search(r"Socket errors: (.*)", output)
    failed = sum(map(int, re.findall(r"\d+", socket_errors[1]))) if socket_errors else 0
    if non_2xx := re.search(r"Non-2xx or 3xx responses: (\d+)", output):
        failed += int(non_2xx[1])
    return Load(
        requests=int(done[1]),
        seconds=_milliseconds(done[2] + done[3]) / 1000,
        p50_ms=_milliseconds(percentiles["50"]),
        p99_ms=_milliseconds(percentiles["99"]),
        errors=failed,
    )


def _milliseconds(text: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+)(\w+)", text).groups()
    return float(number) * _WRK_UNITS[unit]
