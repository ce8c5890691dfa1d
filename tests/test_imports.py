"""No import cycle through the tasks, the webhook modules and the CNH lookups.

Tasks call services; services ask for a task by name (`fleet.worker.enqueue`)
and never import `fleet.tasks`. The graph is read from the source (every
`import`, those inside functions included), so a cycle hidden in a function
body is found too; each module is also imported alone in a fresh interpreter.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

PACKAGES = ("fleet", "signin", "portal", "alerts")
WATCHED = (
    "fleet.tasks",
    "fleet.worker",
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


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def import_graph() -> dict[str, set[str]]:
    """First-party module -> the first-party modules it imports, anywhere in its body."""
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
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
    assert "fleet.worker" in graph["fleet.services.cnh"]
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

    assert importers == []  # the worker finds tasks by name (fleet.worker)


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
