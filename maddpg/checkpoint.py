"""Checkpoints: one ``.npz`` per save, written whole or not at all.

The file is written to a temporary file of a unique name in the same directory, flushed to
disk and renamed over the old one (:func:`noc.files.replace_atomically`), so an interrupted
save (Ctrl-C, a crash) leaves the previous checkpoint intact and two saves into one folder
never share a temporary file. Reading checks the format tag and every expected key; a file that
is not a readable npz, lacks a key or was written for another configuration raises
:class:`CheckpointError` naming the file and the problem.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np

from noc.errors import HwModelsError
from noc.files import replace_atomically

FORMAT = "hw-models/maddpg-checkpoint/1"


class CheckpointError(HwModelsError):
    """A checkpoint that is missing, corrupt, or does not match the run resuming it."""


def save_npz_atomic(path: str | Path, arrays: dict[str, np.ndarray], meta: dict) -> Path:
    """Write ``arrays`` plus a JSON ``meta`` (and the format tag) to ``path`` atomically."""
    payload = dict(arrays)
    payload["__meta__"] = np.frombuffer(json.dumps({"format": FORMAT, **meta}, sort_keys=True).encode(), np.uint8)

    def write(tmp: Path) -> None:
        with tmp.open("wb") as f:
            np.savez(f, **payload)

    return replace_atomically(path, write, durable=True)


def load_npz(path: str | Path, required: list[str] | None = None) -> tuple[dict[str, np.ndarray], dict]:
    """Read a checkpoint written by :func:`save_npz_atomic`; return ``(arrays, meta)``."""
    p = Path(path)
    if not p.exists():
        raise CheckpointError(f"{p}: no checkpoint to resume from (train without --resume first)")
    try:
        with np.load(p, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        meta = json.loads(bytes(arrays.pop("__meta__")).decode())
    except (zipfile.BadZipFile, OSError, ValueError, KeyError, EOFError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"{p}: corrupt checkpoint ({type(exc).__name__}: {exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CheckpointError(f"{p}: not a MADDPG checkpoint (format {meta.get('format') if isinstance(meta, dict) else None!r}, expected {FORMAT!r})")
    missing = [k for k in (required or []) if k not in arrays]
    if missing:
        raise CheckpointError(f"{p}: corrupt checkpoint, missing array(s) {', '.join(missing[:5])}")
    return arrays, meta
