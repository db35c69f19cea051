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

Sharing: a process claims the points it is about to compute (a row of the ``claims``
table naming it: host, pid and the pid's start time), in the transaction that checks they
are not finished; another process leaves a point claimed by a live process to it, and
takes over a claim whose owner has ended (a process of this host that is gone, or whose
pid is now another process's). A claim ends when its point's row is written or its owner
closes the store; one left by a killed process is taken over. So two sweeps (or commands)
on one store compute each point once. SQLite's WAL mode needs every process on one host,
so a claim's owner is always a process that can be checked here.

Damage: every row carries a checksum, the SHA-256 of its canonical content (key, kind,
status and the config, model-versions, metrics and error cells as stored), written by
every put and checked on every read, with the cells' types (config, model versions and
metrics JSON objects). A row that fails is *damaged*: it is reported by key on one line (a
:class:`~noc.base.errors.HwModelsWarning`), read as if it were not there (a sweep or a
command computes the point again and its new row replaces the damaged one; an export, a
plot or a report skips it) and counted when the store is closed. The rest of the store
stays usable. A store of schema version 1 (no checksums) is migrated when it is opened:
the column is added and every row whose cells read as valid gets its checksum then, once
(edits made before that cannot be told from the original; a row already unreadable is
damaged).

Durability: ``synchronous = NORMAL`` in WAL mode keeps every committed row through a
crash of the process; a power cut may lose the last rows (the database stays consistent).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

from noc.base.errors import HwModelsError, HwModelsWarning
from noc.base.files import blocked_by_a_file, why_missing

SCHEMA_NAME = "hw-models sweep store"
SCHEMA_VERSION = 2
DAMAGED_LINES = 5  # damaged rows reported one by one; the rest only counted
BUSY_TIMEOUT_S = 60.0
# a reader finding an empty file (or a database of no tables) waits this long for a sweep that is making
# the store there at this moment, before it says the file is no store
NEW_STORE_WAIT_S = 3.0
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
    checksum TEXT,                   -- row_checksum(...) of the row's content (NULL: damaged)
    CHECK ((status = 'done') = (metrics IS NOT NULL))
);
CREATE TABLE IF NOT EXISTS claims (
    key TEXT PRIMARY KEY,            -- a point being computed
    owner TEXT NOT NULL,             -- host:pid:start of the process computing it
    claimed_utc REAL NOT NULL        -- seconds since the epoch
);
CREATE INDEX IF NOT EXISTS points_alias ON points (alias) WHERE alias IS NOT NULL;
"""

_COLUMNS = ("key", "kind", "status", "config", "model_versions", "metrics", "error", "wall_s", "code_version",
            "finished_utc", "origin", "alias", "worker", "checksum")
_CONTENT = ("key", "kind", "status", "config", "model_versions", "metrics", "error")  # what the checksum covers
_JSON_OBJECTS = ("config", "model_versions", "metrics")


def row_checksum(key, kind, status, config, model_versions, metrics, error) -> str:
    """SHA-256 (hex) of a row's content, its JSON cells as the text stored."""
    text = json.dumps([key, kind, status, config, model_versions, metrics, error], ensure_ascii=True,
                      separators=(",", ":"))
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def row_damage(cells: dict) -> str | None:
    """Why a row (its cells as stored, by column name) is damaged, or None when it is whole."""
    for c in _CONTENT:
        if cells[c] is not None and not isinstance(cells[c], str):
            return f"its {c} cell holds {type(cells[c]).__name__}, not text"
    if cells.get("checksum") != row_checksum(*(cells[c] for c in _CONTENT)):
        return "its checksum does not match its content (edited or corrupted)"
    for c in _JSON_OBJECTS:
        if cells[c] is None:
            continue
        try:
            value = json.loads(cells[c])
        except ValueError:
            return f"its {c} cell is not valid JSON"
        if not isinstance(value, dict):
            return f"its {c} cell holds a JSON {type(value).__name__}, not an object"
    return None


def canonical_json(data) -> str:
    """JSON with sorted keys and no spaces: the same data, the same text."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def point_key(kind: str, config: dict, model_versions: dict) -> str:
    """The store key of a point: SHA-256 (hex) of its kind, resolved config and model versions."""
    text = canonical_json({"kind": kind, "config": config, "model_versions": model_versions})
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def point_key_of_json(kind: str, config_json: str, versions_json: str) -> str:
    """:func:`point_key` from ``canonical_json`` of the config and of the model versions: the
    same text hashed (keys in sorted order: config, kind, model_versions), without encoding
    the config a second time."""
    text = f'{{"config":{config_json},"kind":{canonical_json(kind)},"model_versions":{versions_json}}}'
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
        self.damaged: dict[str, str] = {}  # key -> why, the damaged rows read so far
        self.owner = process_name()
        self._claimed: set[str] = set()  # the keys this store object has claimed and not written
        what = f"{named} {self.path}" if named else str(self.path)
        self._what = what
        if self.path.is_dir():
            raise HwModelsError(f"{what}: is a directory; give a store file, e.g. results/sweeps/NAME.sqlite")
        if self.path.is_symlink() and not self.path.exists():
            raise HwModelsError(f"{what}: {why_missing(self.path)}")
        if not self.path.exists():
            if not create:
                raise HwModelsError(f"{what}: {why_missing(self.path, 'no such sweep store')}")
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise HwModelsError(f"{what}: cannot make its directory "
                                    f"({blocked_by_a_file(self.path) or exc.strerror or exc})") from None
        else:
            _check_header(self.path, what)
            if not create and not self._made_meanwhile(lambda: self.path.stat().st_size > 0):
                # SQLite would make a store in it: a reader must not
                raise HwModelsError(f"{what}: an empty file (0 bytes), not a sweep store")
        self._create = create
        try:
            self.db = sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT_S, isolation_level=None)
            self.db.text_factory = _text  # a cell of damaged bytes reads (and fails its checksum), not raises
            self.db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            self._set_up()
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
            raise HwModelsError(f"{what}: cannot open the sweep store ({exc})") from None

    @staticmethod
    def _made_meanwhile(made) -> bool:
        """``made()`` turns true within :data:`NEW_STORE_WAIT_S` (another sweep making the store)."""
        deadline = time.monotonic() + NEW_STORE_WAIT_S
        while not made():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    def _set_up(self) -> None:
        db = self.db
        # another database is refused before anything is written to it (not even its switch to WAL)
        def tables_now() -> set:
            return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}

        tables = tables_now()
        if not tables and not self._create and self._made_meanwhile(lambda: bool(tables_now())):
            tables = tables_now()
        if not tables and not self._create:  # a reader never turns an empty database into a store
            raise HwModelsError(f"{self._what}: an SQLite database with no tables, not a sweep store")
        if tables and "meta" not in tables:
            raise HwModelsError(f"{self._what}: an SQLite database, but not a sweep store (its tables: "
                                f"{', '.join(sorted(tables))})")
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
        with _immediate(db):
            tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if tables and "meta" not in tables:
                raise HwModelsError(f"{self._what}: an SQLite database, but not a sweep store (its tables: "
                                    f"{', '.join(sorted(tables))})")
            for statement in _statements():
                db.execute(statement)
            db.execute("INSERT OR IGNORE INTO meta (name, value) VALUES ('schema', ?), ('schema_version', ?)",
                       (SCHEMA_NAME, str(SCHEMA_VERSION)))
            meta = dict(db.execute("SELECT name, value FROM meta"))
            if meta.get("schema") == SCHEMA_NAME and meta.get("schema_version") == "1":
                _migrate_from_1(db)
                meta["schema_version"] = str(SCHEMA_VERSION)
        if meta.get("schema") != SCHEMA_NAME:
            raise HwModelsError(f"{self._what}: not a sweep store (its meta table says {meta.get('schema')!r})")
        if meta.get("schema_version") != str(SCHEMA_VERSION):
            raise HwModelsError(f"{self._what}: a sweep store of schema version {meta.get('schema_version')}; this "
                                f"hw-models reads version {SCHEMA_VERSION}")

    def close(self) -> None:
        try:
            self.release_claims()
        except sqlite3.Error:  # pragma: no cover - the claims of a dead owner are taken over anyway
            pass
        self.db.close()
        if len(self.damaged) > 0:
            warnings.warn(HwModelsWarning(f"{self._what}: {len(self.damaged)} damaged row(s) ignored (not finished "
                                          "for a sweep, which computes them again; skipped by exports, plots and "
                                          "reports)"), stacklevel=2)

    def _damaged(self, cells: dict) -> bool:
        """Whether the row ``cells`` is damaged; the first ones are reported by key."""
        why = row_damage(cells)
        if why is None:
            return False
        key = cells["key"]
        if key not in self.damaged:
            self.damaged[key] = why
            if len(self.damaged) <= DAMAGED_LINES:
                warnings.warn(HwModelsWarning(f"{self._what}: row {key}: damaged, {why}; ignored"), stacklevel=3)
        return True

    def __enter__(self) -> "SweepStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- writing -----------------------------------------------------------------------------

    def put(self, rec: PointRecord, replace_done: bool = False) -> bool:
        """Write one point in one transaction. A row already there is replaced unless it is
        finished (``done``): then only a finished record with ``replace_done`` replaces it.
        Returns whether the row was written."""
        return self.db.execute(_PUT, _values(rec, replace_done, rec.key in self.damaged)).rowcount > 0

    def put_many(self, recs: list[PointRecord], replace_done: bool = False) -> None:
        """Write points in one transaction, each as :meth:`put` writes it: all of them or,
        if the process dies before the commit, none. This process's claims on them end."""
        values = [_values(rec, replace_done, rec.key in self.damaged) for rec in recs]
        with _immediate(self.db):
            self.db.executemany(_PUT, values)
            if self._claimed:
                self.db.executemany("DELETE FROM claims WHERE key = ? AND owner = ?",
                                    [(r.key, self.owner) for r in recs if r.key in self._claimed])
                self._claimed.difference_update(r.key for r in recs)

    # --- sharing points with other processes ------------------------------------------------

    def claim(self, keys: Iterable[str], *, fresh: bool = False) -> tuple[list[str], set[str], set[str]]:
        """Claim those of ``keys`` that are not finished (all of them with ``fresh``) and that
        no live process has claimed, in one transaction. Returns (claimed, finished,
        busy: claimed by another live process)."""
        keys = list(dict.fromkeys(keys))
        with _immediate(self.db):
            done = set() if fresh else set(self._done_cells(keys))
            todo = [k for k in keys if k not in done]
            owners: dict[str, str] = {}
            for chunk, marks in _chunks(todo):
                owners.update(self.db.execute(f"SELECT key, owner FROM claims WHERE key IN {marks}", chunk))
            alive: dict[str, bool] = {}
            busy = {k for k, o in owners.items()
                    if o != self.owner and alive.setdefault(o, owner_alive(o))}
            mine = [k for k in todo if k not in busy]
            now = time.time()
            self.db.executemany("INSERT INTO claims (key, owner, claimed_utc) VALUES (?, ?, ?) ON CONFLICT (key) "
                                "DO UPDATE SET owner = excluded.owner, claimed_utc = excluded.claimed_utc",
                                [(k, self.owner, now) for k in mine])
        self._claimed.update(mine)
        return mine, done, busy

    def release_claims(self) -> None:
        """End every claim of this process (the points it has not written)."""
        if self._claimed:
            self.db.execute("DELETE FROM claims WHERE owner = ?", (self.owner,))
            self._claimed.clear()

    # --- reading -----------------------------------------------------------------------------

    def done_keys(self, keys: Iterable[str]) -> set[str]:
        """Those of ``keys`` whose points are finished."""
        return set(self._done_cells(keys))

    def _done_cells(self, keys: Iterable[str]) -> dict[str, dict]:
        """The cells of those of ``keys`` whose rows are finished and whole, by key."""
        out: dict[str, dict] = {}
        with self._reading():
            for chunk, marks in _chunks(list(keys)):
                q = f"SELECT {', '.join(_CONTENT)}, checksum FROM points WHERE status = 'done' AND key IN {marks}"
                for row in self.db.execute(q, chunk):
                    cells = dict(zip(_CONTENT + ("checksum",), row))
                    if not self._damaged(cells):
                        out[cells["key"]] = cells
        return out

    @contextmanager
    def _reading(self) -> Iterator[None]:
        """Reads in which an SQLite error (a damaged file) is one line saying how to save what can be read."""
        try:
            yield
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
            raise HwModelsError(f"{self._what}: the database file is damaged ({exc}); copy what SQLite can read into "
                                f"a new store with: sqlite3 {self.path} .recover | sqlite3 NEW.sqlite") from None

    def metrics_of(self, keys: Iterable[str]) -> dict[str, dict]:
        """The metrics of those of ``keys`` whose points are finished, by key."""
        return {k: json.loads(c["metrics"]) for k, c in self._done_cells(keys).items()}

    def rows(self, kind: str | None = None, status: str | None = None) -> Iterator[dict]:
        """Every whole row (oldest first) as a dict, its JSON columns decoded; damaged rows
        are left out (and reported)."""
        where, args = [], []
        if kind is not None:
            where.append("kind = ?")
            args.append(kind)
        if status is not None:
            where.append("status = ?")
            args.append(status)
        q = f"SELECT {', '.join(_COLUMNS)} FROM points" + (f" WHERE {' AND '.join(where)}" if where else "")
        with self._reading():
            cursor = self.db.execute(q + " ORDER BY rowid", args)
        while True:
            with self._reading():
                found = cursor.fetchmany(1000)
            if not found:
                return
            for row in found:
                cells = dict(zip(_COLUMNS, row))
                if not self._damaged(cells):
                    yield _row(cells)

    def counts(self) -> list[tuple[str, str, int]]:
        """(kind, status, rows) for every kind and status there are."""
        with self._reading():
            return [tuple(r) for r in self.db.execute("SELECT kind, status, COUNT(*) FROM points GROUP BY kind, status "
                                                      "ORDER BY kind, status")]

    def integrity_ok(self) -> bool:
        return self.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


_PUT = (f"INSERT INTO points ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))}) "
        f"ON CONFLICT (key) DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in _COLUMNS[1:])} "
        "WHERE points.status != 'done' OR (excluded.status = 'done' AND ?) OR ?")


def _values(rec: PointRecord, replace_done: bool, damaged: bool) -> tuple:
    """The parameters of :data:`_PUT` for ``rec`` (``damaged``: its row, found damaged, is replaced whatever
    it says)."""
    if rec.status not in STATUSES:
        raise ValueError(f"status {rec.status!r}: one of {STATUSES}")
    metrics = rec.metrics_json if rec.metrics_json is not None else \
        None if rec.metrics is None else json.dumps(rec.metrics, sort_keys=True)
    config = rec.config_json if rec.config_json is not None else canonical_json(rec.config)
    versions = rec.versions_json if rec.versions_json is not None else canonical_json(rec.model_versions)
    checksum = row_checksum(rec.key, rec.kind, rec.status, config, versions, metrics, rec.error)
    return (rec.key, rec.kind, rec.status, config, versions, metrics, rec.error, rec.wall_s, rec.code_version,
            rec.finished_utc, rec.origin, rec.alias, rec.worker, checksum, bool(replace_done), damaged)


@contextmanager
def _immediate(db) -> Iterator[None]:
    """One write transaction taken at once (``BEGIN IMMEDIATE``): committed at the end, rolled
    back on any exception (Ctrl-C included)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def _chunks(keys: list[str], size: int = 500) -> Iterator[tuple[list[str], str]]:
    """``keys`` in lists of at most ``size`` (SQLite limits the parameters of one statement),
    each with the placeholders of its ``IN`` list, ``(?, ?, ?)``."""
    for i in range(0, len(keys), size):
        yield keys[i:i + size], f"({', '.join('?' * len(keys[i:i + size]))})"


def _statements() -> list[str]:
    """The schema's statements, one by one (inside the set-up transaction)."""
    lines = [ln.split("--")[0] for ln in _SCHEMA.splitlines()]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _migrate_from_1(db) -> None:
    """A version-1 store (no checksums) to version 2, inside the caller's transaction: the
    column added, each row's checksum computed from its cells once (none for a row whose
    cells do not read as valid: it is damaged)."""
    db.execute("ALTER TABLE points ADD COLUMN checksum TEXT")
    updates = []
    for row in db.execute(f"SELECT rowid, {', '.join(_CONTENT)} FROM points"):
        cells = dict(zip(_CONTENT, row[1:]))
        if all(v is None or isinstance(v, str) for v in cells.values()):
            cells["checksum"] = row_checksum(*(cells[c] for c in _CONTENT))
            if row_damage(cells) is None:
                updates.append((cells["checksum"], row[0]))
    db.executemany("UPDATE points SET checksum = ? WHERE rowid = ?", updates)
    db.execute("UPDATE meta SET value = ? WHERE name = 'schema_version'", (str(SCHEMA_VERSION),))


def _row(r: dict) -> dict:
    r = dict(r)
    del r["checksum"]
    for c in ("config", "model_versions", "metrics"):
        if r[c] is not None:
            r[c] = json.loads(r[c])
    return r


SQLITE_HEADER = b"SQLite format 3\x00"


def file_head(path: Path, what: str, reading: str = "") -> bytes:
    """The first bytes of ``path``, as many as :data:`SQLITE_HEADER` has (it is an SQLite
    database when they are those); a one-line error naming ``what`` (and ``reading``, what
    it was read as) when it cannot be read."""
    try:
        with path.open("rb") as f:
            return f.read(len(SQLITE_HEADER))
    except OSError as exc:
        raise HwModelsError(f"{what}: cannot read{reading} ({exc.strerror or exc})") from None


def _check_header(path: Path, what: str) -> None:
    """A clear error for a file that is not an SQLite database (a JSONL store, say)."""
    head = file_head(path, what, " the sweep store")
    if not head or head == SQLITE_HEADER:
        return
    if head.lstrip()[:1] == b"{":
        raise HwModelsError(f"{what}: a JSONL result store, not a sweep store; copy its records into one with "
                            f"hw-models sweep import-jsonl {path} --store NEW.sqlite")
    raise HwModelsError(f"{what}: not a sweep store (not an SQLite database)")


def worker_name() -> str:
    return f"{os.uname().nodename}:{os.getpid()}" if hasattr(os, "uname") else f"pid {os.getpid()}"


def _start_time(pid: int) -> str:
    """The start time of process ``pid`` (clock ticks since boot, from /proc), or '' where
    it cannot be read; ``None`` when there is no such process."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except FileNotFoundError:
        return None
    except (OSError, IndexError):
        return ""


def process_name() -> str:
    """This process as a claim's owner: host, pid and the pid's start time."""
    return f"{os.uname().nodename}:{os.getpid()}:{_start_time(os.getpid()) or ''}"


def owner_alive(owner: str) -> bool:
    """Whether the process a claim names runs still (one of another host counts as alive)."""
    host, _, rest = owner.partition(":")
    pid_text, _, start = rest.partition(":")
    if host != os.uname().nodename or not pid_text.isdigit():
        return host != os.uname().nodename
    pid = int(pid_text)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    now = _start_time(pid)
    return now is not None and (not start or not now or now == start)
