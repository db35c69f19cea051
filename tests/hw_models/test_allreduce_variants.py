"""``hw-models allreduce``: the paper's NIC variants and the NIC's switches."""

from __future__ import annotations

import csv

from cli_run import run


def _records(out_dir):
    from hw_models.sweep.store import SweepStore

    with SweepStore(out_dir / "runs.sqlite", create=False) as st:
        return list(st.rows(kind="allreduce"))


def test_a_variant_is_its_nis_flow_control_and_priority(tmp_path, capsys):
    out = tmp_path / "beta"
    code, text, err = run(["allreduce", "--variant", "beta", "-a", "multitree", "--sizes", "64KiB", "--out", str(out)],
                          capsys)
    assert code == 0, err
    assert "torus:4x4:c4" in text and "256 B packets" in text and "step priority on" in text
    rows = list(csv.DictReader(open(next(out.glob("*_message.csv")))))
    assert {r["algorithm"] for r in rows} == {"ring", "multitree"}
    # the same run without step priority is another run (another key, other cycles)
    out2 = tmp_path / "beta_noprio"
    code, text, err = run(["allreduce", "--variant", "beta", "--no-step-priority", "-a", "multitree", "--sizes",
                           "64KiB", "--out", str(out2)], capsys)
    assert code == 0 and "step priority off" in text
    keys = {r["key"] for r in _records(out)} & {r["key"] for r in _records(out2)}
    assert not keys


def test_gamma_and_delta_are_bulk(tmp_path, capsys):
    code, text, _ = run(["allreduce", "--variant", "gamma", "-a", "multitree", "--sizes", "64KiB", "--out",
                         str(tmp_path / "g")], capsys)
    assert code == 0 and "bulk transfers" in text and "torus:4x4 (16 nodes, 1 NI(s)/node)" in text


def test_contradictions_are_errors(tmp_path, capsys):
    for argv, says in ((["--variant", "beta", "--nis", "1"], "--nis 1 contradicts --variant beta"),
                       (["--variant", "epsilon"], "--variant 'epsilon'"),
                       (["--lockstep", "--nic", "baseline"], "--lockstep contradicts --nic baseline"),
                       (["--flow-control", "cells"], "--flow-control 'cells'"),
                       (["--reduction", "lazy"], "--reduction 'lazy'"),
                       (["--tree-order", "random"], "--tree-order 'random'")):
        code, _, err = run(["allreduce", *argv, "--sizes", "64KiB", "--out", str(tmp_path / "x")], capsys)
        assert code == 2 and says in err, (argv, err)


def test_the_reduction_switch_costs_cycles(tmp_path, capsys):
    totals = {}
    for mode in ("free", "chunk"):
        out = tmp_path / mode
        code, _, err = run(["allreduce", "-a", "ring", "--sizes", "256KiB", "--reduction", mode, "--out", str(out)],
                           capsys)
        assert code == 0, err
        totals[mode] = float(next(csv.DictReader(open(next(out.glob("*_message.csv")))))["total_cycles"])
    # ring on 16 nodes: 15 reduce-scatter steps of a 16 KiB (4096-element) chunk at 32 elements per cycle
    assert totals["chunk"] - totals["free"] == 15 * 4096 / 32
