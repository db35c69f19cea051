"""Checkpoints: a small ``.npz`` of the learner's state plus the replay in append-only chunks.

``checkpoint.npz`` holds every network, the Adam moments, the generator state, the reward
and log history and the list of replay chunks it needs; the replay's transitions live in
``checkpoint.replay/replay_<first>_<end>.npz`` files (transitions numbered in the order
they were added, ``first`` included, ``end`` not). A save writes only the transitions added
since the previous save to the same path, as one new chunk, then the small file, so its cost
is that of the networks plus the new transitions, not of the whole buffer; chunks whose
transitions have all left the ring buffer are deleted after the new checkpoint is in place.

Every file is written to a temporary file of a unique name in its directory, flushed to
disk and renamed over the old one (:func:`noc.base.files.replace_atomically`), so an interrupted
save (Ctrl-C, a crash) leaves the previous checkpoint and the chunks it lists intact. Reading
checks the format tag and every expected key; a file that is not a readable npz, lacks a key,
lists a missing chunk or was written for another configuration raises
:class:`CheckpointError` naming the file and the problem. A file also carries a SHA-256 over
its arrays (names, dtypes, shapes and bytes), checked when read, so a flipped byte inside an
array is found even where the zip container stays readable; files written before the digest
existed are read without it. The meta data's fields are type-checked, and the networks and
Adam moments must be finite: a damaged field is named. Format 1 (the whole replay inside the
one file) is still read.
"""

from __future__ import annotations

import hashlib
import json
import re
import zipfile
from pathlib import Path
from typing import Any, Optional

import numpy as np
from pydantic import BaseModel, ConfigDict, StrictInt, ValidationError

from noc.base.errors import HwModelsError
from noc.base.files import replace_atomically, why_missing

FORMAT = "hw-models/maddpg-checkpoint/2"
FORMATS_READ = ("hw-models/maddpg-checkpoint/1", FORMAT)
CHUNK_FORMAT = "hw-models/maddpg-replay-chunk/1"
_CHUNK = re.compile(r"^replay_(\d{12})_(\d{12})\.npz$")


class CheckpointError(HwModelsError):
    """A checkpoint that is missing, corrupt, or does not match the run resuming it."""


class _Replay(BaseModel):
    model_config = ConfigDict(extra="allow")
    pos: Optional[StrictInt] = None
    size: Optional[StrictInt] = None
    chunks: Optional[list[tuple[StrictInt, StrictInt]]] = None


class CheckpointMeta(BaseModel):
    """The typed fields of a checkpoint's meta data (every field optional: what a format
    lacks the loader reports as missing; what is present must have its type)."""

    model_config = ConfigDict(extra="allow")
    format: str
    sha256: Optional[str] = None
    config: Optional[dict[str, Any]] = None
    episode: Optional[StrictInt] = None
    env_steps: Optional[StrictInt] = None
    updates: Optional[StrictInt] = None
    obs_dims: Optional[list[StrictInt]] = None
    act_dims: Optional[list[StrictInt]] = None
    adam_steps: Optional[list[tuple[StrictInt, StrictInt]]] = None
    replay: Optional[_Replay] = None
    log_rows: Optional[list[dict[str, Any]]] = None
    log_episode0: Optional[StrictInt] = None
    start: Optional[StrictInt] = None
    stop: Optional[StrictInt] = None


_NON_NEGATIVE = ("episode", "env_steps", "updates", "log_episode0", "start", "stop")
#: arrays that must hold finite numbers: the networks and their Adam moments
_MUST_BE_FINITE = re.compile(r"^agent\d+/")


def arrays_sha256(arrays: dict[str, np.ndarray]) -> str:
    """SHA-256 over ``arrays`` in name order: each name, dtype, shape and raw bytes."""
    h = hashlib.sha256()
    for k in sorted(arrays):
        a = np.ascontiguousarray(arrays[k])
        h.update(f"{k}\0{a.dtype.str}\0{a.shape}\0".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _check_meta_types(p: Path, meta: dict) -> None:
    try:
        m = CheckpointMeta.model_validate(meta)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(x) for x in err["loc"])
        raise CheckpointError(f"{p}: corrupt checkpoint, meta field {field!r} is {err.get('input')!r} "
                              f"({err['msg'].lower()})") from None
    for k in _NON_NEGATIVE:
        v = getattr(m, k)
        if v is not None and v < 0:
            raise CheckpointError(f"{p}: corrupt checkpoint, meta field {k!r} is {v}; allowed: an integer >= 0")


def _check_arrays(p: Path, arrays: dict[str, np.ndarray], meta: dict) -> None:
    want = meta.get("sha256")
    if want is not None and arrays_sha256(arrays) != want:
        raise CheckpointError(f"{p}: corrupt checkpoint, its arrays do not match the SHA-256 stored with them "
                              f"(the file was changed or damaged after it was written)")
    for k, a in arrays.items():
        if _MUST_BE_FINITE.match(k) and a.dtype.kind == "f" and not np.isfinite(a).all():
            bad = int(np.size(a) - np.count_nonzero(np.isfinite(a)))
            raise CheckpointError(f"{p}: corrupt checkpoint, array {k!r} holds {bad} NaN or infinite value(s); "
                                  f"allowed: finite numbers")


def save_npz_atomic(path: str | Path, arrays: dict[str, np.ndarray], meta: dict, fmt: str = FORMAT) -> Path:
    """Write ``arrays`` plus a JSON ``meta`` (and the format tag) to ``path`` atomically."""
    payload = dict(arrays)
    full = {"format": fmt, **meta, "sha256": arrays_sha256(arrays)}
    payload["__meta__"] = np.frombuffer(json.dumps(full, sort_keys=True).encode(), np.uint8)

    def write(tmp: Path) -> None:
        with tmp.open("wb") as f:
            np.savez(f, **payload)

    return replace_atomically(path, write, durable=True)


def load_npz(path: str | Path, required: list[str] | None = None,
             formats: tuple[str, ...] = FORMATS_READ) -> tuple[dict[str, np.ndarray], dict]:
    """Read a file written by :func:`save_npz_atomic`; return ``(arrays, meta)``."""
    p = Path(path)
    if not p.exists():
        raise CheckpointError(f"{p}: {why_missing(p, 'no checkpoint there')} (maddpg train writes one)")
    if p.is_dir():
        raise CheckpointError(f"{p}: is a directory; give the checkpoint file in it ({p / 'checkpoint.npz'})")
    try:
        with np.load(p, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        meta = json.loads(bytes(arrays.pop("__meta__")).decode())
    except (zipfile.BadZipFile, OSError, ValueError, KeyError, EOFError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"{p}: corrupt checkpoint ({type(exc).__name__}: {exc})") from None
    if not isinstance(meta, dict) or meta.get("format") not in formats:
        got = meta.get("format") if isinstance(meta, dict) else None
        raise CheckpointError(f"{p}: not a MADDPG checkpoint (format {got!r}, expected {' or '.join(map(repr, formats))})")
    missing = [k for k in (required or []) if k not in arrays]
    if missing:
        raise CheckpointError(f"{p}: corrupt checkpoint, missing array(s) {', '.join(missing[:5])}")
    _check_meta_types(p, meta)
    _check_arrays(p, arrays, meta)
    return arrays, meta


def chunk_dir(checkpoint: str | Path) -> Path:
    """Where the replay chunks of ``checkpoint`` live: ``<dir>/<stem>.replay/``."""
    p = Path(checkpoint)
    return p.with_name(p.stem + ".replay")


def chunk_name(start: int, stop: int) -> str:
    return f"replay_{start:012d}_{stop:012d}.npz"


def save_chunk(checkpoint: str | Path, start: int, stop: int, arrays: dict[str, np.ndarray]) -> Path:
    """Transitions ``start .. stop - 1`` of the replay, next to ``checkpoint``."""
    return save_npz_atomic(chunk_dir(checkpoint) / chunk_name(start, stop), arrays, {"start": start, "stop": stop},
                           fmt=CHUNK_FORMAT)


def load_chunk(checkpoint: str | Path, start: int, stop: int) -> dict[str, np.ndarray]:
    p = chunk_dir(checkpoint) / chunk_name(start, stop)
    if not p.exists():
        raise CheckpointError(f"{p}: replay chunk listed by {Path(checkpoint).name} is missing (the checkpoint needs its "
                              f"{chunk_dir(checkpoint).name}/ folder)")
    arrays, meta = load_npz(p, ["oa", "next_o", "rew", "done"], formats=(CHUNK_FORMAT,))
    if meta.get("start") != start or meta.get("stop") != stop or arrays["done"].shape != (stop - start,):
        raise CheckpointError(f"{p}: corrupt replay chunk (holds {meta.get('start')}..{meta.get('stop')}, "
                              f"{arrays['done'].shape[0]} rows; expected {start}..{stop})")
    return arrays


def remove_stale_chunks(checkpoint: str | Path, keep: list[tuple[int, int]]) -> int:
    """Delete the chunk files next to ``checkpoint`` that it does not list; returns how many."""
    d = chunk_dir(checkpoint)
    if not d.is_dir():
        return 0
    wanted = {chunk_name(a, b) for a, b in keep}
    n = 0
    for f in d.iterdir():
        if _CHUNK.match(f.name) and f.name not in wanted:
            f.unlink(missing_ok=True)
            n += 1
    return n
