"""Which app may import which: the import-linter contracts of pyproject.toml hold on the
tree, and each breaks when the import it forbids comes back (checked on a copy of the
tree with that one import added)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

PACKAGES = ("portal", "fleet", "signin", "alerts", "emulator")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(tree / "pyproject.toml"), "--no-cache"],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_it_keeps_every_contract_on_the_tree():
    linted = lint_imports(ROOT)
    assert linted.returncode == 0, linted.stdout + linted.stderr
    assert "0 broken" in linted.stdout


@pytest.mark.parametrize(
    ("module", "added", "broken"),
    [
        ("fleet/admin/groups.py", "import signin.providers", "never import each other"),
        ("fleet/signals.py", "import signin.signals", "never import each other"),
        ("signin/blocks.py", "import alerts.services.pauses", "Only the alerts import"),
        ("signin/admission.py", "import fleet.services.scopes", "never import each other"),
        ("portal/lib/worker.py", "import fleet.tasks", "The platform imports no app"),
        ("fleet/services/fines.py", "import portal.settings", "not the project's wiring"),
        ("fleet/api/client.py", "import fleet.services.vehicles", "views call services"),
        ("emulator/state.py", "import fleet.plates", "shares no code"),
    ],
)
def test_it_fails_when_a_forbidden_import_comes_back(tmp_path, module, added, broken):
    tree = tmp_path / "tree"
    for package in PACKAGES:
        shutil.copytree(
            ROOT / package, tree / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(ROOT / "pyproject.toml", tree / "pyproject.toml")
    path = tree / module
    path.write_text(path.read_text() + f"\n\ndef _again() -> None:\n    {added}\n")

    linted = lint_imports(tree)
    assert linted.returncode == 1, linted.stdout + linted.stderr
    # The contract that forbids it (others too, where the import makes a chain they forbid).
    verdicts = [line for line in linted.stdout.splitlines() if line.endswith(("KEPT", "BROKEN"))]
    (named,) = [line for line in verdicts if broken in line]
    assert named.endswith(" BROKEN"), linted.stdout
