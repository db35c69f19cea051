"""``hw-models maddpg accel``: outputs, refusing to overwrite, and bad input (exit 2, one line)."""

from __future__ import annotations

import csv

import pytest

from cli_run import run
from maddpg.accel.host import CpuProfile

FAST = ["--batch", "64", "--cpu", "none"]


def test_table_csv_png_and_no_overwrite(tmp_path, capsys):
    out = tmp_path / "o"
    code, stdout, err = run(["maddpg", "accel", "--agents", "2,3", "--interconnect", "ring,crossbar", "--engine", "2x8",
                             "--part", "u55c", "--out", str(out), *FAST], capsys)
    assert code == 0, err
    assert "seed 0" in stdout and "one update" in stdout
    rows = list(csv.DictReader(open(out / "accel.csv")))
    assert [(r["agents"], r["interconnect"]) for r in rows] == [("2", "ring"), ("2", "crossbar"), ("3", "ring"),
                                                                ("3", "crossbar")]
    for r in rows:
        phases = sum(float(r[f"{p}_cycles"]) for p in ("transfer", "critic", "actor", "targets", "interconnect"))
        assert phases == pytest.approx(float(r["update_cycles"]), abs=3)
        assert float(r["exchange_inputs_cycles"]) >= float(r["exchange_inputs_bound_cycles"])
        exposed, busy = float(r["interconnect_cycles"]), float(r["interconnect_busy_cycles"])
        assert float(r["interconnect_hidden_pct"]) == pytest.approx(100 * (1 - exposed / busy), abs=0.5)  # cycles rounded in the CSV
    assert (out / "accel.png").stat().st_size > 1000
    before = (out / "accel.csv").read_bytes()
    code, _, err = run(["maddpg", "accel", "--agents", "2", "--engine", "2x8", "--out", str(out), *FAST], capsys)
    assert code == 2 and "accel.csv" in err and "never" in err and "Traceback" not in err
    assert (out / "accel.csv").read_bytes() == before


def test_search_and_cpu_profile(tmp_path, capsys):
    prof = tmp_path / "cpu.json"
    prof.write_text(CpuProfile("simple_spread", 3, 64, 2e-4, 1e-3, 0.02, 1, "test", "now", 0, 1).to_json())
    out = tmp_path / "s"
    code, stdout, err = run(["maddpg", "accel", "--agents", "3", "--interconnect", "mesh", "--batch", "64", "--cpu",
                             str(prof), "--search", "--out", str(out), "--fixed-point", "16.10"], capsys)
    assert code == 0, err
    assert "fastest design that fits" in stdout
    rows = list(csv.DictReader(open(out / "search.csv")))
    assert len(rows) == 2 * 49 and (out / "pareto.png").exists()
    code, _, err = run(["maddpg", "accel", "--agents", "3,6", "--batch", "64", "--cpu", str(prof), "--out",
                        str(tmp_path / "t")], capsys)
    assert code == 2 and "6 agents" in err and "--cpu" in err and not (tmp_path / "t").exists()
    best = list(csv.DictReader(open(out / "accel.csv")))[0]
    fitting = [r for r in rows if r["fits"] == "yes"]
    assert float(best["update_cycles"]) == min(float(r["update_cycles"]) for r in fitting)
    assert float(best["training_speedup"]) == pytest.approx(0.02e6 / float(best["update_us"]), rel=1e-2)


@pytest.mark.parametrize("args, words", [
    (["--agents", "3,x"], ["--agents", "'x'", "2..64"]),
    (["--agents", "1"], ["--agents", "2..64"]),
    (["--part", "vu19p"], ["--part", "vu19p", "u250, u55c, zcu104"]),
    (["--interconnect", "donut"], ["--interconnect", "donut", "ring, mesh, crossbar"]),
    (["--interconnect", "torus:2x2", "--agents", "6"], ["--interconnect", "torus:2x2", "at least 6"]),
    (["--engine", "3y4"], ["--engine", "3y4", "PExLANES"]),
    (["--pcie", "gen9x16"], ["--pcie", "gen9x16", "gen3x16"]),
    (["--level", "packet"], ["--level", "packet", "message, flit"]),
    (["--semantics", "async"], ["--semantics", "async", "parallel, sequential"]),
    (["--fixed-point", "16"], ["--fixed-point", "BITS.FRAC"]),
    (["--batch", "0"], ["--batch", "1..65536"]),
    (["--cpu", "nofile.json"], ["--cpu", "nofile.json", "measure, none"]),
    (["--seed", "-1"], ["--seed"]),
])
def test_bad_input(tmp_path, capsys, args, words):
    code, _, err = run(["maddpg", "accel", "--out", str(tmp_path / "x"), "--batch", "64", "--cpu", "none", *args], capsys)
    assert code == 2, err
    assert "Traceback" not in err and err.startswith("error:") and len(err.strip().splitlines()) == 1
    for word in words:
        assert word in err, (word, err)
    assert not (tmp_path / "x").exists()  # nothing made before the input is checked


def test_bad_config_key(tmp_path, capsys):
    cfg = tmp_path / "a.toml"
    cfg.write_text("clock_mhz = -5\n")
    code, _, err = run(["maddpg", "accel", "--config", str(cfg), "--out", str(tmp_path / "x"), *FAST], capsys)
    assert code == 2 and "clock_mhz" in err and "-5" in err
    cfg.write_text("clocks = 5\n")
    code, _, err = run(["maddpg", "accel", "--config", str(cfg), "--out", str(tmp_path / "x"), *FAST], capsys)
    assert code == 2 and "clocks" in err


def test_a_design_that_does_not_fit_is_named(tmp_path, capsys):
    code, stdout, err = run(["maddpg", "accel", "--agents", "3", "--interconnect", "ring", "--engine", "64x64", "--part",
                             "zcu104", "--out", str(tmp_path / "z"), *FAST], capsys)
    assert code == 0, err
    assert "warning: 3 agents, ring, 64x64 does not fit on zcu104: it needs" in stdout and "DSP slices" in stdout
    row = list(csv.DictReader(open(tmp_path / "z" / "accel.csv")))[0]
    assert row["fits"] == "no (dsp)"


def test_ctrl_c_keeps_the_finished_designs_and_a_rerun_resumes(tmp_path, capsys, monkeypatch):
    """Every design is a point of kind maddpg_accel in <out>/runs.sqlite: Ctrl-C during the
    third keeps the two before it, and the same command again models only the rest and
    writes what an uninterrupted run writes."""
    import maddpg.accel.model as model  # the kind models each design with its simulate_update

    argv = ["maddpg", "accel", "--agents", "2,3", "--interconnect", "ring,crossbar", "--engine", "2x8", *FAST]
    assert run([*argv, "--out", str(tmp_path / "whole")], capsys)[0] == 0
    real, calls = model.simulate_update, []

    def press(*args, **kw):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args, **kw)

    monkeypatch.setattr(model, "simulate_update", press)
    out = tmp_path / "o"
    code, text, _ = run([*argv, "--out", str(out)], capsys)
    assert code == 130 and "run the same command again to resume" in " ".join(text.split())
    assert not (out / "accel.csv").exists()
    calls.clear()
    assert run([*argv, "--out", str(out)], capsys)[0] == 0
    assert len(calls) == 2  # the two designs not finished before
    assert (out / "accel.csv").read_bytes() == (tmp_path / "whole" / "accel.csv").read_bytes()
