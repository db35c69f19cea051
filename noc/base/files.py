"""Output files written whole or not at all.

:func:`replace_atomically` is the one way every package of ours replaces a file: the new
content goes to a temporary file of a unique name in the target's directory, which is then
renamed over the target. It lives in ``noc.base``, the floor of the import graph, so
``noc``, ``maddpg`` (checkpoints) and ``hw_models`` (CSV, JSON, figures; re-exported as
``hw_models.store.replace_atomically``) share it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path
from typing import Callable


def replace_atomically(path: str | Path, write: Callable[[Path], None], durable: bool = False) -> Path:
    """Write file ``path`` whole or not at all: ``write(tmp)`` fills a new temporary file of a
    unique name (``.<name>.<pid>.<random>.tmp``) in ``path``'s directory, which is then
    renamed over ``path``. Concurrent writers of one path each use their own temporary
    file, and the last rename wins; on any error (or Ctrl-C) the temporary file is removed
    and ``path`` is left as it was. ``durable``: flush the temporary file to disk before the
    rename (for a file that must survive a power cut, e.g. a checkpoint)."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    while True:
        tmp = out.with_name(f".{out.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))  # the umask applies, as to any output
            break
        except FileExistsError:  # pragma: no cover - 32 random bits collided
            continue
    try:
        write(tmp)
        if durable:
            fd = os.open(tmp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        os.replace(tmp, out)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    return out


def why_missing(path: str | Path, default: str = "no such file") -> str:
    """Why ``path`` does not name a file that exists, in words for an error message: a
    symbolic link loop, a link to nothing, a file where a directory is on the way, else
    ``default``."""
    p = Path(path)
    try:
        p.stat()
    except OSError as exc:
        import errno  # noqa: PLC0415

        if exc.errno == errno.ELOOP:
            return "is a symbolic link loop"
        if exc.errno == errno.ENOTDIR:
            return blocked_by_a_file(p) or default
        if p.is_symlink():
            return f"is a symbolic link to {os.readlink(p)}, which does not exist"
        return default
    return default


def blocked_by_a_file(path: str | Path) -> str | None:
    """``'X is a file, not a directory'`` when an ancestor X of ``path`` is a file (None otherwise)."""
    for parent in Path(path).parents:
        if parent.exists():
            return None if parent.is_dir() else f"{parent} is a file, not a directory"
    return None
