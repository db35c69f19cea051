"""Numba's on-disk cache, keyed by the source of every package of ours.

Numba invalidates a cached kernel only when *its own* file changes; a kernel that inlines
or calls a kernel from another module (the all-reduce co-simulation calls ``noc.flit``'s
``step``) would otherwise keep running stale machine code after that other module was
edited. So, unless the user chose a cache directory (``NUMBA_CACHE_DIR``), the cache lives
in ``~/.cache/hw-models/numba/<hash of the sources of noc, nic, maddpg, hw_models>``: any
edit starts a fresh cache. Must run before numba is imported (``noc/__init__.py`` does).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

PACKAGES = ("noc", "nic", "maddpg", "hw_models")


def source_hash(root: Path) -> str:
    h = hashlib.sha1()
    for pkg in PACKAGES:
        for f in sorted((root / pkg).rglob("*.py")):
            h.update(str(f.relative_to(root)).encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def configure() -> None:
    if "NUMBA_CACHE_DIR" in os.environ:
        return
    root = Path(__file__).resolve().parent.parent
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "hw-models" / "numba"
    os.environ["NUMBA_CACHE_DIR"] = str(base / source_hash(root))
