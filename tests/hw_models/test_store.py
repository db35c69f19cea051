"""Output files (hw_models.store) and the reader of the older releases' JSONL result stores
(hw_models.sweep.jsonl, what ``hw-models sweep import-jsonl`` reads): a record counts only
when it is whole, of store format 2 and its checksum matches; the rest is counted, not
imported."""

from __future__ import annotations

import csv
import hashlib
import json

from hw_models.store import write_csv_atomic
from hw_models.sweep.jsonl import ImportReport, read_records


def test_csv_is_written_whole(tmp_path):
    p = write_csv_atomic(tmp_path / "o.csv", [{"a": 1, "b": 2}, {"a": 3, "c": 4}])
    rows = list(csv.DictReader(p.open()))
    assert rows == [{"a": "1", "b": "2", "c": ""}, {"a": "3", "b": "", "c": "4"}]
    assert not (tmp_path / "o.csv.tmp").exists()


def test_a_directory_where_a_result_file_goes_is_named(tmp_path):
    import pytest

    from noc.base.errors import HwModelsError

    (tmp_path / "o.csv").mkdir()
    with pytest.raises(HwModelsError, match="o.csv: is a directory"):
        write_csv_atomic(tmp_path / "o.csv", [{"a": 1}])


# --- the JSONL reader ---------------------------------------------------------------------------

def _line(key: str, **fields) -> str:
    """A record as the older releases' ResultStore wrote it: store_format 2 and the SHA-256 of
    its canonical JSON (keys sorted, no spaces, the checksum itself left out), computed here
    by hand."""
    rec = {"key": key, **fields, "store_format": 2}
    body = json.dumps(rec, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    rec["sha256"] = hashlib.sha256(body.encode("ascii")).hexdigest()
    return json.dumps(rec, sort_keys=True) + "\n"


def _read(path):
    report = ImportReport(str(path))
    return read_records(path, report), report.skipped


def test_the_reader_takes_whole_checked_records_and_the_last_of_a_key(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(_line("a", x=1) + _line("b", x=2.25, v=[1, None]) + _line("a", x=4))
    records, skipped = _read(path)
    assert records == {"a": {"key": "a", "x": 4}, "b": {"key": "b", "x": 2.25, "v": [1, None]}} and skipped == {}


def test_the_reader_counts_what_it_cannot_use(tmp_path):
    path = tmp_path / "r.jsonl"
    good = _line("a", x=1)
    path.write_bytes((good + good.replace('"x": 1', '"x": 2').replace('"a"', '"e"') + '{"key": "b", "x": 2}\n'
                      + '[1, 2]\n').encode() + b'\xff\xfe\n' + b'{"key": "c", "x"')  # edited, format 1, ..., torn
    records, skipped = _read(path)
    assert list(records) == ["a"]
    assert skipped == {"checksum mismatch (edited or damaged)": 1,
                       "store format 1, not 2 (no checksum to check)": 1, "not a record": 1,
                       "damaged line (not UTF-8 JSON, e.g. a torn write)": 2}


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
