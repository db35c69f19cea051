"""``hw-models noc sweep-load`` keeps finished points: a deadlock at a high load, Ctrl-C and
a re-run lose none of them (every point a noc_load point in the output directory's sweep
store, runs.sqlite), and another configuration's sweep of the same topology and pattern
does not silently take its files."""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cli_run import run

# A 4x4 torus without dateline VC classes and 1 VC deadlocks under load (docs/noc.md,
# "Watchdog"); with these windows it delivers at 0.02 and 0.1 flits/NI/cycle and deadlocks at 0.2.
DEADLOCKS = """
[network]
topology = "torus:4x4"
[router]
dateline = false
num_vcs = 1
vc_depth_flits = 2
watchdog_cycles = 300
[traffic]
packet_flits = [8]
warmup_cycles = 100
measure_cycles = 1000
drain_limit_cycles = 20000
[sweep]
step_flits = 0.1
max_points = 8
refine_steps = 0
"""

QUICK = """
[network]
topology = "mesh:3x3"
[router]
num_vcs = 2
[traffic]
warmup_cycles = 200
measure_cycles = 800
drain_limit_cycles = 2000
[sweep]
max_points = 6
refine_steps = 1
"""


def _rows(path: Path) -> list[dict]:
    return list(csv.DictReader(path.open()))


def _stored(path: Path) -> list[dict]:
    """The finished noc_load points of sweep store ``path``."""
    from hw_models.sweep.store import SweepStore

    with SweepStore(path, create=False) as st:
        return list(st.rows(kind="noc_load", status="done"))


def test_a_deadlock_at_a_high_load_keeps_the_points_measured_before_it(tmp_path, capsys):
    cfg = tmp_path / "dl.toml"
    cfg.write_text(DEADLOCKS)
    out = tmp_path / "out"
    code, text, err = run(["noc", "sweep-load", str(cfg), "--out", str(out)], capsys)
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"error: {cfg}: deadlock at offered load 0.2 flits/NI/cycle (after 2 points measured): "
                          "no flit moved for 300 cycles")
    assert "the 2 point(s) measured before it are in" in err and "stuck: link" in err
    assert "DEADLOCK" in text and "0.1000" in text  # the table shows the points and the deadlock
    rows = _rows(out / "sweep_torus_4x4_uniform.csv")
    assert [(r["offered_flits"], r["verdict"]) for r in rows] == [("0.02", "ok"), ("0.1", "ok"), ("0.2", "deadlock")]
    assert float(rows[1]["accepted_flits"]) > 0.09
    assert (out / "sweep_torus_4x4_uniform.png").read_bytes()[:4] == b"\x89PNG"
    assert len(_stored(out / "runs.sqlite")) == 2
    # the same command again: the two points come from the store, the deadlock is found again
    code, _, err2 = run(["noc", "sweep-load", str(cfg), "--out", str(out)], capsys)
    assert code == 2 and err2 == err and len(_stored(out / "runs.sqlite")) == 2


def test_the_sweep_api_reports_a_deadlock_with_the_points_before_it():
    from noc.base.errors import DeadlockError
    from noc.flit import FlitNetworkConfig
    from noc.flit_traffic import TrafficConfig
    from noc.flitsim_sweep import SweepConfig, SweepDeadlockError, sweep_load
    from noc.topology import parse_spec

    cfg = FlitNetworkConfig(dateline=False, num_vcs=1, vc_depth_flits=2, watchdog_cycles=300)
    tr = TrafficConfig(packet_flits=[8], warmup_cycles=100, measure_cycles=1000, drain_limit_cycles=20000)
    with pytest.raises(SweepDeadlockError) as info:
        sweep_load(parse_spec("torus:4x4"), cfg, tr, SweepConfig(step_flits=0.1, max_points=8, refine_steps=0))
    exc = info.value
    assert isinstance(exc, DeadlockError) and exc.offered_flits == pytest.approx(0.2)
    assert [p.offered_flits for p in exc.result.points] == pytest.approx([0.02, 0.1])
    assert exc.result.zero_load_latency_cycles == exc.result.points[0].stats.latency_avg
    assert exc.result.rows[-1]["verdict"] == "deadlock"


class _Interrupt:
    """run_traffic that presses Ctrl-C on its ``at``-th call (counting every call)."""

    def __init__(self, real, at: int | None) -> None:
        self.real, self.at, self.calls = real, at, 0

    def __call__(self, *args, **kw):
        self.calls += 1
        if self.calls == self.at:
            raise KeyboardInterrupt
        return self.real(*args, **kw)


def test_ctrl_c_keeps_the_finished_points_and_a_rerun_resumes(tmp_path, capsys, monkeypatch):
    import noc.flit_traffic as fs  # the noc_load kind runs each point with its run_traffic

    cfg = tmp_path / "q.toml"
    cfg.write_text(QUICK)
    whole = tmp_path / "whole"
    assert run(["noc", "sweep-load", str(cfg), "--out", str(whole)], capsys)[0] in (0, None)
    expect = _rows(whole / "sweep_mesh_3x3_uniform.csv")
    assert len(expect) >= 4

    out = tmp_path / "out"
    press = _Interrupt(fs.run_traffic, at=3)
    monkeypatch.setattr(fs, "run_traffic", press)
    code, text, _ = run(["noc", "sweep-load", str(cfg), "--out", str(out)], capsys)
    text = " ".join(text.split())
    assert code == 130 and "interrupted after 2 point(s)" in text and "run the same command again to resume" in text
    assert _rows(out / "sweep_mesh_3x3_uniform.csv") == expect[:2]  # what was finished is written
    assert len(_stored(out / "runs.sqlite")) == 2

    count = _Interrupt(press.real, at=None)
    monkeypatch.setattr(fs, "run_traffic", count)
    code, text, _ = run(["noc", "sweep-load", str(cfg), "--out", str(out)], capsys)
    assert code in (0, None) and "(2 point(s) reused from runs.sqlite)" in " ".join(text.split())
    assert count.calls == len(expect) - 2  # only the points not yet finished were simulated
    assert _rows(out / "sweep_mesh_3x3_uniform.csv") == expect  # and the sweep is the uninterrupted one
    assert (out / "sweep_mesh_3x3_uniform.png").read_bytes() == (whole / "sweep_mesh_3x3_uniform.png").read_bytes()


def test_another_configuration_keeps_its_points_and_its_files_are_not_taken_silently(tmp_path, capsys):
    cfg_a, cfg_b = tmp_path / "a.toml", tmp_path / "b.toml"
    cfg_a.write_text(QUICK)
    cfg_b.write_text(QUICK.replace("num_vcs = 2", "num_vcs = 4"))
    out = tmp_path / "out"
    argv_a, argv_b = (["noc", "sweep-load", str(c), "--out", str(out)] for c in (cfg_a, cfg_b))
    code, text, _ = run(argv_a, capsys)
    assert code in (0, None) and "note:" not in text
    rows_a = _rows(out / "sweep_mesh_3x3_uniform.csv")
    code, text, _ = run(argv_b, capsys)
    text = " ".join(text.split())
    assert code in (0, None) and "note: replacing" in text and "every point measured stays in" in text
    n_a = len(rows_a)
    assert len(_stored(out / "runs.sqlite")) == n_a + len(_rows(out / "sweep_mesh_3x3_uniform.csv"))
    code, text, _ = run(argv_a, capsys)  # a's sweep again: every point from the store, its files back
    assert f"({n_a} point(s) reused" in " ".join(text.split())
    assert _rows(out / "sweep_mesh_3x3_uniform.csv") == rows_a


def test_a_real_ctrl_c_keeps_the_finished_points(tmp_path):
    """SIGINT to the command while it simulates: it exits 130 and the points it finished are
    in the store and the CSV."""
    cfg = tmp_path / "slow.toml"
    cfg.write_text(QUICK.replace("measure_cycles = 800", "measure_cycles = 60000").replace("max_points = 6",
                                                                                            "max_points = 40"))
    out = tmp_path / "out"
    store = out / "runs.sqlite"
    proc = subprocess.Popen([sys.executable, "-m", "hw_models", "noc", "sweep-load", str(cfg), "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 600
        while not (store.exists() and len(_stored(store)) >= 2):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.1)
        os.kill(proc.pid, signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    done = len(_stored(store))
    assert done >= 2 and "run the same command again to resume" in " ".join(stdout.split())
    assert len(_rows(out / "sweep_mesh_3x3_uniform.csv")) == done
