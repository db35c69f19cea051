"""``nic``'s modules import each other without a circle, counting the imports inside
functions too (a lazy import that closes a circle is still one: neither module can be
read, or changed, without the other)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _graph(package: str) -> dict[str, set[str]]:
    files = {_module_name(f): f for f in (ROOT / package).rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in files}
    for mod, path in files.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = mod.split(".") if is_package else mod.split(".")[:-1]
                    base = base[:len(base) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                # ``from nic.collectives import multitree`` imports the submodule multitree
                names = [f"{target}.{a.name}" if f"{target}.{a.name}" in files else target for a in node.names]
            else:
                continue
            for name in names:
                while name and name not in files:  # ``import nic.collectives.ring`` -> that module
                    name = name.rpartition(".")[0]
                if name and name != mod:
                    graph[mod].add(name)
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import circle (its modules in order), or []."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> list[str]:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                return stack[stack.index(n):] + [n]
            if n not in state and (found := visit(n)):
                return found
        stack.pop()
        state[m] = 2
        return []

    for m in sorted(graph):
        if m not in state and (found := visit(m)):
            return found
    return []


def test_the_check_finds_a_circle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) == []


def test_nic_modules_import_each_other_without_a_circle():
    graph = _graph("nic")
    assert "nic.allreduce" in graph and "nic.nic_config" in graph["nic.allreduce"]
    assert _cycle(graph) == []
