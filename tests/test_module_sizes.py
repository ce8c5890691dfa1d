"""No module of the portal grows past 500 lines unless its docstring says, in a sentence
that names it "one module", why its jobs belong together: a longer file is a newcomer's
cost, paid only for a reason someone wrote down."""

from __future__ import annotations

import ast

import pytest

from tests.conftest import ROOT

PACKAGES = ("fleet", "signin", "alerts", "portal")
LONGEST = 500


def _modules() -> list[str]:
    return sorted(
        str(path.relative_to(ROOT))
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if "migrations" not in path.parts
    )


def test_the_check_reads_the_portals_modules() -> None:
    assert {"fleet/models/webhooks.py", "portal/settings.py"} <= set(_modules())


@pytest.mark.parametrize("module", _modules())
def test_a_long_module_says_why_it_is_one(module: str) -> None:
    source = (ROOT / module).read_text()
    lines = source.count("\n")
    if lines <= LONGEST:
        return

    docstring = ast.get_docstring(ast.parse(source)) or ""

    assert "one module" in docstring.lower(), f"{module}: {lines} lines, and no reason given"
