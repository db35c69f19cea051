"""Numba's on-disk cache, keyed by the sources of the packages that hold kernels.

Numba invalidates a cached kernel only when *its own* file changes; a kernel that inlines
or calls a kernel from another module (the all-reduce co-simulation calls ``noc.flit``'s
``step``) would otherwise keep running stale machine code after that other module was
edited. So, unless the user chose a cache directory (``NUMBA_CACHE_DIR``), the cache lives
in ``~/.cache/hw-models/numba/<hash of the sources of noc, nic and maddpg>``: an edit of any
of them starts a fresh cache. ``hw_models`` holds no kernel and is left out of the hash, so
editing it (a command, a help string, a report) recompiles nothing. Within that directory
Numba keys each kernel by its file's path and contents. Must run before numba is imported
(``noc/base/__init__.py`` does).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

# The packages whose modules define or are inlined into Numba kernels. A package that gains
# a kernel joins this list (docs/architecture.md, "Numba cache").
KERNEL_PACKAGES = ("noc", "nic", "maddpg")


def source_hash(root: Path) -> str:
    """A hash of every ``.py`` file of :data:`KERNEL_PACKAGES` under ``root`` (paths and contents)."""
    h = hashlib.sha1()
    for pkg in KERNEL_PACKAGES:
        for f in sorted((root / pkg).rglob("*.py")):
            h.update(str(f.relative_to(root)).encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def cache_dir(root: Path) -> Path:
    """The cache directory for the sources under ``root``."""
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "hw-models" / "numba"
    return base / source_hash(root)


def configure() -> None:
    """Set ``NUMBA_CACHE_DIR`` to :func:`cache_dir` of our sources unless the user set it."""
    if "NUMBA_CACHE_DIR" in os.environ:
        return
    os.environ["NUMBA_CACHE_DIR"] = str(cache_dir(Path(__file__).resolve().parents[2]))
