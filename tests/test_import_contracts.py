"""The import contracts of docs/architecture.md (``[tool.importlinter]`` in pyproject.toml),
checked with import-linter on the source, and shown to fail on deliberately wrong imports."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("noc", "nic", "maddpg", "hw_models")
LINT = Path(sys.executable).with_name("lint-imports")


def _lint(tree: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(tree))
    return subprocess.run([str(LINT), str(tree / "pyproject.toml"), "--no-cache"], cwd=tree, env=env,
                          capture_output=True, text=True)


def test_the_source_keeps_every_contract():
    out = _lint(ROOT)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "broken" not in out.stdout.split("Contracts:")[-1].replace("0 broken", "")


def test_the_command_contract_names_every_command_module():
    import tomllib

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (commands,) = [c for c in contracts if c["id"] == "commands"]
    on_disk = {f"hw_models.cli.{f.stem}" for f in (ROOT / "hw_models" / "cli").glob("*_cmd.py")}
    assert set(commands["modules"]) == on_disk


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    dst = tmp_path_factory.mktemp("tree")
    for pkg in PACKAGES:
        shutil.copytree(ROOT / pkg, dst / pkg, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copy(ROOT / "pyproject.toml", dst / "pyproject.toml")
    return dst


# (file to edit, the import it gains, the contract that must break)
WRONG = [
    ("noc/topology.py", "import nic.scheduler", "Layers"),
    ("nic/scheduler.py", "import maddpg", "Layers"),
    ("maddpg/__init__.py", "import hw_models.config", "Layers"),
    ("noc/base/units.py", "import noc.topology", "noc.base, the floor"),
    ("hw_models/cli/rtl_cmd.py", "import hw_models.cli.schedule_cmd", "No command module imports another"),
    ("noc/topology.py", "import noc.routing", "No import circles"),
]


@pytest.mark.parametrize("path, line, contract", WRONG, ids=[f"{p}:{line.split()[-1]}" for p, line, _ in WRONG])
def test_a_wrong_import_breaks_its_contract(tree, path, line, contract):
    target = tree / path
    original = target.read_text()
    target.write_text(original + f"\n{line}  # deliberately wrong\n")
    try:
        out = _lint(tree)
    finally:
        target.write_text(original)
    assert out.returncode == 1, out.stdout[-3000:] + out.stderr[-2000:]
    broken = [ln for ln in out.stdout.splitlines() if ln.rstrip().endswith("BROKEN")]
    assert any(ln.startswith(contract) for ln in broken), (contract, broken)
