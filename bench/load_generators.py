"""The load a benchmark puts on one URL for a while: what the client saw, as a `Load`.

`wrk` when it is installed (C, one thread: its overhead is small beside Django's), else a
Python client of keep-alive connections in threads, which shares the CPU and the GIL
with what it measures and so compresses ratios towards 1.
"""

from __future__ import annotations

import http.client
import subprocess
import threading
import time
from collections.abc import Callable
from urllib.parse import urlsplit

from bench.servers import LOOPBACK, ServerFailed
from bench.stats import percentile
from bench.wrk import Load, parse_wrk

type LoadGenerator = Callable[[str, str, int, int], Load]


def wrk_load(wrk: str) -> LoadGenerator:
    """`wrk` (C, one thread): its overhead is small beside Django's, so ratios hold."""

    def run(url: str, cookie: str, connections: int, seconds: int) -> Load:
        command = [
            wrk,
            "--threads",
            "1",
            "--connections",
            str(connections),
            "--duration",
            f"{seconds}s",
            "--timeout",
            "10s",
            "--latency",
            "--header",
            f"Cookie: {cookie}",
            url,
        ]
        completed = subprocess.run(
            command, capture_output=True, text=True, check=False, timeout=seconds + 30
        )
        return parse_wrk(completed.stdout, completed.stderr, completed.returncode)

    return run


def python_load(url: str, cookie: str, connections: int, seconds: int) -> Load:
    """Keep-alive connections in threads: the fallback when `wrk` is missing.

    The client shares the machine's cores and the GIL with its own threads, so
    it saturates before a fast view does: ratios to the bare view come out
    closer to 1 than with `wrk`.
    """
    parts = urlsplit(url)
    host, port = parts.hostname or LOOPBACK, parts.port or 80
    target = f"{parts.path}?{parts.query}" if parts.query else parts.path
    deadline = time.monotonic() + seconds
    latencies: list[list[float]] = [[] for _ in range(connections)]
    errors = [0] * connections

    def client(number: int) -> None:
        connection = http.client.HTTPConnection(host, port, timeout=10)
        try:
            while time.monotonic() < deadline:
                started = time.perf_counter()
                try:
                    connection.request("GET", target, headers={"Cookie": cookie})
                    response = connection.getresponse()
                    response.read()
                except (OSError, http.client.HTTPException):
                    errors[number] += 1
                    connection.close()
                    continue
                latencies[number].append((time.perf_counter() - started) * 1000)
                errors[number] += response.status >= 400
        finally:
            connection.close()

    started = time.monotonic()
    threads = [threading.Thread(target=client, args=(n,), daemon=True) for n in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    every = [value for values in latencies for value in values]
    if not every:
        raise ServerFailed(f"no request to {url} succeeded")
    return Load(
        requests=len(every),
        seconds=elapsed,
        p50_ms=percentile(every, 0.5),
        p99_ms=percentile(every, 0.99),
        errors=sum(errors),
    )
