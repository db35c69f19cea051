"""The sweep results store: an SQLite database (stdlib ``sqlite3``, WAL mode), one row per
point.

A point's row is keyed by :func:`point_key`, the SHA-256 of the canonical JSON of its kind,
its fully resolved config and the versions of the models it ran, and holds that config,
the metrics (or the error of a point that failed), the wall time, the code version and
where the row came from. A row is written by one ``INSERT`` statement, alone or with
others in one transaction (:meth:`SweepStore.put_many`): a process killed at any moment
(SIGKILL included) leaves every row it committed and no partial one. Several processes may write one store at once (WAL
lets readers go on while one writer writes; a writer waits up to a minute for another's
lock). A finished point is never replaced by a failed one, nor by another finished one
unless asked (``--fresh``).

Durability: ``synchronous = NORMAL`` in WAL mode keeps every committed row through a
crash of the process; a power cut may lose the last rows (the database stays consistent).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

from noc.base.errors import HwModelsError

SCHEMA_NAME = "hw-models sweep store"
SCHEMA_VERSION = 1
BUSY_TIMEOUT_S = 60.0
STATUSES = ("done", "failed")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS points (
    key TEXT PRIMARY KEY,            -- point_key(kind, config, model_versions)
    kind TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('done', 'failed')),
    config TEXT NOT NULL,            -- the fully resolved config, canonical JSON
    model_versions TEXT NOT NULL,    -- JSON
    metrics TEXT,                    -- JSON, when done
    error TEXT,                      -- when failed
    wall_s REAL,                     -- seconds the point ran (NULL for imported records)
    code_version TEXT NOT NULL,
    finished_utc TEXT NOT NULL,      -- ISO 8601
    origin TEXT NOT NULL,            -- 'sweep FILE' or 'jsonl FILE'
    alias TEXT,                      -- an imported record's key in its JSONL store
    worker TEXT NOT NULL DEFAULT '',  -- host:pid that ran it
    CHECK ((status = 'done') = (metrics IS NOT NULL))
);
CREATE INDEX IF NOT EXISTS points_alias ON points (alias) WHERE alias IS NOT NULL;
"""

_COLUMNS = ("key", "kind", "status", "config", "model_versions", "metrics", "error", "wall_s", "code_version",
            "finished_utc", "origin", "alias", "worker")


def canonical_json(data) -> str:
    """JSON with sorted keys and no spaces: the same data, the same text."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def point_key(kind: str, config: dict, model_versions: dict) -> str:
    """The store key of a point: SHA-256 (hex) of its kind, resolved config and model versions."""
    text = canonical_json({"kind": kind, "config": config, "model_versions": model_versions})
    return hashlib.sha256(text.encode("ascii")).hexdigest()


@dataclass(frozen=True)
class PointRecord:
    """One row of the store."""

    key: str
    kind: str
    status: str  # done | failed
    config: dict
    model_versions: dict
    metrics: dict | None
    error: str | None
    wall_s: float | None
    code_version: str
    origin: str
    alias: str | None = None
    worker: str = ""
    finished_utc: str = field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    # the same data as JSON text, when the caller has it already (``canonical_json(config)``,
    # ``json.dumps(metrics, sort_keys=True)``, ``canonical_json(model_versions)``)
    config_json: str | None = None
    metrics_json: str | None = None
    versions_json: str | None = None


class SweepStore:
    """A sweep results store at ``path`` (module docstring); ``create``: make it when missing
    (otherwise a missing store is an error). Errors name the store as ``named`` (a flag)."""

    def __init__(self, path: str | Path, *, create: bool = True, named: str = "") -> None:
        self.path = Path(path)
        what = f"{named} {self.path}" if named else str(self.path)
        self._what = what
        if self.path.is_dir():
            raise HwModelsError(f"{what}: is a directory; give a store file, e.g. results/sweeps/NAME.sqlite")
        if not self.path.exists():
            if not create:
                raise HwModelsError(f"{what}: no such sweep store")
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise HwModelsError(f"{what}: cannot make its directory ({exc.strerror or exc})") from None
        else:
            _check_header(self.path, what)
        try:
            self.db = sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT_S, isolation_level=None)
            self.db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            self._set_up()
        except sqlite3.DatabaseError as exc:
            raise HwModelsError(f"{what}: cannot open the sweep store ({exc})") from None

    def _set_up(self) -> None:
        db = self.db
        for attempt in range(200):  # another process switching a new store to WAL at the same moment
            try:
                mode = db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                break
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or attempt == 199:
                    raise
                time.sleep(0.05)
        if str(mode).lower() != "wal":
            raise HwModelsError(f"{self._what}: SQLite refused WAL mode here (journal mode {mode}); put the store "
                                "on a local file system")
        db.execute("PRAGMA synchronous = NORMAL")
        db.execute("BEGIN IMMEDIATE")
        try:
            tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if tables and "meta" not in tables:
                raise HwModelsError(f"{self._what}: an SQLite database, but not a sweep store (its tables: "
                                    f"{', '.join(sorted(tables))})")
            for statement in _statements():
                db.execute(statement)
            db.execute("INSERT OR IGNORE INTO meta (name, value) VALUES ('schema', ?), ('schema_version', ?)",
                       (SCHEMA_NAME, str(SCHEMA_VERSION)))
            meta = dict(db.execute("SELECT name, value FROM meta"))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        if meta.get("schema") != SCHEMA_NAME:
            raise HwModelsError(f"{self._what}: not a sweep store (its meta table says {meta.get('schema')!r})")
        if meta.get("schema_version") != str(SCHEMA_VERSION):
            raise HwModelsError(f"{self._what}: a sweep store of schema version {meta.get('schema_version')}; this "
                                f"hw-models reads version {SCHEMA_VERSION}")

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> "SweepStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- writing -----------------------------------------------------------------------------

    def put(self, rec: PointRecord, replace_done: bool = False) -> bool:
        """Write one point in one transaction. A row already there is replaced unless it is
        finished (``done``): then only a finished record with ``replace_done`` replaces it.
        Returns whether the row was written."""
        return self.db.execute(_PUT, _values(rec, replace_done)).rowcount > 0

    def put_many(self, recs: list[PointRecord], replace_done: bool = False) -> None:
        """Write points in one transaction, each as :meth:`put` writes it: all of them or,
        if the process dies before the commit, none."""
        values = [_values(rec, replace_done) for rec in recs]
        if len(values) == 1:
            self.db.execute(_PUT, values[0])
            return
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self.db.executemany(_PUT, values)
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    # --- reading -----------------------------------------------------------------------------

    def done_keys(self, keys: Iterable[str]) -> set[str]:
        """Those of ``keys`` whose points are finished."""
        out: set[str] = set()
        keys = list(keys)
        for i in range(0, len(keys), 500):
            chunk = keys[i:i + 500]
            q = f"SELECT key FROM points WHERE status = 'done' AND key IN ({', '.join('?' * len(chunk))})"
            out.update(r[0] for r in self.db.execute(q, chunk))
        return out

    def metrics_of(self, keys: Iterable[str]) -> dict[str, dict]:
        """The metrics of those of ``keys`` whose points are finished, by key."""
        out: dict[str, dict] = {}
        keys = list(keys)
        for i in range(0, len(keys), 500):
            chunk = keys[i:i + 500]
            q = f"SELECT key, metrics FROM points WHERE status = 'done' AND key IN ({', '.join('?' * len(chunk))})"
            out.update((k, json.loads(m)) for k, m in self.db.execute(q, chunk))
        return out

    def rows(self, kind: str | None = None, status: str | None = None) -> Iterator[dict]:
        """Every row (oldest first) as a dict, its JSON columns decoded."""
        where, args = [], []
        if kind is not None:
            where.append("kind = ?")
            args.append(kind)
        if status is not None:
            where.append("status = ?")
            args.append(status)
        q = f"SELECT {', '.join(_COLUMNS)} FROM points" + (f" WHERE {' AND '.join(where)}" if where else "")
        for row in self.db.execute(q + " ORDER BY rowid", args):
            yield _row(row)

    def counts(self) -> list[tuple[str, str, int]]:
        """(kind, status, rows) for every kind and status there are."""
        q = "SELECT kind, status, COUNT(*) FROM points GROUP BY kind, status ORDER BY kind, status"
        return [tuple(r) for r in self.db.execute(q)]

    def integrity_ok(self) -> bool:
        return self.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


_PUT = (f"INSERT INTO points ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))}) "
        f"ON CONFLICT (key) DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in _COLUMNS[1:])} "
        "WHERE points.status != 'done' OR (excluded.status = 'done' AND ?)")


def _values(rec: PointRecord, replace_done: bool) -> tuple:
    """The parameters of :data:`_PUT` for ``rec``."""
    if rec.status not in STATUSES:
        raise ValueError(f"status {rec.status!r}: one of {STATUSES}")
    metrics = rec.metrics_json if rec.metrics_json is not None else \
        None if rec.metrics is None else json.dumps(rec.metrics, sort_keys=True)
    return (rec.key, rec.kind, rec.status,
            rec.config_json if rec.config_json is not None else canonical_json(rec.config),
            rec.versions_json if rec.versions_json is not None else canonical_json(rec.model_versions),
            metrics, rec.error, rec.wall_s, rec.code_version, rec.finished_utc, rec.origin, rec.alias, rec.worker,
            bool(replace_done))


def _statements() -> list[str]:
    """The schema's statements, one by one (inside the set-up transaction)."""
    lines = [ln.split("--")[0] for ln in _SCHEMA.splitlines()]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


def _row(row: tuple) -> dict:
    r = dict(zip(_COLUMNS, row))
    for c in ("config", "model_versions", "metrics"):
        if r[c] is not None:
            r[c] = json.loads(r[c])
    return r


_SQLITE_HEADER = b"SQLite format 3\x00"


def _check_header(path: Path, what: str) -> None:
    """A clear error for a file that is not an SQLite database (a JSONL store, say)."""
    try:
        with path.open("rb") as f:
            head = f.read(len(_SQLITE_HEADER))
    except OSError as exc:
        raise HwModelsError(f"{what}: cannot read the sweep store ({exc.strerror or exc})") from None
    if not head or head == _SQLITE_HEADER:
        return
    if head.lstrip()[:1] == b"{":
        raise HwModelsError(f"{what}: a JSONL result store, not a sweep store; copy its records into one with "
                            f"hw-models sweep import-jsonl {path} --store NEW.sqlite")
    raise HwModelsError(f"{what}: not a sweep store (not an SQLite database)")


def worker_name() -> str:
    return f"{os.uname().nodename}:{os.getpid()}" if hasattr(os, "uname") else f"pid {os.getpid()}"
