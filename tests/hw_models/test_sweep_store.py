"""The sweep store's writing of several points in one transaction: the same rows as one by
one, all of them or none, and a finished point never replaced by a failed one."""

from __future__ import annotations

import json
import sqlite3

import pytest

from hw_models.sweep.store import PointRecord, SweepStore, canonical_json, point_key


def _record(x: int, status: str = "done", *, as_text: bool = False) -> PointRecord:
    config, versions = {"x": x, "name": f"p{x}"}, {"model": 1}
    metrics = {"square": x * x, "half": x / 2} if status == "done" else None
    text = {} if not as_text else {"config_json": canonical_json(config), "versions_json": canonical_json(versions),
                                   "metrics_json": None if metrics is None else json.dumps(metrics, sort_keys=True)}
    return PointRecord(point_key("toy", config, versions), "toy", status, config, versions,
                       None if as_text else metrics, None if status == "done" else "ValueError: no",
                       0.5, "code", "test", worker="here", finished_utc="2026-01-01T00:00:00Z", **text)


def _table(store: SweepStore) -> list[dict]:
    return sorted(store.rows(), key=lambda r: r["key"])


def test_points_written_together_are_the_rows_written_one_by_one(tmp_path):
    with SweepStore(tmp_path / "one.sqlite") as one, SweepStore(tmp_path / "many.sqlite") as many:
        for x in range(5):
            one.put(_record(x))
        many.put_many([_record(x, as_text=True) for x in range(5)])  # JSON text given instead of the dicts
        assert _table(many) == _table(one) and len(_table(one)) == 5
        assert _table(many)[0]["metrics"] == {"square": _table(many)[0]["config"]["x"] ** 2,
                                              "half": _table(many)[0]["config"]["x"] / 2}


def test_points_written_together_are_all_written_or_none(tmp_path):
    bad = PointRecord("k-bad", "toy", "done", {"x": 9}, {}, None, None, 0.1, "code", "test")  # done without metrics
    with SweepStore(tmp_path / "s.sqlite") as st:
        with pytest.raises(sqlite3.IntegrityError):
            st.put_many([_record(1), _record(2), bad])
        assert _table(st) == []
        st.put_many([_record(1), _record(2)])  # the store is usable after the rollback
        assert [r["config"]["x"] for r in sorted(st.rows(), key=lambda r: r["config"]["x"])] == [1, 2]


def test_a_finished_point_is_not_replaced_by_a_failed_one_written_together(tmp_path):
    with SweepStore(tmp_path / "s.sqlite") as st:
        st.put(_record(1))
        st.put_many([_record(1, "failed"), _record(2, "failed")])
        rows = {r["config"]["x"]: r["status"] for r in st.rows()}
        assert rows == {1: "done", 2: "failed"}
        st.put_many([_record(2), _record(3)])  # a finished point replaces a failed one
        assert {r["config"]["x"]: r["status"] for r in st.rows()} == {1: "done", 2: "done", 3: "done"}
