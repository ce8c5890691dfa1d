"""The soak's traffic and its faults: locust runs for the timeline while the faults are
injected on schedule (the slow connections opened, a gunicorn worker and the db_worker
SIGKILLed, the emulator's failures armed and cleared, Redis and PostgreSQL restarted),
each recorded with the moment it acted so that the report can tell which failed
requests it explains.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import requests

from bench.servers import ROOT, ServerFailed, stop
from bench.soak_services import Postgres, Redis, gunicorn_worker_pids
from bench.soak_slow import SlowConnections
from bench.soak_startup import READ_TIMEOUT, Portal
from bench.soak_timeline import Fault, Timeline

DOWN_SECONDS = 2.0  # how long Redis and PostgreSQL stay down when restarted


def drive(
    folder: Path,
    plan: dict[str, Any],
    portal: Portal,
    timeline: Timeline,
    slow: SlowConnections,
) -> list[Fault]:
    """Run locust for the timeline and inject the faults on it; the faults, timed."""
    lead = 3.0  # locust imports and signs the users in meanwhile
    start = time.time() + lead
    plan["start"] = start
    (folder / "plan.json").write_text(
        json.dumps({k: v for k, v in plan.items() if k != "manifest"})
    )
    users = len(plan["managers"]) + len(plan["cnh_users"]) + plan["senders"]
    environment = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("DJANGO_", "FLEET_", "DATABASE_", "CACHE_"))
    }
    log = folder / "locust.log"
    with log.open("wb") as output:
        locust = subprocess.Popen(
            [
                sys.executable, "-m", "locust", "-f", str(ROOT / "bench" / "soak_locust.py"),
                "--headless", "--host", portal.nginx_url, "--users", str(users),
                "--spawn-rate", str(users), "--run-time", f"{int(lead + timeline.seconds)}s",
                "--stop-timeout", "20", "--only-summary", "--loglevel", "WARNING",
                "--exit-code-on-error", "0",
            ],
            cwd=ROOT,
            env=environment | {"SOAK_PLAN": str(folder / "plan.json")},
            stdout=output,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
    faults: list[Fault] = []
    try:
        for moment, action in _fault_schedule(portal, timeline, slow, faults):
            while time.time() < start + moment:
                if locust.poll() is not None:
                    raise ServerFailed(f"locust stopped:\n{log.read_text()[-3000:]}")
                time.sleep(min(0.2, max(0.0, start + moment - time.time())))
            action(time.time() - start)
        locust.wait(timeout=timeline.seconds + 120)
    finally:
        stop(locust)
    return faults


Action = Callable[[float], None]


def _fault_schedule(
    portal: Portal, timeline: Timeline, slow: SlowConnections, faults: list[Fault]
) -> list[tuple[float, Action]]:
    control = f"{portal.emulator_url}/_emulator/faults"
    at = timeline.at
    first, second = timeline.bursts

    def emulator_fault(
        arm_at: float, name: str, fault: dict[str, Any], *, grace: float
    ) -> list[tuple[float, Action]]:
        record = Fault(f"emulator {name}", 0.0, grace=grace)

        def arm(now: float) -> None:
            record.start = now
            requests.post(control, json={"route": "*", **fault}, timeout=10).raise_for_status()
            faults.append(record)

        def clear(now: float) -> None:
            requests.delete(control, timeout=10).raise_for_status()
            record.end = now

        return [(arm_at, arm), (arm_at + at(0.04), clear)]

    def kill_gunicorn_worker(now: float) -> None:
        pid = min(gunicorn_worker_pids(portal.gunicorn))
        os.kill(pid, 9)
        # Requests under way on it get nginx's 502; so may the next on its kept-alive
        # connections.
        faults.append(Fault(f"gunicorn worker {pid} SIGKILLed", now, now, grace=3))

    def kill_db_worker(now: float) -> None:
        pid = portal.worker.kill()
        faults.append(Fault(f"db_worker {pid} SIGKILLed", now, now, grace=0))

    def restart(name: str, server: Postgres | Redis, grace: float) -> Action:
        def action(now: float) -> None:
            began = time.monotonic()
            server.stop()
            time.sleep(DOWN_SECONDS)  # as long as a restart on a busy host takes
            server.start()
            back = now + time.monotonic() - began
            faults.append(Fault(f"{name} restarted ({back - now:.1f} s down)", now, back, grace))

        return action

    schedule: list[tuple[float, Action]] = [(at(0.15), lambda now: slow.start())]
    length = first["end"] - first["start"]
    schedule += [
        (first["start"] + 0.4 * length, kill_gunicorn_worker),
        (first["start"] + 0.7 * length, kill_db_worker),
    ]
    upstream_grace = READ_TIMEOUT + 5
    for arm_at, name, fault in (
        (at(0.55), "503", {"status": 503, "count": 100_000}),
        (at(0.60), "429 Retry-After", {"status": 429, "retry_after": 2, "count": 100_000}),
        # Two calls stall past the read timeout: each holds a sync worker that long.
        (at(0.65), "timeouts", {"delay": READ_TIMEOUT + 2, "status": 504, "count": 2}),
        (at(0.70), "malformed JSON", {"malformed": True, "count": 100_000}),
    ):
        schedule += emulator_fault(arm_at, name, fault, grace=upstream_grace)
    schedule += [
        (at(0.76), restart("Redis", portal.redis, grace=5)),
        (
            second["start"] + 0.3 * (second["end"] - second["start"]),
            restart("PostgreSQL", portal.postgres, grace=10),
        ),
    ]
    return sorted(schedule, key=lambda step: step[0])
