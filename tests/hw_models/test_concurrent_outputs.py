"""Several runs writing into one output folder at once: unique temporary names, atomic
renames and one SQLite store that several processes write, so no run crashes on another's
temporary file, every file is whole, and every run's points reach the store."""

from __future__ import annotations

import csv
import multiprocessing
import threading

from hw_models.store import write_csv_atomic
from hw_models.sweep.store import SweepStore

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

    from hw_models.allreduce_sweep import allreduce_plan, run_sweep, table_rows
    from hw_models.report.charts import bandwidth_chart

    out = Path(out_dir)
    plan = allreduce_plan({"network": {"topology": "ring:4"}}, algorithms=["ring"], sizes_bytes=[size_bytes],
                          designs=["codesigned"], models=["message"])
    for _ in range(rounds):
        results, _ = run_sweep(plan, out / "runs.sqlite", fresh=True)
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
    names = sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("runs.sqlite-"))  # WAL files
    assert names == ["own_32768.csv", "own_32768.png", "own_65536.csv", "own_65536.png", "ring_4_message.csv",
                     "ring_4_message.png", "runs.sqlite"]  # both outputs, no temporary file left
    for name in names:
        if name.endswith(".png"):
            assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = list(csv.DictReader((tmp_path / "ring_4_message.csv").open()))
    assert len(rows) == 1 and rows[0]["size_bytes"] in ("32768", "65536")  # one writer's, whole
    with SweepStore(tmp_path / "runs.sqlite", create=False) as st:
        assert st.integrity_ok()
        points = list(st.rows(kind="allreduce", status="done"))
    assert sorted(p["config"]["size_bytes"] for p in points) == [32768, 65536]  # each writer's point, whole
