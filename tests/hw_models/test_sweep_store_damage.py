"""Damaged rows of a sweep store: every row carries a checksum of its content; a row that
was edited, holds a cell that is not JSON or a config that is not a JSON object is reported
by key, read as not finished (a run computes it again and replaces it) and skipped by an
export, and the rest of the store stays usable. A version-1 store (no checksums) migrates."""

from __future__ import annotations

import json
import sqlite3
import warnings

import pytest

from cli_run import run
from hw_models.sweep.store import SCHEMA_VERSION, PointRecord, SweepStore, canonical_json, point_key
from noc.base.errors import HwModelsWarning


def _record(x: int, status: str = "done") -> PointRecord:
    config, versions = {"x": x}, {"model": 1}
    return PointRecord(point_key("toy", config, versions), "toy", status, config, versions,
                       {"total_cycles": 100 * x} if status == "done" else None,
                       None if status == "done" else "ValueError: no", 0.5, "code", "test",
                       finished_utc="2026-01-01T00:00:00Z")


def _store_of(path, n=4):
    with SweepStore(path) as st:
        st.put_many([_record(x) for x in range(n)])
    return [_record(x).key for x in range(n)]


def _edit(path, sql, *args):
    db = sqlite3.connect(str(path))
    db.execute(sql, args)
    db.commit()
    db.close()


DAMAGE = {
    "edited total_cycles": ("UPDATE points SET metrics = ? WHERE key = ?", '{"total_cycles":7}'),
    "metrics not JSON": ("UPDATE points SET metrics = ? WHERE key = ?", '{"total_cycles":'),
    "config a JSON list": ("UPDATE points SET config = ? WHERE key = ?", "[1,2]"),
    "metrics NaN": ("UPDATE points SET metrics = ? WHERE key = ?", '{"total_cycles":NaN}'),
    "error edited": ("UPDATE points SET error = ? WHERE key = ?", "hand-written"),
    "checksum gone": ("UPDATE points SET checksum = ? WHERE key = ?", None),
    "a blob cell": ("UPDATE points SET config = ? WHERE key = ?", b"\x00\x01"),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_row_is_reported_by_key_and_read_as_not_finished(tmp_path, damage):
    path = tmp_path / "s.sqlite"
    keys = _store_of(path)
    sql, value = DAMAGE[damage]
    _edit(path, sql, value, keys[1])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with SweepStore(path, create=False) as st:
            assert st.done_keys(keys) == set(keys) - {keys[1]}
            assert set(st.metrics_of(keys)) == set(keys) - {keys[1]}
            assert [r["key"] for r in st.rows()] == [k for k in keys if k != keys[1]]
            assert {r["metrics"]["total_cycles"] for r in st.rows()} == {0, 200, 300}
            st.put(_record(1))  # the run's new row replaces the damaged one
            assert st.metrics_of([keys[1]]) == {keys[1]: {"total_cycles": 100}}
    lines = [str(w.message) for w in caught if issubclass(w.category, HwModelsWarning)]
    assert lines[0].startswith(f"{path}: row {keys[1]}: damaged, ") and "\n" not in lines[0]
    assert sum(keys[1] in line for line in lines) == 1  # reported once, however often it is read
    assert lines[-1] == (f"{path}: 1 damaged row(s) ignored (not finished for a sweep, which computes them again; "
                         "skipped by exports, plots and reports)")
    with SweepStore(path, create=False) as st:  # whole again
        assert st.done_keys(keys) == set(keys) and not st.damaged


def test_a_damaged_done_row_is_replaced_even_by_a_failed_run(tmp_path):
    path = tmp_path / "s.sqlite"
    keys = _store_of(path, 2)
    _edit(path, "UPDATE points SET metrics = ? WHERE key = ?", '{"total_cycles":1}', keys[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with SweepStore(path, create=False) as st:
            assert st.done_keys(keys) == {keys[1]}
            st.put(_record(0, "failed"))
            assert [(r["key"], r["status"]) for r in st.rows()] == [(keys[0], "failed"), (keys[1], "done")]


def test_many_damaged_rows_print_a_few_lines_and_a_count(tmp_path):
    path = tmp_path / "s.sqlite"
    keys = _store_of(path, 30)
    _edit(path, "UPDATE points SET metrics = '{\"total_cycles\":-1}'")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with SweepStore(path, create=False) as st:
            assert list(st.rows()) == [] and st.done_keys(keys) == set()
    lines = [str(w.message) for w in caught]
    assert len(lines) == 6 and lines[-1].startswith(f"{path}: 30 damaged row(s) ignored")


V1_SCHEMA = """
CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE points (key TEXT PRIMARY KEY, kind TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('done', 'failed')), config TEXT NOT NULL, model_versions TEXT NOT NULL,
    metrics TEXT, error TEXT, wall_s REAL, code_version TEXT NOT NULL, finished_utc TEXT NOT NULL,
    origin TEXT NOT NULL, alias TEXT, worker TEXT NOT NULL DEFAULT '',
    CHECK ((status = 'done') = (metrics IS NOT NULL)));
INSERT INTO meta VALUES ('schema', 'hw-models sweep store'), ('schema_version', '1');
"""


def test_a_version_1_store_migrates_its_rows_get_checksums_and_unreadable_ones_are_damaged(tmp_path):
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(str(path))
    db.executescript(V1_SCHEMA)
    recs = [_record(x) for x in range(3)]
    for r in recs:
        db.execute("INSERT INTO points VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   (r.key, r.kind, r.status, canonical_json(r.config), canonical_json(r.model_versions),
                    json.dumps(r.metrics, sort_keys=True), r.error, r.wall_s, r.code_version, r.finished_utc, r.origin,
                    None, ""))
    db.execute("UPDATE points SET config = '[3]' WHERE key = ?", (recs[2].key,))
    db.commit()
    db.close()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with SweepStore(path, create=False) as st:
            assert st.done_keys(r.key for r in recs) == {recs[0].key, recs[1].key}
            assert [r["metrics"] for r in st.rows()] == [{"total_cycles": 0}, {"total_cycles": 100}]
    assert any(recs[2].key in str(w.message) for w in caught)
    db = sqlite3.connect(str(path))
    assert db.execute("SELECT value FROM meta WHERE name = 'schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
    db.close()
    _edit(path, "UPDATE points SET metrics = '{\"total_cycles\":5}' WHERE key = ?", recs[0].key)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with SweepStore(path, create=False) as st:  # after the migration, an edit is caught
            assert st.done_keys(r.key for r in recs) == {recs[1].key}


def test_export_skips_damaged_rows_with_a_count_and_no_traceback(tmp_path, capsys):
    path = tmp_path / "s.sqlite"
    keys = _store_of(path)
    _edit(path, "UPDATE points SET config = '[1]' WHERE key = ?", keys[0])
    _edit(path, "UPDATE points SET metrics = '{\"total_cycles\"' WHERE key = ?", keys[2])
    code, text, err = run(["sweep", "export", str(path), "--csv", str(tmp_path / "o.csv")], capsys)
    assert code == 0 and "wrote 2 row(s)" in text and "Traceback" not in err
    assert err.count("damaged, ") == 2 and "2 damaged row(s) ignored" in err
    assert (tmp_path / "o.csv").read_text().count("\n") == 3


def test_report_skips_damaged_rows(tmp_path, capsys):
    from hw_models.report.data import load_rows

    path = tmp_path / "s.sqlite"
    keys = _store_of(path)
    _edit(path, "UPDATE points SET metrics = '{\"total_cycles\":1e999}' WHERE key = ?", keys[3])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rows = load_rows(path, "--data")
    assert sorted(r["total_cycles"] for r in rows) == [0, 100, 200]
    assert any(keys[3] in str(w.message) for w in caught)


def _foreign(kind, path):
    if kind == "empty file":
        path.write_bytes(b"")
    else:
        db = sqlite3.connect(path)
        db.execute("PRAGMA user_version = 7" if kind == "database with no tables" else "CREATE TABLE t (x)")
        db.commit()
        db.close()


@pytest.mark.parametrize("kind, says", [("empty file", "an empty file (0 bytes), not a sweep store"),
                                        ("database with no tables", "an SQLite database with no tables"),
                                        ("database of other tables", "not a sweep store (its tables: t)")])
@pytest.mark.parametrize("argv", [["sweep", "status", "F"], ["sweep", "export", "F", "--csv", "o.csv"],
                                  ["plot", "F", "--preset", "bandwidth"], ["report", "F"]])
def test_a_reader_refuses_a_file_that_is_no_store_and_leaves_its_bytes(tmp_path, capsys, monkeypatch, kind, says,
                                                                       argv):
    """Before, ``sweep status`` of a 0-byte file made a store in it (32 KiB written) and any
    reader switched another SQLite database to WAL (its header rewritten)."""
    import hw_models.sweep.store as store

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(store, "NEW_STORE_WAIT_S", 0.2)  # no sweep makes a store here
    f = tmp_path / "f.db"
    _foreign(kind, f)
    before = f.read_bytes()
    code, _out, err = run([str(f) if a == "F" else a for a in argv], capsys)
    if kind == "empty file" and argv[0] in ("plot", "report"):  # not SQLite: read as an empty CSV
        says = "neither a sweep store (SQLite) nor a .csv file"
    assert code == 2 and err.count("\n") == 1 and says in err, err
    assert f.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["f.db"]


def test_a_sweep_never_rewrites_a_database_of_other_tables(tmp_path):
    f = tmp_path / "f.db"
    _foreign("database of other tables", f)
    before = f.read_bytes()
    with pytest.raises(Exception, match="not a sweep store"):
        SweepStore(f)
    assert f.read_bytes() == before


def test_a_reader_waits_for_a_store_another_sweep_is_making(tmp_path):
    """The empty file a sweep's store starts as is not refused by a reader that comes at that
    moment (``sweep status`` as the sweep starts): it waits for the store."""
    import threading

    f = tmp_path / "s.sqlite"
    f.write_bytes(b"")
    maker = threading.Timer(0.3, lambda: _store_of(f, 2))
    maker.start()
    try:
        with SweepStore(f, create=False) as st:
            assert "meta" in {r[0] for r in st.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        maker.join()
    with SweepStore(f, create=False) as st:
        assert len(list(st.rows())) == 2
