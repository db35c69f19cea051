"""The end-to-end comparison logic (hw_models.training.endtoend) against independent
calculations: the alpha-beta formula worked out in exact fractions, the NIC model called
directly (nic.allreduce.simulate_allreduce), reductions computed by hand from two iteration
times, and the timeline called directly."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from hw_models.training import endtoend as e2e
from hw_models.training.comm import AlphaBeta, NicComm
from hw_models.training.costs import LayerCost
from hw_models.training.policies import POLICIES, PriorityPartition, Sequential, WaitFreeBackprop
from hw_models.training.timeline import simulate
from hw_models.training.workloads import WORKLOADS
from nic.allreduce import NicConfig, simulate_allreduce
from nic.collectives import build
from noc.base.errors import ConfigError
from noc.topology import parse_spec

GRADS = (4000, 12_000, 400_000)  # whole fp32 elements


def zero_compute(grads=GRADS):
    return [LayerCost(f"l{i}", 0.0, 0.0, g) for i, g in enumerate(grads)]


def ring_formula_s(nbytes, n, alpha, bw) -> Fraction:
    """The ring all-reduce by hand: 2(N-1)/N bytes over the bandwidth, 2(N-1) start-ups."""
    return 2 * Fraction(n - 1, n) * nbytes / Fraction(bw) + 2 * (n - 1) * Fraction(alpha)


# ---- iteration times against the communication model called directly -----------------------


def test_zero_compute_sequential_and_wfbp_are_the_sum_of_the_all_reduces_alpha_beta():
    alpha, bw, n = 5e-6, 2e9, 8
    runs, _ = e2e.run_matrix({"m": zero_compute()}, {"ring": AlphaBeta(alpha, bw, n)},
                             [Sequential(), WaitFreeBackprop()])
    expected = float(sum(ring_formula_s(g, n, alpha, bw) for g in GRADS))
    assert [r.policy for r in runs] == ["sequential", "wfbp"]
    for r in runs:
        assert r.iteration_s == pytest.approx(expected, rel=1e-12)
        assert r.comm_s == pytest.approx(expected, rel=1e-12)
        assert r.compute_s == 0.0
        assert r.collectives_per_iteration == len(GRADS)
        assert r.comm_bytes_per_iteration == r.grad_bytes == sum(GRADS)
        assert r.num_workers == n


def test_zero_compute_wfbp_is_the_sum_of_direct_nic_simulations():
    t = parse_spec("torus:2x2")
    s = build(t, "multitree")
    nic = NicConfig(clock_ghz=2.0)
    runs, _ = e2e.run_matrix({"m": zero_compute()}, {"multitree": NicComm(t, s, nic)}, [WaitFreeBackprop()])
    cycles = [simulate_allreduce(t, s, nic, None, g).total_cycles for g in GRADS]  # the NIC model itself
    assert runs[0].iteration_s == pytest.approx(sum(cycles) / 2e9, rel=1e-12)
    assert runs[0].num_workers == 4


def test_free_network_iteration_is_the_compute_for_every_policy():
    layers = [LayerCost("a", 1e-3, 2e-3, 1 << 20), LayerCost("b", 0.5e-3, 3e-3, 0), LayerCost("c", 2e-3, 1e-3, 4096)]
    runs, _ = e2e.run_matrix({"m": layers}, {"free": AlphaBeta(0.0, math.inf, 16)}, e2e.make_policies("all"))
    assert len(runs) == len(POLICIES)
    for r in runs:
        assert r.iteration_s == pytest.approx(9.5e-3, rel=1e-12), r.policy
        assert r.exposed_comm_s == pytest.approx(0.0, abs=1e-15)


def test_runs_are_the_timeline_called_directly_and_kept_on_request():
    layers = [LayerCost(f"l{i}", 1e-4 * (i + 1), 2e-4 * (i + 1), 256 * 1024 * (3 - i)) for i in range(3)]
    comms = {"ring": AlphaBeta(1e-5, 1e9, 16), "hd": AlphaBeta(1e-5, 1e9, 16, "halving_doubling")}
    pols = [WaitFreeBackprop(), PriorityPartition(64 * 1024)]
    seen = []
    runs, kept = e2e.run_matrix({"m": layers}, comms, pols, iterations=4, before_run=seen.append,
                                keep=lambda key: key == ("m", "hd", "p3 (64 KiB slices)"))
    assert seen == [("m", a, p.label) for a in comms for p in pols]
    assert list(kept) == [("m", "hd", "p3 (64 KiB slices)")]
    for r in runs:
        direct = simulate(layers, comms[r.algorithm], next(p for p in pols if p.label == r.policy), iterations=4)
        assert r.iteration_s == direct.iteration_s and r.exposed_comm_s == direct.exposed_comm_s
        assert r.collectives_per_iteration == direct.iterations[-1].collectives
    assert kept[("m", "hd", "p3 (64 KiB slices)")].iteration_s == runs[-1].iteration_s


# ---- reductions, by hand -------------------------------------------------------------------


def test_reduction_against_ring_from_the_two_iteration_times():
    n, alpha = 16, 1e-5
    comms = {"ring": AlphaBeta(alpha, 1e9, n), "fast": AlphaBeta(alpha, 4e9, n)}
    runs, _ = e2e.run_matrix({"m": zero_compute()}, comms, [WaitFreeBackprop()])
    t_ring = sum(ring_formula_s(g, n, alpha, 1e9) for g in GRADS)
    t_fast = sum(ring_formula_s(g, n, alpha, 4e9) for g in GRADS)
    by_hand = float(100 * (1 - t_fast / t_ring))
    rows = e2e.table_rows(runs)
    assert [r["algorithm"] for r in rows] == ["ring", "fast"]
    assert rows[0]["reduction_vs_ring_percent"] == 0.0
    assert rows[1]["reduction_vs_ring_percent"] == pytest.approx(by_hand, rel=1e-9)
    assert "reduction_vs_wfbp_percent" not in rows[1]  # one policy: no policy column
    md = e2e.algorithm_markdown(runs, "wfbp")
    assert f"{float(t_fast) * 1e3:,.2f} ({by_hand:+.1f} %)" in md
    best_ring, best_other = e2e.best_reductions(runs, "fast", "wfbp")
    assert best_ring.percent == pytest.approx(by_hand) and best_ring.workload == "m"
    assert best_other.percent == pytest.approx(by_hand)  # ring is the only other


def test_policy_reductions_and_best_reductions_by_hand():
    def run(w, a, p, t):
        return e2e.TrainRun(w, a, p, t, 1.0, 0.5, t - 1.0, 0.5, t - 1.0, 3, 30, 30, 4)

    runs = [run("x", "ring", "sequential", 4.0), run("x", "ring", "wfbp", 2.0),
            run("x", "tree", "sequential", 3.0), run("x", "tree", "wfbp", 1.5),
            run("x", "mt", "sequential", 2.5), run("x", "mt", "wfbp", 1.2),
            run("y", "ring", "sequential", 10.0), run("y", "ring", "wfbp", 8.0),
            run("y", "tree", "sequential", 5.0), run("y", "tree", "wfbp", 4.0),
            run("y", "mt", "sequential", 4.5), run("y", "mt", "wfbp", 3.0)]
    assert e2e.baseline_policy(runs) == "wfbp"
    rows = {(r["workload"], r["algorithm"], r["policy"]): r for r in e2e.table_rows(runs)}
    assert rows[("x", "mt", "sequential")]["reduction_vs_ring_percent"] == pytest.approx(100 * (1 - 2.5 / 4.0))
    assert rows[("x", "mt", "sequential")]["reduction_vs_wfbp_percent"] == pytest.approx(100 * (1 - 2.5 / 1.2))
    assert rows[("y", "tree", "wfbp")]["reduction_vs_ring_percent"] == pytest.approx(50.0)
    vs_ring, vs_best = e2e.best_reductions(runs, "mt", "wfbp")
    assert (vs_ring.percent, vs_ring.workload) == (pytest.approx(100 * (1 - 3.0 / 8.0)), "y")
    # against the faster of ring and tree per workload: x 1 - 1.2/1.5 = 20 %, y 1 - 3/4 = 25 %
    assert (vs_best.percent, vs_best.workload) == (pytest.approx(25.0), "y")
    md = e2e.policy_markdown(runs, "y", "mt", compare_with=("wfbp", "sequential"))
    assert "| sequential | 4,500.00 |" in md and f"{100 * (1 - 4.5 / 3.0):+.1f} %" in md


def test_reduction_percent_edges():
    assert e2e.reduction_percent(1.0, 4.0) == 75.0
    assert e2e.reduction_percent(5.0, 4.0) == -25.0
    assert math.isnan(e2e.reduction_percent(1.0, 0.0))
    assert e2e.baseline_policy([e2e.TrainRun("w", "ring", "p3", 1, 1, 0, 0, 1, 0, 0, 0, 0, 2)]) is None
    assert e2e.reduction_column("fusion (8 MiB)") == "reduction_vs_fusion_8_MiB_percent"


# ---- inputs ------------------------------------------------------------------------------


def test_make_policies_names_options_and_refusals():
    pols = e2e.make_policies("all", {"slice_bytes": 4096, "strict": True})
    assert [p.name for p in pols] == list(POLICIES)
    assert next(p for p in pols if p.name == "p3").slice_bytes == 4096
    assert next(p for p in pols if p.name == "prophet").strict is True
    assert [p.name for p in e2e.make_policies(" WFBP,dear , wfbp")] == ["wfbp", "dear"]
    assert e2e.make_policies("dear", {"dear_threshold_bytes": 0})[0].threshold_bytes == 0
    with pytest.raises(ConfigError, match=r"--slice-bytes applies to the p3 policy.*policies: wfbp"):
        e2e.make_policies("wfbp", {"slice_bytes": 4096}, {"slice_bytes": "--slice-bytes"})
    with pytest.raises(ConfigError, match=r"--policy 'fifo': unknown policy \(allowed: all, sequential"):
        e2e.make_policies("wfbp,fifo")
    with pytest.raises(ConfigError, match="names no policy"):
        e2e.make_policies(" , ")


def test_resolve_workloads(tmp_path):
    assert [w.name for w in e2e.resolve_workloads("all")] == list(WORKLOADS)
    assert [w.name for w in e2e.resolve_workloads("resnet50, RESNET50,ncf")] == ["resnet50", "ncf"]
    f = tmp_path / "tiny.toml"
    f.write_text('name = "tiny"\ninput = [8]\n[[layers]]\nkind = "linear"\nout_features = 4\n')
    ws = e2e.resolve_workloads(f"ncf,{f}")
    assert [w.name for w in ws] == ["ncf", "tiny"] and ws[1].params == 8 * 4 + 4
    with pytest.raises(ConfigError, match=r"--workloads: workload 'resnet' is unknown \(allowed: alexnet"):
        e2e.resolve_workloads("resnet")
    with pytest.raises(ConfigError, match=r"--workloads '.*nope.toml': .*no such"):
        e2e.resolve_workloads(str(tmp_path / "nope.toml"))
    clash = tmp_path / "ncf.json"
    clash.write_text('{"name": "ncf", "input": [8], "layers": [{"kind": "linear", "out_features": 2}]}')
    with pytest.raises(ConfigError, match="two different workloads are named 'ncf'"):
        e2e.resolve_workloads(f"ncf,{clash}")
    with pytest.raises(ConfigError, match="names no workload"):
        e2e.resolve_workloads("")
