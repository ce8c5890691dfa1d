"""The emulator stands alone: standard library only, nothing from the portal."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

EMULATOR = Path(__file__).resolve().parents[2] / "emulator"


def imported_modules() -> dict[str, set[str]]:
    """Top-level module names imported by each source file of the package."""
    found: dict[str, set[str]] = {}
    for source in sorted(EMULATOR.glob("**/*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(source.read_text(), str(source))):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
        found[source.name] = names
    return found


def test_the_package_has_sources_to_check() -> None:
    assert {"__main__.py", "server.py", "auth.py"} <= set(imported_modules())


def test_the_emulator_imports_nothing_from_the_portal() -> None:
    for source, names in imported_modules().items():
        assert not names & {"portal", "fleet", "django", "tests"}, source


def test_the_emulator_uses_the_standard_library_only() -> None:
    allowed = set(sys.stdlib_module_names) | {"emulator", "__future__"}
    for source, names in imported_modules().items():
        assert names <= allowed, f"{source} imports {names - allowed}"
