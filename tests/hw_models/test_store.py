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

    from noc.base.errors import HwModelsError

    (tmp_path / "r.jsonl").mkdir()
    (tmp_path / "o.csv").mkdir()
    with pytest.raises(HwModelsError, match="r.jsonl: is a directory"):
        ResultStore(tmp_path / "r.jsonl")
    with pytest.raises(HwModelsError, match="o.csv: is a directory"):
        write_csv_atomic(tmp_path / "o.csv", [{"a": 1}])


# --- damaged bytes, checksums, store formats ---------------------------------------------

def _warnings():
    said = []
    return said, said.append


def test_a_byte_that_is_not_utf8_is_skipped_counted_and_moved_aside(tmp_path):
    path = tmp_path / "r.jsonl"
    said, warn = _warnings()
    s = ResultStore(path, warn=warn)
    s.append("a", {"x": 1})
    with path.open("ab") as f:
        f.write(b'{"key": "b", "x": \xff}\n\xfe\xfe\n')  # two damaged lines
    s.append("c", {"x": 3})
    assert s.records() == [{"key": "a", "x": 1}, {"key": "c", "x": 3}]
    assert len(said) == 1 and "skipped 2 damaged lines (not UTF-8 text: lines 2, 3)" in said[0]
    assert s.damaged_path.read_bytes() == b'{"key": "b", "x": \xff}\n\xfe\xfe\n'  # kept as found
    path.read_bytes().decode("utf-8")  # the store itself is clean again
    said.clear()
    assert ResultStore(path, warn=warn).done_keys() == {"a", "c"} and said == []  # reported once, not every run


def test_every_line_read_is_checked(tmp_path):
    path = tmp_path / "r.jsonl"
    said, warn = _warnings()
    s = ResultStore(path, warn=warn)
    s.append("a", {"x": 1.5, "v": [1, 2.25, float("nan")], "name": "ring \u00e9"})
    line = path.read_text()
    path.write_text(line + line.replace('"x": 1.5', '"x": 2.5') + line.replace('"key": "a"', '"key": "b"'))
    records = s.records()
    assert [r["key"] for r in records] == ["a"] and records[0]["x"] == 1.5 and records[0]["name"] == "ring \u00e9"
    assert "skipped 2 damaged lines (checksum mismatch (edited or damaged): lines 2, 3)" in said[0]


def test_a_record_keeps_its_values_exactly_and_carries_its_checksum(tmp_path):
    import json

    from hw_models.store import STORE_FORMAT, checksum

    s = ResultStore(tmp_path / "r.jsonl")
    rec = {"cycles": 12345.678901234567, "big": 2**60 + 1, "neg": -0.0, "u": [0.1, 1e-300], "ok": True, "none": None}
    s.append("k", rec)
    (line,) = (tmp_path / "r.jsonl").read_text().splitlines()
    raw = json.loads(line)
    assert raw["store_format"] == STORE_FORMAT and raw["sha256"] == checksum(raw) and len(raw["sha256"]) == 64
    assert s.records() == [{"key": "k", **rec}]


def test_the_store_sets_its_own_fields(tmp_path):
    import pytest

    s = ResultStore(tmp_path / "r.jsonl")
    for field in ("sha256", "store_format", "key"):
        with pytest.raises(ValueError, match=field):
            s.append("k", {field: 1})


def test_records_without_a_checksum_are_not_reused_until_run_again(tmp_path):
    """Store format 1 (no checksum): nothing shows whether such a record was edited, so it
    is not reused; it stays in the file, and once its run is stored again it is superseded
    and no longer reported."""
    path = tmp_path / "r.jsonl"
    path.write_text('{"key": "a", "x": 1}\n{"key": "b", "x": 2}\n')
    said, warn = _warnings()
    s = ResultStore(path, warn=warn)
    assert s.records() == [] and len(said) == 1
    assert "2 records of another store format (without a checksum: written before store format 2) not reused" in said[0]
    s.append("a", {"x": 1})
    said.clear()
    assert ResultStore(path, warn=warn).records() == [{"key": "a", "x": 1}]
    assert len(said) == 1 and "1 record of another store format" in said[0]  # b only
    assert path.read_text().startswith('{"key": "a", "x": 1}\n{"key": "b", "x": 2}\n')  # left in place
    assert not (tmp_path / "r.jsonl.damaged").exists()


def test_a_record_of_a_later_store_format_is_left_for_the_later_code(tmp_path):
    import json

    from hw_models.store import checksum

    later = {"key": "a", "x": 1, "store_format": 99}
    later["sha256"] = checksum(later)
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(later) + "\n")
    said, warn = _warnings()
    assert ResultStore(path, warn=warn).records() == []
    assert "store format 99, newer than 2" in said[0] and json.loads(path.read_text()) == later


def test_the_default_warning_is_one_line_on_stderr(tmp_path, capsys):
    path = tmp_path / "r.jsonl"
    path.write_bytes(b"\xff\n")
    assert ResultStore(path).records() == []
    err = capsys.readouterr().err
    assert err.startswith(f"warning: {path}: skipped 1 damaged line (not UTF-8 text: line 1)") and err.count("\n") == 1


# --- through hw-models allreduce -----------------------------------------------------------

ALLREDUCE = ["allreduce", "-t", "ring:4", "-a", "ring", "--sizes", "32KiB,64KiB"]


def test_allreduce_refuses_a_store_that_is_not_a_sweep_store_in_one_line(tmp_path, capsys):
    """``hw-models allreduce`` keeps its runs in ``<out>/runs.sqlite`` (a sweep store); a
    JSONL store of the earlier releases put there is named, with the command that imports it."""
    from cli_run import run

    (tmp_path / "runs.sqlite").write_text('{"key": "a", "x": 1}\n')
    code, out, err = run(ALLREDUCE + ["--out", str(tmp_path)], capsys)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert "a JSONL result store, not a sweep store" in err and "hw-models sweep import-jsonl" in err
    assert not (tmp_path / "ring_4_message.csv").exists()
