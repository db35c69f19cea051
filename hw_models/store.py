"""Resumable result store: one JSON line per finished run, appended and flushed at once.

An interrupted sweep keeps every run that finished. Every record carries ``store_format``
(:data:`STORE_FORMAT`) and a ``sha256`` checksum: the SHA-256 of the record's canonical
JSON (keys sorted, no spaces, ``sha256`` itself left out), so a hand-edited value shows.

Reading skips a **damaged** line — not UTF-8 text, not JSON (e.g. a torn last line: the
process died mid-write), not a record (a JSON object with a string ``key``), or a record
whose checksum does not match — moves it, bytes as found, to ``<store>.damaged`` (the
store is rewritten without it, under the lock) and warns on stderr, counting the lines and
saying why. A record of **another store format** is not reused either and is left in
place: one without a checksum (written before store format 2) cannot be checked, one of a
later format is for a later version of this code; the warning counts those that no valid
record of the same key supersedes. A skipped record's run is simply missing, so a sweep
runs it again and appends a new record. When a key occurs more than once, the last valid
record counts (a ``--fresh`` re-run appends and reads nothing). ``done_keys()`` tells a
resumed sweep what to skip.

Appends are single ``write`` calls on a file opened for appending, under an exclusive
lock where the platform has ``fcntl``, so several processes may append to one store at
once; a record after a torn line starts on a line of its own. CSV exports and figures are
written to a temporary file of a unique name in the same directory and renamed over the
target (:func:`replace_atomically`, from :mod:`noc.base.files`), so they are whole or absent, and concurrent writers
of one file never trip over each other's temporary file (the last rename wins).
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator

from noc.base.errors import HwModelsError
from noc.base.files import replace_atomically  # re-exported: hw_models.store.replace_atomically

try:  # POSIX: appends and read-modify-write of outputs take a lock on the store file
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None

# The sweep store (hw_models.sweep.store) an experiment command keeps in its output directory:
# every point it ran, resumable; a re-run reuses them.
STORE_NAME = "runs.sqlite"

# Version of the record layout. 2: every record carries store_format and a sha256 checksum.
# Records without them (format 1) are not reused: nothing shows whether they were edited.
STORE_FORMAT = 2
CHECKSUM_FIELD = "sha256"
FORMAT_FIELD = "store_format"
_STORE_FIELDS = (CHECKSUM_FIELD, FORMAT_FIELD)


def check_output_dir(path: str | Path, named: str = "", files: Iterable[str] = ()) -> Path:
    """Make output directory ``path`` and check that files can be written in it and that
    none of ``files`` is a directory there. Errors name the directory as ``named`` (the flag
    or config key it came from, e.g. ``--out``). Call it before long work, so a bad output
    path fails at once."""
    p = Path(path)
    what = f"{named} {p}" if named else str(p)
    if p.exists() and not p.is_dir():
        raise HwModelsError(f"{what}: cannot make the output directory (a file of that name exists)")
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise HwModelsError(f"{what}: cannot make the output directory ({exc.strerror or exc})") from None
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


def check_output_file(path: str | Path, named: str = "") -> Path:
    """File ``path`` can be written: it is not a directory, and its directory can be made and
    written in (errors name it as ``named``, e.g. ``--out``)."""
    out = Path(path)
    what = f"{named} {out}" if named else str(out)
    if out.is_dir():
        raise HwModelsError(f"{what}: is a directory; give a file name")
    if out.exists() and not os.access(out, os.W_OK):
        raise HwModelsError(f"{what}: the file exists and cannot be written")
    check_output_dir(out.parent, f"{named} {out}: its directory" if named else f"{out}: its directory")
    return out


def checksum(record: dict) -> str:
    """SHA-256 (hex) of ``record``'s canonical JSON, its ``sha256`` field left out."""
    body = {k: v for k, v in record.items() if k != CHECKSUM_FIELD}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def _warn_stderr(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr, flush=True)  # sys.stderr looked up now: a progress bar may wrap it


class ResultStore:
    """A JSONL file of finished runs, each under a string key (module docstring).
    ``warn(message)`` reports what reading skipped (default: ``warning: ...`` on stderr)."""

    def __init__(self, path: str | Path, warn: Callable[[str], None] | None = None) -> None:
        self.path = check_output_file(path)
        self.warn = _warn_stderr if warn is None else warn
        self._reported_other: set[str] = set()

    @property
    def damaged_path(self) -> Path:
        """Where damaged lines are moved: ``<store>.damaged`` (appended, bytes as found)."""
        return self.path.with_name(self.path.name + ".damaged")

    def records(self) -> list[dict]:
        """The valid records in file order, as ``{"key": ..., **record}`` (the store's own
        fields left out). Damaged lines are moved to :attr:`damaged_path` and, like records
        of another store format that no valid record supersedes, reported through ``warn``."""
        if not self.path.exists():
            return []
        with self.path.open("rb") as f:
            scan = _scan(f)
        moved = ""
        if scan.damaged:  # again under the lock, where no append is half-way: then move them aside
            scan, moved = self._set_aside_damaged()
        if scan.damaged:
            reasons: dict[str, list[int]] = {}
            for n, why, _ in scan.damaged:
                reasons.setdefault(why, []).append(n)
            detail = "; ".join(f"{why}: line{'s' if len(ns) > 1 else ''} {_line_list(ns)}" for why, ns in reasons.items())
            n = len(scan.damaged)
            self.warn(f"{self.path}: skipped {n} damaged line{'s' if n != 1 else ''} ({detail}); {moved}; the runs they held "
                      "are run again when needed")
        valid = {r["key"] for r in scan.records}
        other = {key: why for key, why in scan.other_format.items() if key not in valid}
        if other and not set(other) <= self._reported_other:
            self._reported_other.update(other)
            whys = sorted(set(other.values()))
            self.warn(f"{self.path}: {len(other)} record{'s' if len(other) != 1 else ''} of another store format "
                      f"({'; '.join(whys)}) not reused (their figures cannot be checked); those runs are run again when "
                      "needed and stored with a checksum")
        return scan.records

    def _set_aside_damaged(self) -> tuple["_Scan", str]:
        """Under the lock: read the store again, append its damaged lines to
        :attr:`damaged_path` and rewrite the store without them. Returns the scan and what
        was done, for the warning."""
        with _locked_file(self.path) as fd:
            os.lseek(fd, 0, os.SEEK_SET)
            chunks = []
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
            scan = _scan(_lines(b"".join(chunks)))
            if not scan.damaged:
                return scan, ""
            bad = {n for n, _, _ in scan.damaged}
            try:
                with self.damaged_path.open("ab") as f:
                    f.write(b"".join(raw if raw.endswith(b"\n") else raw + b"\n" for _, _, raw in scan.damaged))
                    f.flush()
                    os.fsync(f.fileno())
                kept = b"".join(raw for n, raw in scan.lines if n not in bad and raw.strip())
                replace_atomically(self.path, lambda tmp: tmp.write_bytes(kept))
            except OSError as exc:
                return scan, f"left in place (could not move them to {self.damaged_path}: {exc.strerror or exc})"
            return scan, f"moved to {self.damaged_path}"

    def done_keys(self) -> set[str]:
        return {r["key"] for r in self.records()}

    def append(self, key: str, record: dict) -> None:
        """Add one finished run (a later record of the same key supersedes an earlier one)."""
        bad = [k for k in ("key", *_STORE_FIELDS) if k in record]
        if bad:
            raise ValueError(f"a stored record may not have a field {bad[0]!r}: the store sets it")
        full = json.loads(json.dumps({"key": key, **record, FORMAT_FIELD: STORE_FORMAT}))  # as it will read back
        full[CHECKSUM_FIELD] = checksum(full)
        data = (json.dumps(full, sort_keys=True, ensure_ascii=True) + "\n").encode("ascii")
        with _locked_file(self.path) as fd:
            # after a torn write the file ends mid-line: start a new line, or this record would be lost with it
            size = os.fstat(fd).st_size
            if size > 0 and os.pread(fd, 1, size - 1) != b"\n":
                data = b"\n" + data
            view = memoryview(data)
            while view:  # one write in practice: a regular file takes it whole
                view = view[os.write(fd, view):]
            os.fsync(fd)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the store's exclusive lock (where the platform has ``fcntl``), e.g. to compare
        and replace the files derived from it without another process doing the same in
        between. Appends wait for it."""
        with _locked_file(self.path):
            yield


@dataclass
class _Scan:
    records: list[dict] = field(default_factory=list)  # valid, store fields left out
    damaged: list[tuple[int, str, bytes]] = field(default_factory=list)  # (line number, why, the line)
    other_format: dict[str, str] = field(default_factory=dict)  # key -> which format, of records not reused
    lines: list[tuple[int, bytes]] = field(default_factory=list)  # every line, numbered from 1


def _lines(data: bytes) -> list[bytes]:
    """``data`` cut after each newline (only b"\\n": a damaged line may hold other control bytes)."""
    parts = data.split(b"\n")
    out = [p + b"\n" for p in parts[:-1]]
    return out + [parts[-1]] if parts[-1] else out


def _scan(lines: Iterable[bytes]) -> _Scan:
    scan = _Scan()
    for lineno, raw in enumerate(lines, 1):
        scan.lines.append((lineno, raw))
        if not raw.strip():
            continue
        record, why = _parse(raw)
        if record is not None:
            scan.records.append(record)
        elif isinstance(why, tuple):
            scan.other_format[why[0]] = why[1]
        else:
            scan.damaged.append((lineno, why, raw))
    return scan


def _parse(raw: bytes) -> tuple[dict | None, str | tuple[str, str]]:
    """(record without the store's fields, "") or (None, why the line is damaged), or for a
    well-formed record of another store format (None, (its key, which format))."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None, "not UTF-8 text"
    try:
        record = json.loads(text)
    except (ValueError, RecursionError):  # json.JSONDecodeError, a number too long, nesting too deep
        return None, "not JSON" if raw.endswith(b"\n") else "not JSON (a torn write)"
    if not isinstance(record, dict) or not isinstance(record.get("key"), str):
        return None, "not a record"
    if CHECKSUM_FIELD not in record and FORMAT_FIELD not in record:
        return None, (record["key"], "without a checksum: written before store format 2")
    fmt = record.get(FORMAT_FIELD)
    if isinstance(fmt, int) and not isinstance(fmt, bool) and fmt > STORE_FORMAT:  # a later version's: left alone
        return None, (record["key"], f"store format {fmt}, newer than {STORE_FORMAT}")
    if fmt != STORE_FORMAT:
        return None, "no valid store format"
    if record.get(CHECKSUM_FIELD) != checksum(record):
        return None, "checksum mismatch (edited or damaged)"
    return {k: v for k, v in record.items() if k not in _STORE_FIELDS}, ""


def _line_list(numbers: list[int], most: int = 8) -> str:
    shown = ", ".join(str(n) for n in numbers[:most])
    return shown + (f" and {len(numbers) - most} more" if len(numbers) > most else "")


@contextlib.contextmanager
def _locked_file(path: Path) -> Iterator[int]:
    """An fd of ``path`` (created if missing, opened for appending) under an exclusive lock.
    A rewrite renames a new file over ``path``, so after waiting for the lock the fd is
    checked to still be ``path``'s file, else it is opened again."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o666)
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            st = os.fstat(fd)
            try:
                now = os.stat(path)
            except FileNotFoundError:
                now = None
            if now is not None and (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino):
                break
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # closing releases the lock
    try:
        yield fd
    finally:
        os.close(fd)


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
    writers of ``path`` (:meth:`ResultStore.locked`, :func:`locked_directory`)."""
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
