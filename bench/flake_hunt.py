"""The flake hunt: the whole suite again and again in random orders, on a busy machine.

    python -m bench.flake_hunt [--runs 5] [--soaks 5] [--keep FOLDER]    # or: make flake-hunt

While a CPU hog keeps one of the machine's cores busy the whole time, it runs
the whole suite `--runs` times on SQLite and local memory and `--runs` times on
PostgreSQL and Redis (127.0.0.1:5432 and :6379), each in a random order
(pytest-random-order, tests shuffled within their modules and the modules
shuffled, a new seed each run, printed), then the soak `--soaks` times for 60
seconds, on one host and on two in turn. It prints a line per run (seed,
pytest's summary or the soak's vehicle-list and last lines, time) and exits 1
if any failed, printing the command that repeats each failed suite run.

Not part of CI: it takes hours. Every log is kept in `--keep` (a temporary folder
by default, printed). Ctrl-C or SIGTERM stops it, the run under way with everything it
started (its process group) and the hog, also when it was started in the background
(which ignores Ctrl-C unless told otherwise); exit status 130.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bench.servers import sigterm_as_interrupt

ROOT = Path(__file__).resolve().parent.parent
PRODUCTION = {
    "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/fleet_portal",
    "CACHE_URL": "redis://127.0.0.1:6379/1",
}
_SUMMARY = re.compile(r"^(?:=+ )?(\d+ (?:passed|failed|error).*) in [\d.]+s", re.MULTILINE)
_SOAK_LINES = re.compile(r"^(?:  vehicle list: .*|soak: .*)$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Run:
    what: str
    seed: int | None
    ok: bool
    summary: str
    seconds: float
    log: Path


@contextmanager
def cpu_hog() -> Iterator[None]:
    """One process spinning for the whole hunt: one core of two is busy."""
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield
    finally:
        hog.kill()
        hog.wait()


def _run(command: Sequence[str], log: Path, env: dict[str, str]) -> tuple[int, str]:
    """`command`'s exit status and output, in a process group of its own: stopped with
    everything it started (a suite's emulator, a soak's servers) if the hunt is."""
    with log.open("w") as output:
        child = subprocess.Popen(
            command,
            cwd=ROOT,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            code = child.wait()
        except BaseException:
            _stop(child)
            raise
    return code, log.read_text(errors="replace")


# How long a stopped run gets to end on its own (its `finally` blocks) before SIGKILL.
_STOP_SECONDS = 30


def _stop(child: subprocess.Popen[bytes]) -> None:
    """SIGTERM to `child`'s process group, then SIGKILL to whatever of it is left."""
    for signum in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(child.pid, signum)
        except ProcessLookupError:
            break
        try:
            child.wait(timeout=_STOP_SECONDS)
        except subprocess.TimeoutExpired:
            continue


def _pytest_command(seed: int) -> list[str]:
    return [
        ".venv/bin/pytest",
        "-p",
        "random_order",
        "--random-order-bucket=module",
        f"--random-order-seed={seed}",
    ]


def _variables(values: dict[str, str]) -> str:
    return " ".join(f"{name}={value}" for name, value in values.items())


def suite(what: str, seed: int, folder: Path, extra_env: dict[str, str]) -> Run:
    log = folder / f"{what.replace(' ', '-')}-{seed}.log"
    command = [*_pytest_command(seed), "-q"]
    started = time.monotonic()
    code, text = _run(command, log, os.environ | extra_env)
    summaries = _SUMMARY.findall(text)
    summary = summaries[-1] if summaries else f"exit {code}, no summary (see the log)"
    return Run(what, seed, code == 0, summary, time.monotonic() - started, log)


def soak(hosts: int, number: int, folder: Path) -> Run:
    log = folder / f"soak-{number}-{hosts}-hosts.log"
    command = [sys.executable, "-m", "bench.soak", "--seconds", "60", "--hosts", str(hosts)]
    started = time.monotonic()
    code, text = _run(command, log, dict(os.environ))
    summary = " | ".join(line.strip() for line in _SOAK_LINES.findall(text)) or f"exit {code}"
    return Run(f"soak, {hosts} host(s)", None, code == 0, summary, time.monotonic() - started, log)


def _print(run: Run) -> None:
    seed = "" if run.seed is None else f"seed {run.seed}  "
    verdict = "ok    " if run.ok else "FAILED"
    print(f"{verdict} {run.what:<28} {seed}{run.seconds / 60:5.1f} min  {run.summary}", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    return stoppable(lambda: _hunt(argv))


def stoppable(work: Callable[[], int]) -> int:
    """`work`'s exit status; 130 once Ctrl-C or SIGTERM stopped it (every `finally` run:
    the run under way and the hog stopped). Started in the background (`make
    flake-hunt &`), a process ignores Ctrl-C unless it says otherwise: it does."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with sigterm_as_interrupt():
            return work()
    except KeyboardInterrupt:
        print("\nInterrupted; the run under way and the hog are stopped.", file=sys.stderr)
        return 130


def _hunt(argv: Sequence[str] | None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="suite runs on each database")
    parser.add_argument("--soaks", type=int, default=5, help="soaks (one host, two, in turn)")
    parser.add_argument("--keep", type=Path, help="folder for the logs (default: a new one)")
    args = parser.parse_args(argv)
    folder = args.keep or Path(tempfile.mkdtemp(prefix="flake-hunt-"))
    folder.mkdir(parents=True, exist_ok=True)
    print(f"Logs in {folder}; one core kept busy by a CPU hog throughout.", flush=True)
    seeds = random.SystemRandom()
    runs: list[Run] = []
    started = time.monotonic()
    with cpu_hog():
        for _number in range(args.runs):
            for what, env in (("SQLite", {}), ("PostgreSQL + Redis", PRODUCTION)):
                runs.append(suite(what, seeds.randrange(1, 10**6), folder, env))
                _print(runs[-1])
        for number in range(args.soaks):
            runs.append(soak(1 + number % 2, number + 1, folder))
            _print(runs[-1])
    failed = [run for run in runs if not run.ok]
    minutes = (time.monotonic() - started) / 60
    print(f"\nflake hunt: {len(runs)} runs, {len(failed)} failed, in {minutes:.0f} min")
    for run in failed:
        print(f"  {run.what}: {run.log}")
        if run.seed is not None:
            variables = "" if run.what == "SQLite" else _variables(PRODUCTION) + " "
            print(f"    again: {variables}{' '.join(_pytest_command(run.seed))}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
