"""How a benchmark run ends: the machine's load average, the failures it counted, and the
exit status they make (0 when none, 1 when some; `bench_main`'s 2 and 130 before that).

Failures are counted by description as the run goes, so that one bad answer is reported
with how often it happened instead of ending the run.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from bench.servers import bench_main


def load_average() -> str:
    """The machine's load averages over 1, 5 and 15 minutes, as printed."""
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def bench_counting_failures(run: Callable[[Path, Counter[str]], int], *, passed: str) -> int:
    """`run` in a temporary folder (`bench_main`), counting its failures: its exit status,
    else 1 if any failed; with none, it says what `passed`."""
    failures: Counter[str] = Counter()
    status = bench_main(lambda workdir: run(workdir, failures))
    return status or report_failures(failures, passed=passed)


def report_failures(failures: Counter[str], *, passed: str) -> int:
    """The load average at the end, then the failures or what `passed`: the exit status."""
    print(f"Load average at the end: {load_average()} (other work on the machine moves req/s).")
    if not failures:
        print(f"\nNo failures: {passed}.")
        return 0
    print("\nFAILURES:")
    for failure, count in failures.most_common():
        print(f"  {count:>5}  {failure}")
    return 1
