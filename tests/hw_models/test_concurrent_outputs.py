"""Several runs writing into one output folder at once: unique temporary names, atomic
renames and locked appends, so no run crashes on another's temporary file, every file is
whole, and every run's records reach the store."""

from __future__ import annotations

import csv
import multiprocessing
import threading

from hw_models.store import ResultStore, write_csv_atomic

ROUNDS = 4


def test_two_threads_replacing_one_csv_never_trip_over_a_temporary_file(tmp_path):
    # with one fixed temporary name (o.csv.tmp) this failed at once: FileNotFoundError on the rename
    errors = []

    def writer(i):
        try:
            for _ in range(200):
                write_csv_atomic(tmp_path / "o.csv", [{"writer": i, "x": j} for j in range(50)])
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    rows = list(csv.DictReader((tmp_path / "o.csv").open()))
    assert len(rows) == 50 and len({r["writer"] for r in rows}) == 1  # whole: one writer's rows, not a mix
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.csv"]  # no temporary file left


def _sweep_into(out_dir: str, size_bytes: int, rounds: int) -> None:
    """One writer: runs a ring all-reduce again and again into the shared store, and writes
    the shared CSV and PNG and one of its own each time (as hw-models allreduce does)."""
    from pathlib import Path

    from hw_models.allreduce_sweep import Job, run_sweep, table_rows
    from hw_models.report.charts import bandwidth_chart
    from nic.allreduce import NicConfig
    from noc.topology import parse_spec

    out = Path(out_dir)
    t = parse_spec("ring:4")
    store = ResultStore(out / "ring_4_message.jsonl", warn=lambda m: (_ for _ in ()).throw(AssertionError(m)))
    for _ in range(rounds):
        results = run_sweep(t, [Job("ring", size_bytes, "codesigned", "message")], nic=NicConfig(), store=store,
                            fresh=True)
        for stem in ("ring_4_message", f"own_{size_bytes}"):
            write_csv_atomic(out / f"{stem}.csv", table_rows(results))
            bandwidth_chart(results, out / f"{stem}.png", "ring")


def test_two_sweeps_into_one_folder_both_finish_and_keep_their_records(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_sweep_into, args=(str(tmp_path), size, ROUNDS)) for size in (32768, 65536)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(600)
    assert [p.exitcode for p in procs] == [0, 0]
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["own_32768.csv", "own_32768.png", "own_65536.csv", "own_65536.png", "ring_4_message.csv",
                     "ring_4_message.jsonl", "ring_4_message.png"]  # both outputs, no temporary file left
    for name in names:
        if name.endswith(".png"):
            assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = list(csv.DictReader((tmp_path / "ring_4_message.csv").open()))
    assert len(rows) == 1 and rows[0]["size_bytes"] in ("32768", "65536")  # one writer's, whole
    said = []
    records = ResultStore(tmp_path / "ring_4_message.jsonl", warn=said.append).records()
    assert said == [] and len(records) == 2 * ROUNDS  # every append whole, none interleaved
    assert {r["size_bytes"] for r in records} == {32768, 65536}
