"""The Numba cache directory is keyed by the kernels' sources only (noc/base/numba_cache.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = ("noc", "nic", "maddpg", "hw_models")


def _copy_tree(dst: Path) -> None:
    for pkg in PACKAGES:
        shutil.copytree(ROOT / pkg, dst / pkg, ignore=shutil.ignore_patterns("__pycache__"))


def _cache_dir_of(tree: Path, cache_home: Path) -> str:
    """The NUMBA_CACHE_DIR that importing the tree's ``hw_models`` sets."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update(PYTHONPATH=str(tree), XDG_CACHE_HOME=str(cache_home))
    out = subprocess.run([sys.executable, "-c", "import hw_models, os, noc; print(noc.__file__); print(os.environ['NUMBA_CACHE_DIR'])"],
                         cwd=tree, env=env, capture_output=True, text=True, check=True).stdout.split("\n")
    assert Path(out[0]).resolve().is_relative_to(tree.resolve()), out  # the copy was imported, not the checkout
    return out[1]


def _append(path: Path, text: str) -> None:
    path.write_text(path.read_text() + text)


def test_editing_hw_models_keeps_the_cache_and_editing_a_kernel_package_moves_it(tmp_path):
    tree = tmp_path / "tree"
    _copy_tree(tree)
    cache_home = tmp_path / "cache"
    before = _cache_dir_of(tree, cache_home)
    assert Path(before).parent == cache_home / "hw-models" / "numba"

    _append(tree / "hw_models" / "cli" / "__init__.py", "\n# a contributor's edit of a help string\n")
    (tree / "hw_models" / "new_module.py").write_text("X = 1\n")
    assert _cache_dir_of(tree, cache_home) == before

    for pkg, module in (("nic", "message_sim.py"), ("noc", "flit.py"), ("maddpg", "__init__.py")):
        edited = tmp_path / f"tree_{pkg}"
        shutil.copytree(tree, edited)
        _append(edited / pkg / module, "\n# an edit that may change a kernel\n")
        assert _cache_dir_of(edited, cache_home) != before, pkg


def test_a_chosen_cache_directory_is_kept(tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "mine"))
    out = subprocess.run([sys.executable, "-c", "import noc, os; print(os.environ['NUMBA_CACHE_DIR'])"],
                         env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert out == str(tmp_path / "mine")
