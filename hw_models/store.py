"""Resumable result store: one JSON line per finished run, appended and flushed at once.

An interrupted sweep keeps every run that finished; a torn last line (the process died
mid-write), or any line that is not a record (a JSON object with a ``key``), is ignored on
reading, and the next record starts on a line of its own. When a key occurs more than once,
the last record counts (a ``--fresh`` re-run appends).
``done_keys()`` tells a resumed sweep what to skip.
CSV exports are written to a temporary file and renamed, so they are whole or absent.
"""

from __future__ import annotations

import csv
import json
import os
import tempfile
from pathlib import Path
from typing import Iterable

from noc.errors import HwModelsError


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


class ResultStore:
    def __init__(self, path: str | Path) -> None:
        self.path = check_output_file(path)

    def records(self) -> list[dict]:
        if not self.path.exists():
            return []
        out = []
        with self.path.open() as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a torn line from an interrupted write
                if isinstance(record, dict) and isinstance(record.get("key"), str):
                    out.append(record)  # anything else is not a record of this store
        return out

    def done_keys(self) -> set[str]:
        return {r["key"] for r in self.records() if "key" in r}

    def append(self, key: str, record: dict) -> None:
        """Add one finished run (a later record of the same key supersedes an earlier one)."""
        line = json.dumps({"key": key, **record}, sort_keys=True)
        # after a torn write the file ends mid-line: start a new line, or this record would be lost with it
        torn = False
        if self.path.exists() and self.path.stat().st_size > 0:
            with self.path.open("rb") as f:
                f.seek(-1, os.SEEK_END)
                torn = f.read(1) != b"\n"
        with self.path.open("a") as f:
            f.write(("\n" if torn else "") + line + "\n")
            f.flush()
            os.fsync(f.fileno())


def write_csv_atomic(path: str | Path, rows: Iterable[dict]) -> Path:
    rows = list(rows)
    out = check_output_file(path)
    tmp = out.with_suffix(out.suffix + ".tmp")
    with tmp.open("w", newline="") as f:
        if rows:
            fields = list(rows[0].keys())
            for r in rows[1:]:
                fields += [k for k in r if k not in fields]
            w = csv.DictWriter(f, fieldnames=fields)
            w.writeheader()
            w.writerows(rows)
    os.replace(tmp, out)
    return out
