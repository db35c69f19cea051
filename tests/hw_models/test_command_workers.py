"""``--workers N`` / ``--dask`` on the multi-point experiment commands (``train``, ``noc
sweep-load``, ``maddpg accel``, ``rtl synth``), as ``allreduce`` and ``hw-models sweep``
take them: with ``--workers 2`` the points run in other processes (the store's worker
column names their pids) and the CSV is byte-identical to the default run's (every point in
this process; ``rtl synth``'s but for its ``seconds`` column, Yosys's wall time);
``--workers 0 --dask ADDRESS`` is refused on one line, exit 2."""

from __future__ import annotations

import csv
import io
import os
import sqlite3

import pytest

from cli_run import run
from tiny_workload import NET

NOC = """
[network]
topology = "mesh:3x3"
[router]
num_vcs = 2
[traffic]
warmup_cycles = 200
measure_cycles = 800
drain_limit_cycles = 2000
[sweep]
max_points = 4
refine_steps = 1
"""


def _train(d, out):
    return ["train", "--workloads", str(d / "tiny.toml"), "--topology", "torus:2x2", "--batch", "4", "--algorithms",
            "multitree", "--policy", "wfbp,fusion", "--out", str(out)]


def _noc(d, out):
    return ["noc", "sweep-load", str(d / "noc.toml"), "--out", str(out)]


def _accel(d, out):
    return ["maddpg", "accel", "--agents", "2,3", "--interconnect", "ring,crossbar", "--engine", "2x8", "--batch", "64",
            "--cpu", "none", "--out", str(out)]


def _synth(d, out):
    return ["rtl", "synth", "--depths", "4,8", "--nis", "1", "--topology", "none", "--out", str(out / "synth.csv")]


COMMANDS = {"train": _train, "noc sweep-load": _noc, "maddpg accel": _accel,
            "rtl synth": pytest.param(_synth, marks=pytest.mark.slow)}  # Yosys: ~5 s a point


@pytest.fixture
def inputs(tmp_path):
    (tmp_path / "tiny.toml").write_text(NET)
    (tmp_path / "noc.toml").write_text(NOC)
    return tmp_path


def _csv(out):
    """Each CSV's bytes; rtl synth's without its wall-time column."""
    files = sorted(out.glob("*.csv"))
    assert files, f"no CSV in {out}"
    got = {f.name: f.read_bytes() for f in files}
    if "synth.csv" in got:
        rows = list(csv.DictReader(io.StringIO(got["synth.csv"].decode())))
        assert rows and all(float(r.pop("seconds")) > 0 for r in rows)
        got["synth.csv"] = rows
    return got


def _worker_pids(out):
    with sqlite3.connect(out / "runs.sqlite") as db:
        return {int(w.rsplit(":", 1)[-1]) for (w,) in db.execute("SELECT worker FROM points")}


@pytest.mark.parametrize("argv", COMMANDS.values(), ids=COMMANDS.keys())
def test_workers_2_writes_the_default_runs_csv(inputs, argv, capsys):
    here, pool = inputs / "here", inputs / "pool"
    code, _, err = run(argv(inputs, here), capsys)
    assert code == 0, err
    code, text, err = run([*argv(inputs, pool), "--workers", "2"], capsys)
    assert code == 0, err
    if argv is _train:  # its count of sizes simulated is this process's: not given for runs on workers
        assert "per algorithm: not counted (the runs ran on workers)" in text
    assert _csv(pool) == _csv(here)
    assert _worker_pids(here) == {os.getpid()}
    pids = _worker_pids(pool)
    assert pids and os.getpid() not in pids  # the points ran in the pool's processes


@pytest.mark.parametrize("argv", COMMANDS.values(), ids=COMMANDS.keys())
def test_workers_and_dask_together_refused(inputs, argv, capsys):
    code, out, err = run([*argv(inputs, inputs / "o"), "--workers", "0", "--dask", "tcp://127.0.0.1:9"], capsys)
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1, err  # noc names its config file first
    assert err.endswith("--workers 0 and --dask tcp://127.0.0.1:9: give one (the cluster has its own workers)\n")
    assert "Traceback" not in out
