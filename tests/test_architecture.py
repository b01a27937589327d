"""The packages' layers as docs/architecture.md draws them (issue 28, 2): no import circle anywhere
(imports inside functions count: they were how the circles hid), and each layer imports only the
layers below it: mha_core nothing of ours, course and classroom only mha_core and each other's
registry, app everything."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("mha_core", "course", "classroom", "app")
BELOW = {"mha_core": set(), "course": {"mha_core"}, "classroom": {"mha_core", "course"},
         "app": {"mha_core", "course", "classroom", "app"}}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for package in PACKAGES for p in (ROOT / package).rglob("*.py")}


def imports(path: Path, known: set[str]) -> set[str]:
    """Our modules this file imports, anywhere in it (``from app import live`` names app.room.live)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        found |= {name for name in names if name in known}
    return found


def graph() -> dict[str, set[str]]:
    found = modules()
    return {name: imports(path, set(found)) - {name} for name, path in found.items()}


def cycle(edges: dict[str, set[str]]) -> list[str]:
    """One import circle, or []."""
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for target in sorted(edges.get(node, ())):
            if state.get(target) == 1:
                return path[path.index(target):] + [target]
            if target not in state and (found := visit(target)):
                return found
        state[node] = 2
        path.pop()
        return []

    for node in sorted(edges):
        if node not in state and (found := visit(node)):
            return found
    return []


def test_no_import_circle():
    edges = graph()
    assert len(edges) > 60
    assert cycle(edges) == []


def test_the_circle_finder_finds_one():
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set()}) == []


def test_each_layer_imports_only_the_layers_below_it():
    wrong = [f"{name} imports {target}" for name, targets in graph().items() for target in targets
             if target.split(".")[0] not in BELOW[name.split(".")[0]] | {name.split(".")[0]}]
    assert wrong == []
