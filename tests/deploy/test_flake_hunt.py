"""The flake hunt stops whole: Ctrl-C or SIGTERM ends the run under way with everything
it started (a suite's emulator, a soak's servers), also when the hunt was started in the
background, which ignores Ctrl-C unless told otherwise (a hunt stopped so left its suite
and its emulator running, seen). Real processes; each step waits for the one before."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, wait_until

# The hunt's way of running a suite, around a child that starts a grandchild and waits.
RUNNER = """
import os, sys
from pathlib import Path
from bench.flake_hunt import _run, stoppable
child = (
    "import subprocess, sys\\n"
    "grandchild = subprocess.Popen(['sleep', '600'])\\n"
    "open(sys.argv[1], 'w').write(str(grandchild.pid))\\n"
    "grandchild.wait()\\n"
)
marker, log = sys.argv[1], Path(sys.argv[2])
sys.exit(stoppable(lambda: _run([sys.executable, "-c", child, marker], log, dict(os.environ))[0]))
"""


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped by its parent, itself gone) counts as ended.
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(") ")[1].startswith("Z"))


@pytest.mark.parametrize(
    ("signum", "prefix"),
    [
        (signal.SIGTERM, []),
        # As `nohup make flake-hunt &` starts it: SIGINT ignored, inherited.
        (signal.SIGINT, ["sh", "-c", 'trap "" INT && exec "$@"', "sh"]),
    ],
    ids=["SIGTERM", "Ctrl-C, started in the background"],
)
def test_a_stopped_hunt_stops_its_run_and_what_the_run_started(tmp_path, signum, prefix):
    marker = tmp_path / "grandchild.pid"
    hunt = subprocess.Popen(
        [*prefix, sys.executable, "-c", RUNNER, str(marker), str(tmp_path / "run.log")],
        cwd=ROOT,
        env=os.environ | {"PYTHONPATH": str(ROOT)},
    )
    try:
        wait_until(lambda: marker.exists() and marker.read_text(), what="the run's child started")
        grandchild = int(marker.read_text())
        assert alive(grandchild)

        hunt.send_signal(signum)
        assert hunt.wait(timeout=60) == 130
        wait_until(lambda: not alive(grandchild), what="what the run started is stopped")
    finally:
        hunt.kill()
        hunt.wait()
