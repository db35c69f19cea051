"""Output files of the commands, written so that no run breaks or silently replaces another:
the output directory checked before the work (:func:`check_output_dir`), CSV files written
whole under a unique temporary name and renamed over the target
(:func:`write_csv_atomic`, :func:`replace_atomically` from :mod:`noc.base.files`), the
check whether a file about to be replaced held other rows (:func:`csv_holds_other_rows`)
and a lock on the output directory for the compare-and-replace (:func:`locked_directory`).

Every command's runs are points in the sweep store of its output directory
(:data:`STORE_NAME`, :mod:`hw_models.sweep.store`); the JSONL result stores of the earlier
releases are read only by ``hw-models sweep import-jsonl`` (:mod:`hw_models.sweep.jsonl`).
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import tempfile
from pathlib import Path
from typing import Iterable, Iterator

from noc.base.errors import HwModelsError
from noc.base.files import blocked_by_a_file, why_missing
from noc.base.files import replace_atomically  # re-exported: hw_models.store.replace_atomically

try:  # POSIX: read-modify-write of outputs takes a lock on the output directory
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None

# The sweep store (hw_models.sweep.store) an experiment command keeps in its output directory:
# every point it ran, resumable; a re-run reuses them.
STORE_NAME = "runs.sqlite"

def check_output_dir(path: str | Path, named: str = "", files: Iterable[str] = ()) -> Path:
    """Make output directory ``path`` and check that files can be written in it and that
    none of ``files`` is a directory there. Errors name the directory as ``named`` (the flag
    or config key it came from, e.g. ``--out``). Call it before long work, so a bad output
    path fails at once."""
    p = Path(path)
    what = f"{named} {p}" if named else str(p)
    if p.exists() and not p.is_dir():
        raise HwModelsError(f"{what}: cannot make the output directory (a file of that name exists)")
    if p.is_symlink() and not p.exists():
        raise HwModelsError(f"{what}: cannot make the output directory (it {why_missing(p)})")
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise HwModelsError(f"{what}: cannot make the output directory "
                            f"({blocked_by_a_file(p) or exc.strerror or exc})") from None
    try:
        with tempfile.TemporaryFile(dir=p):
            pass
    except OSError as exc:
        raise HwModelsError(f"{what}: cannot write in the output directory ({exc.strerror or exc})") from None
    for name in files:
        if (p / name).is_dir():
            raise HwModelsError(f"{what}: {name} there is a directory, where a result file is to be written; move it "
                                "away or choose another output directory")
    return p


def output_file(path: str | Path, named: str = "") -> tuple[Path, str]:
    """(``path``, what errors call it: ``named`` and the path) for a file to be written; a
    directory there is refused."""
    out = Path(path)
    what = f"{named} {out}" if named else str(out)
    if out.is_dir():
        raise HwModelsError(f"{what}: is a directory; give a file name")
    return out, what


def check_output_file(path: str | Path, named: str = "") -> Path:
    """File ``path`` can be written: it is not a directory, and its directory can be made and
    written in (errors name it as ``named``, e.g. ``--out``)."""
    out, what = output_file(path, named)
    if out.exists() and not os.access(out, os.W_OK):
        raise HwModelsError(f"{what}: the file exists and cannot be written")
    check_output_dir(out.parent, f"{named} {out}: its directory" if named else f"{out}: its directory")
    return out


def check_new_file(path: Path | None, flag: str) -> None:
    """A file a command writes new, never over another (``--trace``, ``--gantt``): ``path``
    (None: not asked for) is neither a directory nor an existing file; errors name ``flag``."""
    if path is not None and (path.exists() or path.is_symlink()):
        raise HwModelsError(f"{flag} {path}: {'is a directory' if path.is_dir() else 'the file exists'}; give a new "
                            "file name")


def csv_text(rows: Iterable[dict]) -> str:
    """The CSV :func:`write_csv_atomic` writes for ``rows``: one column per key, in order of
    first appearance."""
    rows = list(rows)
    buf = io.StringIO(newline="")
    if rows:
        fields = list(rows[0].keys())
        for r in rows[1:]:
            fields += [k for k in r if k not in fields]
        w = csv.DictWriter(buf, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    return buf.getvalue()


def csv_holds_other_rows(path: str | Path, rows: Iterable[dict]) -> bool:
    """Whether a file ``path`` exists whose content is not the CSV of ``rows`` (another run's
    output, which writing ``rows`` would replace). Call it under the lock that guards the
    writers of ``path`` (:func:`locked_directory`)."""
    p = Path(path)
    try:
        before = p.read_bytes() if p.is_file() else None
    except OSError:
        return False
    return before is not None and before != csv_text(rows).encode("utf-8")


@contextlib.contextmanager
def locked_directory(path: str | Path) -> Iterator[None]:
    """Hold an exclusive lock on directory ``path`` (where the platform has ``fcntl``): for a
    writer that compares an output file with what it is about to write and then replaces it,
    without another process doing the same in between."""
    if fcntl is None:  # pragma: no cover - not POSIX
        yield
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def write_csv_atomic(path: str | Path, rows: Iterable[dict]) -> Path:
    out = check_output_file(path)
    text = csv_text(rows)
    return replace_atomically(out, lambda tmp: tmp.write_text(text, encoding="utf-8", newline=""))
