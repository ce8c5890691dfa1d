"""No import cycle through the tasks, the webhook modules and the CNH lookups, and none
that runs in the emulator.

Tasks call services; services ask for a task by name (`portal.lib.worker.enqueue`)
and never import `fleet.tasks`. The graph is read from the source (every
`import`, those inside functions included), so a cycle hidden in a function
body is found too; each module is also imported alone in a fresh interpreter.

The emulator's modules name each other's types for the type checker only
(`if TYPE_CHECKING:`): the state and the routes it serves, the fleet and the
messages it sends. Those circles never run; `TYPE_ONLY_CIRCLES` lists them,
so that a new one is a decision, not an accident.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

PACKAGES = ("fleet", "signin", "portal", "alerts")
EMULATOR = ("emulator",)
TYPE_ONLY_CIRCLES = [
    {"emulator.fleet", "emulator.messages", "emulator.minimal"},
    {"emulator.routing", "emulator.state", "emulator.webapp"},
]
WATCHED = (
    "fleet.tasks",
    "portal.lib.worker",
    "fleet.webhooks.receive",
    "fleet.webhooks.payloads",
    "fleet.webhooks.records",
    "fleet.webhooks.processing",
    "fleet.webhooks.unknown_keys",
    "fleet.views.webhook_receiver",
    "fleet.services.cnh",
    "fleet.views.cnh",
    "alerts.tasks",
    "alerts.services.outbox",
    "alerts.services.claims",
    "alerts.services.sending",
)


def _modules(packages: tuple[str, ...]) -> dict[str, Path]:
    found = {}
    for package in packages:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def _type_checking_only(tree: ast.Module) -> set[ast.AST]:
    """The import statements under `if TYPE_CHECKING:` (never run)."""
    return {
        node
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and ast.unparse(block.test).endswith("TYPE_CHECKING")
        for statement in block.body
        for node in ast.walk(statement)
    }


def import_graph(
    packages: tuple[str, ...] = PACKAGES, *, runtime_only: bool = False
) -> dict[str, set[str]]:
    """First-party module -> the first-party modules it imports, anywhere in its body (only
    those imports that run, with `runtime_only`)."""
    modules = _modules(packages)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(), str(path))
        skipped = _type_checking_only(tree) if runtime_only else set()
        for node in ast.walk(tree):
            if node in skipped:
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                # `from a import b`: the module a.b when there is one, else a.
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                    for alias in node.names
                ]
            graph[name].update(t for t in targets if t in modules and t != name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(component)

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_graph_sees_the_imports_inside_functions() -> None:
    graph = import_graph()

    assert "fleet.webhooks.payloads" in graph["fleet.webhooks.processing"]
    assert "portal.lib.worker" in graph["fleet.services.cnh"]
    assert "fleet.services.cnh" in graph["fleet.tasks"]
    # A cycle is found, however it is made (the check cannot pass by seeing nothing).
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]


def test_no_cycle_goes_through_the_tasks_the_webhooks_or_the_cnh_lookups() -> None:
    graph = import_graph()
    assert set(WATCHED) <= set(graph)

    through = [sorted(component) for component in cycles(graph) if component & set(WATCHED)]

    assert through == []


def test_services_never_import_the_tasks() -> None:
    graph = import_graph()

    importers = sorted(name for name, targets in graph.items() if "fleet.tasks" in targets)

    assert importers == []  # the worker finds tasks by name (portal.lib.worker)


def test_no_cycle_in_the_emulator_runs_and_its_type_only_circles_are_the_known_ones() -> None:
    everything = import_graph(EMULATOR)
    running = import_graph(EMULATOR, runtime_only=True)

    assert cycles(running) == []
    assert sorted(map(sorted, cycles(everything))) == sorted(map(sorted, TYPE_ONLY_CIRCLES))
    # The graph sees the emulator, and tells the imports that run from the others.
    assert "emulator.state" in running["emulator.server"]
    assert "emulator.state" in everything["emulator.routing"]
    assert "emulator.state" not in running["emulator.routing"]


@pytest.mark.parametrize("module", sorted(_modules(EMULATOR)))
def test_each_emulator_module_imports_alone_without_django(module: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", f"import {module}"],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert result.returncode == 0, result.stderr[-2000:]


@pytest.mark.parametrize("module", WATCHED)
def test_each_module_imports_alone(module: str) -> None:
    code = f"import django; django.setup(); import {module}"
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={"DJANGO_SETTINGS_MODULE": "tests.settings", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert result.returncode == 0, result.stderr[-2000:]
