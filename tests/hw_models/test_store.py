from __future__ import annotations

import csv

from hw_models.store import ResultStore, write_csv_atomic


def test_store_keeps_finished_runs_and_ignores_a_torn_line(tmp_path):
    s = ResultStore(tmp_path / "r.jsonl")
    s.append("a", {"x": 1})
    s.append("b", {"x": 2})
    with (tmp_path / "r.jsonl").open("a") as f:
        f.write('{"key": "c", "x"')  # the process died mid-write
    assert s.done_keys() == {"a", "b"}
    assert [r["x"] for r in s.records()] == [1, 2]


def test_csv_is_written_whole(tmp_path):
    p = write_csv_atomic(tmp_path / "o.csv", [{"a": 1, "b": 2}, {"a": 3, "c": 4}])
    rows = list(csv.DictReader(p.open()))
    assert rows == [{"a": "1", "b": "2", "c": ""}, {"a": "3", "b": "", "c": "4"}]
    assert not (tmp_path / "o.csv.tmp").exists()


def test_a_record_after_a_torn_line_starts_a_line_of_its_own(tmp_path):
    s = ResultStore(tmp_path / "r.jsonl")
    s.append("a", {"x": 1})
    with (tmp_path / "r.jsonl").open("a") as f:
        f.write('{"key": "b", "x"')  # the process died mid-write
    s.append("c", {"x": 3})
    s.append("a", {"x": 4})  # a re-run (--fresh) supersedes
    assert [r["key"] for r in s.records()] == ["a", "c", "a"]
    assert {r["key"]: r["x"] for r in s.records()} == {"a": 4, "c": 3}


def test_lines_that_are_not_records_are_ignored(tmp_path):
    (tmp_path / "r.jsonl").write_text('[1, 2]\n{"a": 1}\n{"key": 5}\n"text"\n')
    s = ResultStore(tmp_path / "r.jsonl")
    s.append("b", {"x": 2})
    assert s.records() == [{"key": "b", "x": 2}] and s.done_keys() == {"b"}


def test_a_directory_where_a_result_file_goes_is_named(tmp_path):
    import pytest

    from noc.errors import HwModelsError

    (tmp_path / "r.jsonl").mkdir()
    (tmp_path / "o.csv").mkdir()
    with pytest.raises(HwModelsError, match="r.jsonl: is a directory"):
        ResultStore(tmp_path / "r.jsonl")
    with pytest.raises(HwModelsError, match="o.csv: is a directory"):
        write_csv_atomic(tmp_path / "o.csv", [{"a": 1}])
