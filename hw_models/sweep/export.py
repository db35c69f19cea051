"""A sweep store as a table: CSV (always) and Parquet (with ``pyarrow``).

One row per point; columns ``key, kind, status, error, wall_s, code_version,
finished_utc, origin, worker, model_versions``, then ``config.<key>`` for every key of the
resolved configs (nested keys dotted: ``config.network.topology``) and ``metrics.<name>``
for every metric, in order of first appearance. Lists and tables inside a config are one
JSON text cell. An output file is never replaced silently: an existing one is an error
unless ``overwrite`` is given; the file appears whole or not at all (written under a
temporary name, then linked or renamed into place).
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import secrets
from pathlib import Path
from typing import Callable, Iterable

from hw_models.sweep.store import SweepStore
from noc.base.files import blocked_by_a_file, why_missing
from noc.base.errors import HwModelsError

FIXED_COLUMNS = ("key", "kind", "status", "error", "wall_s", "code_version", "finished_utc", "origin", "worker",
                 "model_versions")


def _flat(prefix: str, data: dict, out: dict) -> None:
    for k, v in data.items():
        if isinstance(v, dict) and v:
            _flat(f"{prefix}{k}.", v, out)
        else:
            out[f"{prefix}{k}"] = json.dumps(v, sort_keys=True) if isinstance(v, (list, dict)) else v


def flat_rows(store: SweepStore, kind: str | None = None, status: str | None = None) -> list[dict]:
    """The store's rows as flat dicts (module docstring), oldest first."""
    rows = []
    for r in store.rows(kind=kind, status=status):
        row = {c: r[c] for c in FIXED_COLUMNS}
        row["model_versions"] = json.dumps(r["model_versions"], sort_keys=True)
        _flat("config.", r["config"], row)
        _flat("metrics.", r["metrics"] or {}, row)
        rows.append(row)
    return rows


def columns(rows: Iterable[dict]) -> list[str]:
    """Every key of ``rows``, in order of first appearance."""
    return list(dict.fromkeys(k for r in rows for k in r))


def csv_text(rows: list[dict]) -> str:
    buf = io.StringIO(newline="")
    if rows:
        w = csv.DictWriter(buf, fieldnames=columns(rows), restval="")
        w.writeheader()
        for r in rows:
            w.writerow({k: "" if v is None else v for k, v in r.items()})
    return buf.getvalue()


def write_new_file(path: str | Path, write: Callable[[Path], None], *, overwrite: bool = False,
                   named: str = "") -> Path:
    """Write file ``path`` whole (``write(tmp)`` fills a temporary file beside it). Without
    ``overwrite`` an existing file is an error naming it as ``named`` (a flag), and the new
    file is linked into place so that it can never replace one that appeared meanwhile."""
    from hw_models.store import output_file

    out, what = output_file(path, named)
    if out.exists() and not overwrite:
        raise HwModelsError(f"{what}: the file exists; give another name, or --overwrite to replace it")
    if out.is_symlink() and not out.exists():
        raise HwModelsError(f"{what}: {why_missing(out)}; give another name")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise HwModelsError(f"{what}: cannot make its directory ({blocked_by_a_file(out) or exc.strerror or exc})") \
            from None
    tmp = out.with_name(f".{out.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        write(tmp)
        if overwrite:
            os.replace(tmp, out)
        else:
            try:
                os.link(tmp, out)  # fails if the file exists: nothing is replaced
            except FileExistsError:
                raise HwModelsError(f"{what}: the file exists; give another name, or --overwrite to replace "
                                    "it") from None
    except OSError as exc:
        raise HwModelsError(f"{what}: cannot write ({exc.strerror or exc})") from None
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    return out


def write_csv(rows: list[dict], path: str | Path, *, overwrite: bool = False, named: str = "--csv") -> Path:
    text = csv_text(rows)
    return write_new_file(path, lambda tmp: tmp.write_text(text, encoding="utf-8", newline=""), overwrite=overwrite,
                          named=named)


def _column_values(values: list) -> list:
    """One Parquet column: kept as they are when they are all of one scalar type (ints
    and floats make floats), else each as JSON text."""
    kinds = {type(v) for v in values if v is not None}
    if kinds <= {bool} or kinds <= {str} or kinds <= {int}:
        return values
    if kinds <= {int, float}:
        return [None if v is None else float(v) for v in values]
    return [None if v is None else (v if isinstance(v, str) else json.dumps(v)) for v in values]


def write_parquet(rows: list[dict], path: str | Path, *, overwrite: bool = False, named: str = "--parquet") -> Path:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise HwModelsError(f"{named} {path}: Parquet needs pyarrow; pip install 'hw-models[parquet]'") from None
    names = columns(rows)
    table = pa.table({c: _column_values([r.get(c) for r in rows]) for c in names})
    return write_new_file(path, lambda tmp: pq.write_table(table, tmp), overwrite=overwrite, named=named)
