"""Which code produced a result: :func:`code_version`, the string every store record keeps.

``hw-models VERSION, sources DIGEST`` everywhere, plus ``, git DESCRIBE`` in a git checkout.
DIGEST hashes the files an installed copy is made of (the ``.py`` files of ``hw_models``,
``nic``, ``noc`` and ``maddpg``, the presets and the Verilog), each under the name it has in
the wheel, so a checkout and the wheel built from it give the same digest, and an installed
copy is identified without git. Provenance only: result keys never contain it.
"""

from __future__ import annotations

import hashlib
import subprocess
from functools import cache
from pathlib import Path

PACKAGES = ("hw_models", "maddpg", "nic", "noc")
#: A wheel's Verilog (setup.py ships rtl/*.v there); a checkout's rtl/ is hashed under this name.
VERILOG_AS = "hw_models/verilog"


def shipped_files(root: Path, rtl_dir: Path) -> dict[str, Path]:
    """The files of an installed copy: name inside the wheel (POSIX, relative to ``root``) -> file."""
    files: dict[str, Path] = {}
    for pkg in PACKAGES:
        for f in (root / pkg).rglob("*.py"):
            files[f.relative_to(root).as_posix()] = f
    for f in (root / "hw_models" / "presets").glob("*.toml"):
        files[f.relative_to(root).as_posix()] = f
    for f in rtl_dir.glob("*.v"):
        files[f"{VERILOG_AS}/{f.name}"] = f
    return files


def source_digest(root: Path, rtl_dir: Path) -> str:
    """SHA-256 (first 12 hex digits) over the sorted names and contents of :func:`shipped_files`."""
    h = hashlib.sha256()
    for name, f in sorted(shipped_files(root, rtl_dir).items()):
        data = f.read_bytes()
        h.update(f"{name}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()[:12]


def _git_describe(root: Path) -> str | None:
    try:
        p = subprocess.run(["git", "describe", "--always", "--dirty", "--tags"], cwd=root, capture_output=True,
                           text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return p.stdout.strip() if p.returncode == 0 and p.stdout.strip() else None


@cache
def code_version() -> str:
    """``hw-models VERSION, sources DIGEST`` (and ``, git DESCRIBE`` in a git checkout)."""
    from hw_models import __version__
    from hw_models.toolchain import IN_CHECKOUT, REPO_ROOT, RTL_DIR

    out = f"hw-models {__version__}, sources {source_digest(REPO_ROOT, RTL_DIR)}"
    if IN_CHECKOUT and (REPO_ROOT / ".git").exists():
        described = _git_describe(REPO_ROOT)
        if described:
            out += f", git {described}"
    return out
