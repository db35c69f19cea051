"""The import rules of shared/ARCHITECTURE.md, checked on the source: arrows only point down."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OURS = {"noc", "nic", "maddpg", "hw_models"}
FORBIDDEN = {
    "noc": {"nic", "maddpg", "hw_models"},
    "nic": {"maddpg", "hw_models"},
    "maddpg": {"nic", "hw_models"},
    "hw_models": set(),
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found & OURS


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_only_lower_layers(package):
    files = sorted((ROOT / package).rglob("*.py"))
    assert files, f"package {package} has no modules"
    bad = {str(f.relative_to(ROOT)): sorted(_imports(f) & FORBIDDEN[package]) for f in files}
    bad = {f: mods for f, mods in bad.items() if mods}
    assert not bad, f"{package} imports a higher or sibling layer: {bad}"
