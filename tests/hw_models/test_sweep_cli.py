"""``hw-models sweep``: every invalid point reported at once, resume, failures recorded,
local workers and a Dask cluster giving what one process gives, export and its files."""

from __future__ import annotations

import csv
import os
import re
import sqlite3
import sys
import textwrap

import pytest

import hw_models.sweep.kinds as kinds_pkg
from cli_run import run
from hw_models.sweep.store import SweepStore

# The example kind of docs/sweeps.md ("Adding a kind"), as a user would write it.
RING_FORMULA = '''
"""Sweep kind ``ring_formula``: the textbook ring all-reduce time 2(N-1)(alpha + M/(N B))."""
from hw_models.sweep.kinds import Kind
from noc.base.errors import ConfigError

RANGES = {"nodes": (2, 1 << 20), "size_bytes": (1, 1 << 40), "link_bytes_per_cycle": (1, 4096),
          "alpha_cycles": (0, 10**6)}


def validate(point: dict, source: str = "point") -> dict:
    for key in point:
        if key not in RANGES:
            raise ConfigError(f"{source}: unknown key {key!r} (allowed: {', '.join(RANGES)})")
    for key, (lo, hi) in RANGES.items():
        value = point.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            raise ConfigError(f"{source}: key {key!r} = {value!r}: must be an integer in {lo}..{hi}")
    return dict(point)


def run(resolved: dict) -> dict:
    from nic.allreduce import ring_allreduce_cycles

    return {"cycles": ring_allreduce_cycles(resolved["nodes"], resolved["size_bytes"],
                                            resolved["link_bytes_per_cycle"], resolved["alpha_cycles"])}


KIND = Kind(name="ring_formula", summary="the textbook ring all-reduce time", validate=validate, run=run,
            model_versions=lambda: {"ring_formula": 1})
'''

FLAKY = '''
from hw_models.sweep.kinds import Kind


def run(resolved):
    return {"inverse": 1 / resolved["x"]}


KIND = Kind(name="flaky", summary="fails at x = 0", validate=lambda point, source="point": dict(point), run=run,
            model_versions=lambda: {})
'''


CRASHY = '''
import os
import re

from hw_models.sweep.kinds import Kind


def run(resolved):
    if resolved["x"] == 13:
        os._exit(3)  # the worker process dies, as on a segfault or the out-of-memory killer
    return {"square": resolved["x"] ** 2}


KIND = Kind(name="crashy", summary="kills its worker at x = 13", validate=lambda point, source="point": dict(point),
            run=run, model_versions=lambda: {})
'''


@pytest.fixture
def toy_kinds(tmp_path, monkeypatch):
    """ring_formula and flaky as kinds, from a folder added to the kinds package."""
    folder = tmp_path / "kinds"
    folder.mkdir()
    (folder / "ring_formula.py").write_text(RING_FORMULA)
    (folder / "flaky.py").write_text(FLAKY)
    (folder / "crashy.py").write_text(CRASHY)
    monkeypatch.setattr(kinds_pkg, "__path__", [*kinds_pkg.__path__, str(folder)])
    yield
    for name in ("ring_formula", "flaky", "crashy"):
        sys.modules.pop(f"hw_models.sweep.kinds.{name}", None)
        kinds_pkg._LOADED.pop(name, None)


def _ring_cycles(n, size, bw, alpha):  # written out again: the test's own arithmetic
    return 2 * (n - 1) * alpha + 2 * (n - 1) * size / (n * bw)


RING_SWEEP = """
kind = "ring_formula"
[base]
link_bytes_per_cycle = 16
[axes]
nodes = [4, 16, 64]
size_bytes = "1KiB..8KiB"
alpha_cycles = {from = 0, to = 20, step = 10}
"""


def _write(tmp_path, text, name="s.toml"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def _rows(store):
    with SweepStore(store, create=False) as st:
        return list(st.rows())


def test_a_sweep_runs_every_point_and_a_rerun_skips_the_finished_ones(tmp_path, capsys, toy_kinds):
    f = _write(tmp_path, RING_SWEEP)
    store = tmp_path / "r.sqlite"
    code, text, err = run(["sweep", str(f), "--store", str(store), "--workers", "0"], capsys)
    assert code == 0, err
    rows = _rows(store)
    assert len(rows) == 3 * 4 * 3 and "36 run now (36 done, 0 failed)" in text
    for r in rows:
        c = r["config"]
        assert r["metrics"]["cycles"] == pytest.approx(_ring_cycles(c["nodes"], c["size_bytes"], 16, c["alpha_cycles"]),
                                                       rel=1e-12)
        assert r["code_version"].startswith("hw-models ") and r["wall_s"] >= 0 and r["origin"] == f"sweep {f}"
    # again: nothing runs, no row changes
    code, text, _ = run(["sweep", "run", str(f), "--store", str(store), "--workers", "0"], capsys)
    assert code == 0 and "36 finished before" in text and "nothing left to run" in text
    assert _rows(store) == rows
    # a new axis value: only its points run
    _write(tmp_path, RING_SWEEP.replace("[4, 16, 64]", "[4, 16, 64, 256]"))
    code, text, _ = run(["sweep", str(f), "--store", str(store), "--workers", "0"], capsys)
    assert "36 finished before" in text and "12 run now" in text and len(_rows(store)) == 48
    # --fresh: all of them again
    code, text, _ = run(["sweep", str(f), "--store", str(store), "--workers", "0", "--fresh"], capsys)
    assert "48 run now (48 done" in text and len(_rows(store)) == 48
    # --check: validates and counts, runs nothing
    code, text, _ = run(["sweep", str(f), "--store", str(store), "--check"], capsys)
    assert code == 0 and "48 points valid; 48 finished in" in text


def test_every_invalid_point_is_reported_at_once_and_nothing_runs(tmp_path, capsys, toy_kinds):
    f = _write(tmp_path, """
        kind = "ring_formula"
        [base]
        link_bytes_per_cycle = 16
        alpha_cycles = 0
        [axes]
        nodes = [1, 4, 0]
        size_bytes = [1024, -5]
        """)
    store = tmp_path / "r.sqlite"
    code, text, err = run(["sweep", str(f), "--store", str(store)], capsys)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 5 and all(line.startswith("error: ") for line in lines)  # one per invalid point
    assert lines[0] == (f"error: {f}: point 1 of 6: key 'nodes' = 1: must be an integer in 2..1048576 "
                        "[axes: nodes = 1, size_bytes = 1024]")
    assert [line.split(":")[2] for line in lines] == [f" point {i} of 6" for i in (1, 2, 4, 5, 6)]
    assert "point 4 of 6: key 'size_bytes' = -5: must be an integer in 1..1099511627776" in err
    assert not store.exists() and "Traceback" not in err


def test_a_failing_point_records_its_error_and_the_sweep_goes_on(tmp_path, capsys, toy_kinds):
    f = _write(tmp_path, 'kind = "flaky"\n[axes]\nx = [2, 0, 4, 5]\n')
    store = tmp_path / "r.sqlite"
    code, text, err = run(["sweep", str(f), "--store", str(store), "--workers", "0"], capsys)
    assert code == 1 and "3 done, 1 failed" in text and "failed: point 2 (x = 0): ZeroDivisionError" in text
    rows = {r["config"]["x"]: r for r in _rows(store)}
    assert rows[0]["status"] == "failed" and rows[0]["metrics"] is None
    assert rows[0]["error"].startswith("ZeroDivisionError: division by zero [at flaky.py:")
    assert {x: r["metrics"]["inverse"] for x, r in rows.items() if x} == {2: 0.5, 4: 0.25, 5: 0.2}
    code, text, _ = run(["sweep", "status", str(store), "--failed"], capsys)
    assert "ZeroDivisionError" in text
    # a re-run runs the failed point again (and only it)
    code, text, _ = run(["sweep", str(f), "--store", str(store), "--workers", "0"], capsys)
    assert code == 1 and "3 finished before" in text and "1 run now (0 done, 1 failed)" in text


def test_a_point_that_kills_its_worker_process_is_found_and_the_others_finish(tmp_path, capsys, toy_kinds):
    f = _write(tmp_path, 'kind = "crashy"\n[axes]\nx = {from = 1, to = 40, step = 1}\n')
    store = tmp_path / "r.sqlite"
    code, text, err = run(["sweep", str(f), "--store", str(store), "--workers", "2"], capsys)
    assert code == 1 and "39 done, 1 failed" in text, text + err
    rows = {r["config"]["x"]: r for r in _rows(store)}
    assert rows[13]["status"] == "failed" and "the worker process running it died" in rows[13]["error"]
    assert {x: r["metrics"]["square"] for x, r in rows.items() if x != 13} == {x: x * x for x in range(1, 41) if x != 13}


SMALL_ALLREDUCE = """
kind = "allreduce"
[base]
network.topology = "torus:2x2"
[axes]
"allreduce.algorithm" = ["ring", "multitree", "dbtree"]
"allreduce.size" = "4KiB..16KiB"
"""


def _metrics_by_key(store):
    return {r["key"]: r["metrics"] for r in _rows(store)}


def test_local_worker_processes_give_what_one_process_gives(tmp_path, capsys):
    f = _write(tmp_path, SMALL_ALLREDUCE)
    one, pool = tmp_path / "one.sqlite", tmp_path / "pool.sqlite"
    assert run(["sweep", str(f), "--store", str(one), "--workers", "0"], capsys)[0] == 0
    code, text, err = run(["sweep", str(f), "--store", str(pool), "--workers", "2"], capsys)
    assert code == 0 and "running 9 points on 2 local worker processes" in text, err
    assert _metrics_by_key(pool) == _metrics_by_key(one) and len(_metrics_by_key(one)) == 9
    workers = {r["worker"].rsplit(":", 1)[1] for r in _rows(pool)}
    assert str(os.getpid()) not in workers and 1 <= len(workers) <= 2  # in the pool's processes, not this one


def test_a_dask_cluster_gives_what_one_process_gives(tmp_path, capsys):
    distributed = pytest.importorskip("distributed")
    f = _write(tmp_path, SMALL_ALLREDUCE)
    one, remote = tmp_path / "one.sqlite", tmp_path / "dask.sqlite"
    assert run(["sweep", str(f), "--store", str(one), "--workers", "0"], capsys)[0] == 0
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        code, text, err = run(["sweep", str(f), "--store", str(remote), "--dask", cluster.scheduler_address], capsys)
    assert code == 0 and "running 9 points on the Dask cluster at" in text, err
    assert _metrics_by_key(remote) == _metrics_by_key(one)


def test_an_unreachable_dask_scheduler_is_one_line(tmp_path, capsys, toy_kinds):
    pytest.importorskip("distributed")
    f = _write(tmp_path, RING_SWEEP)
    code, _, err = run(["sweep", str(f), "--store", str(tmp_path / "s.sqlite"), "--dask", "tcp://127.0.0.1:9"], capsys)
    assert code == 2 and err.startswith("error: --dask tcp://127.0.0.1:9: cannot reach a Dask scheduler there")
    code, _, err = run(["sweep", str(f), "--dask", "tcp://127.0.0.1:9", "--workers", "2"], capsys)
    assert code == 2 and "give one" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kinds", f.name]  # no store made, nothing left


def test_a_bad_dask_address_leaves_no_store_and_an_old_store_as_it_was(tmp_path, capsys, toy_kinds):
    pytest.importorskip("distributed")
    f = _write(tmp_path, RING_SWEEP.replace("nodes = [4, 16, 64]", "nodes = [4]"))
    store = tmp_path / "s.sqlite"
    code, _, err = run(["sweep", str(f), "--store", str(store), "--workers", "0"], capsys)
    assert code == 0, err
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    f.write_text(f.read_text().replace("nodes = [4]", "nodes = [4, 16]"))  # points left to run
    for fresh in ([], ["--fresh"]):
        code, _, err = run(["sweep", str(f), "--store", str(store), "--dask", "tcp://127.0.0.1:9", *fresh], capsys)
        assert code == 2 and "cannot reach a Dask scheduler" in err and err.count("\n") == 1, err
        assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file() and p != f} == \
            {k: v for k, v in before.items() if k != f.name}
    out = tmp_path / "ar"
    code, _, err = run(["allreduce", "-t", "torus:2x2", "-a", "ring", "-s", "4KiB", "-o", str(out),
                        "--dask", "tcp://127.0.0.1:9"], capsys)
    assert code == 2 and "cannot reach a Dask scheduler" in err, err
    assert not out.exists() or not any(p.suffix == ".sqlite" for p in out.rglob("*")), list(out.rglob("*"))


def test_export_writes_csv_and_parquet_and_never_replaces_a_file_silently(tmp_path, capsys, toy_kinds):
    f = _write(tmp_path, RING_SWEEP)
    store = tmp_path / "r.sqlite"
    assert run(["sweep", str(f), "--store", str(store), "--workers", "0"], capsys)[0] == 0
    out = tmp_path / "out.csv"
    code, text, _ = run(["sweep", "export", str(store), "--csv", str(out)], capsys)
    assert code == 0 and "wrote 36 row(s)" in text
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 36 and rows[0]["kind"] == "ring_formula" and rows[0]["status"] == "done"
    for r in rows:
        n, s, a = int(r["config.nodes"]), int(r["config.size_bytes"]), int(r["config.alpha_cycles"])
        assert float(r["metrics.cycles"]) == pytest.approx(_ring_cycles(n, s, 16, a), rel=1e-12)
    before = out.read_bytes()
    code, _, err = run(["sweep", "export", str(store), "--csv", str(out)], capsys)
    assert code == 2 and "the file exists; give another name, or --overwrite" in err and out.read_bytes() == before
    out.write_text("someone else's\n")
    assert run(["sweep", "export", str(store), "--csv", str(out), "--overwrite"], capsys)[0] == 0
    assert out.read_bytes() == before
    pq = pytest.importorskip("pyarrow.parquet")
    pout = tmp_path / "out.parquet"
    assert run(["sweep", "export", str(store), "--parquet", str(pout)], capsys)[0] == 0
    table = pq.read_table(pout).to_pylist()
    assert [r["metrics.cycles"] for r in table] == [float(r["metrics.cycles"]) for r in rows]
    assert [r["config.nodes"] for r in table] == [int(r["config.nodes"]) for r in rows]
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_a_store_that_is_not_one_is_named(tmp_path, capsys):
    jsonl = tmp_path / "runs.jsonl"
    jsonl.write_text('{"key": "a"}\n')
    code, _, err = run(["sweep", "export", str(jsonl), "--csv", str(tmp_path / "o.csv")], capsys)
    assert code == 2 and "a JSONL result store, not a sweep store; copy its records into one with " \
                          f"hw-models sweep import-jsonl {jsonl}" in err
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE t (x)")
    code, _, err = run(["sweep", "status", str(other)], capsys)
    assert code == 2 and "an SQLite database, but not a sweep store (its tables: t)" in err
    code, _, err = run(["sweep", "status", str(tmp_path / "missing.sqlite")], capsys)
    assert code == 2 and "no such sweep store" in err


def test_a_sampled_sweep_prints_its_seed(tmp_path, capsys, toy_kinds):
    f = _write(tmp_path, RING_SWEEP + "[sample]\nmethod = \"latin_hypercube\"\npoints = 5\nseed = 11\n")
    code, text, _ = run(["sweep", str(f), "--store", str(tmp_path / "r.sqlite"), "--workers", "0"], capsys)
    assert code == 0 and "latin hypercube sample of 5 points, seed 11" in text
    code, text, _ = run(["sweep", str(f), "--store", str(tmp_path / "r.sqlite"), "--workers", "0", "--seed", "12"],
                        capsys)
    assert "seed 12" in text


def test_the_example_sweep_files_are_valid():
    from pathlib import Path

    from hw_models.sweep.execute import resolve_points
    from hw_models.sweep.spec import load_sweep

    files = sorted((Path(__file__).resolve().parents[2] / "docs" / "examples" / "sweeps").glob("*.toml"))
    assert len(files) >= 4
    for f in files:
        points, errors, _ = resolve_points(load_sweep(f))
        assert points and not errors, (f, errors[:2])


def test_many_invalid_points_print_a_few_lines_the_count_and_the_file_with_all(tmp_path, capsys, toy_kinds):
    from hw_models.sweep.invalid import SHOWN

    f = _write(tmp_path, """
        kind = "ring_formula"
        [base]
        link_bytes_per_cycle = 16
        alpha_cycles = 0
        size_bytes = 1024
        [axes]
        nodes = {from = -99, to = 1, step = 1}
        """)
    store = tmp_path / "out" / "r.sqlite"
    files = []
    for _ in range(2):  # a second run writes its own list, beside the first
        code, _, err = run(["sweep", str(f), "--store", str(store)], capsys)
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == SHOWN + 1 and "Traceback" not in err
        assert lines[0].startswith(f"error: {f}: point 1 of 101: key 'nodes' = -99")
        assert lines[-1].startswith(f"error: ... and {101 - SHOWN} more invalid points (101 in all); all 101 are in ")
        full = tmp_path / "out" / lines[-1].rsplit(" are in ", 1)[1].rsplit("/", 1)[1]
        written = full.read_text().splitlines()
        assert len(written) == 101 and written[:SHOWN] == [ln[len("error: "):] for ln in lines[:SHOWN]]
        assert [w.split(":")[1] for w in written] == [f" point {i} of 101" for i in range(1, 102)]
        files.append(full)
    assert files[0] != files[1] and files[0].exists() and not store.exists()


def test_an_address_that_is_no_dask_scheduler_is_one_line_and_exit_2(tmp_path, capsys, toy_kinds):
    import socket
    import threading

    pytest.importorskip("distributed")
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    port = server.getsockname()[1]

    def answer():  # an HTTP server, say: it accepts, writes something else, closes
        for _ in range(4):
            try:
                c, _ = server.accept()
            except OSError:
                return
            c.sendall(b"HTTP/1.0 200 OK\r\n\r\nhello")
            c.close()

    threading.Thread(target=answer, daemon=True).start()
    f = _write(tmp_path, RING_SWEEP)
    try:
        code, _, err = run(["sweep", str(f), "--store", str(tmp_path / "s.sqlite"), "--dask", f"127.0.0.1:{port}"],
                           capsys)
    finally:
        server.close()
    assert err == (f"error: --dask tcp://127.0.0.1:{port}: it answers, but not as a Dask scheduler (its reply is not "
                   f"Dask's protocol)\n") and code == 2


@pytest.mark.parametrize("address, says", [
    ("ucx://127.0.0.1:8786", "protocol 'ucx' is not supported; give tcp://HOST:PORT"),
    ("tls://127.0.0.1:8786", "protocol 'tls' is not supported; give tcp://HOST:PORT"),
    ("inproc://x", "no Dask scheduler in this process there"),
    ("inproc://192.0.2.2/1/1", "no Dask scheduler in this process there"),
    ("://x", "protocol '' is not supported"),
])
def test_an_address_dask_cannot_reach_from_here_is_one_line_at_once(tmp_path, capsys, toy_kinds, address, says):
    """These made the client retry for 40 s and print a traceback at exit."""
    pytest.importorskip("distributed")
    f = _write(tmp_path, RING_SWEEP)
    code, _, err = run(["sweep", str(f), "--store", str(tmp_path / "s.sqlite"), "--dask", address], capsys)
    assert code == 2 and err.startswith(f"error: --dask {address}: {says}") and err.count("\n") == 1, err


def test_an_added_kind_is_listed_by_sweep_kinds_and_named_by_an_unknown_kinds_error(tmp_path, capsys, toy_kinds):
    """The kinds registry is the package's modules: a module added is a kind that
    ``sweep kinds`` lists with its summary and a sweep file's unknown kind names."""
    code, out, _ = run(["sweep", "kinds"], capsys)
    assert code in (0, None) and "\nring_formula: the textbook ring all-reduce time\n" in out, out
    code, _, err = run(["sweep", str(_write(tmp_path, 'kind = "nope"\n[axes]\nx = [1]\n'))], capsys)
    assert code == 2 and "choose one of allreduce, crashy, flaky, maddpg_accel, noc_load, ring_formula, rtl_synth, " \
                         "train_system, training" in err, err
