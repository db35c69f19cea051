"""K-FAC and SPD-KFAC: factor dimensions from layers by hand, the placement against a
brute-force optimum (Graham's LPT bound), the timeline on a free network against a hand
sum, and K-FAC's convergence (and its SGD limit under huge damping)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from hw_models.training.comm import AlphaBeta
from hw_models.training.costs import LayerCost
from hw_models.training.layers import Gemm, gemm_layer
from hw_models.training.systems.kfac import factors, kfac_sgd, kfac_timeline, place
from hw_models.training.systems.tasks import DEFAULT_LR, DEFAULT_TARGET, Task, sync_sgd
from hw_models.training.workloads import Workload
from noc.base.errors import ConfigError


def small_workload():
    conv = gemm_layer("conv", "conv", (Gemm(m=16, n=8, k=27),), 27 * 8 + 8, 8 * 16, 3 * 36)
    fc = gemm_layer("fc", "linear", (Gemm(m=1, n=10, k=128),), 128 * 10, 10, 128)  # no bias
    return Workload("tiny", (conv, fc))


def test_factor_dimensions_by_hand():
    fs = factors(small_workload(), batch=4)
    assert [(f.name, f.kind, f.dim, f.rows) for f in fs] == [
        ("conv", "A", 28, 64), ("conv", "G", 8, 64), ("fc", "A", 128, 4), ("fc", "G", 10, 4)]
    assert fs[0].nbytes == 28 * 29 // 2 * 4
    assert fs[2].inverse_flops == 128 ** 3


def test_resnet50_factors_come_from_its_layers():
    from hw_models.training.workloads import get_workload

    w = get_workload("resnet50")
    fs = factors(w, 1)
    last = max(f.layer for f in fs)
    fc = [f for f in fs if f.layer == last]
    assert {f.dim for f in fc} == {2049, 1000}  # fc 2048 -> 1000 with bias
    assert max(f.dim for f in fs) == 3 * 3 * 512  # the largest conv's im2col width


def brute_force_makespan(costs, m):
    best = np.inf
    for assign in itertools.product(range(m), repeat=len(costs)):
        load = np.zeros(m)
        for c, w in zip(costs, assign):
            load[w] += c
        best = min(best, load.max())
    return best


@pytest.mark.parametrize("seed", range(6))
def test_balanced_placement_within_grahams_bound(seed):
    rng = np.random.default_rng(seed)
    m = 3
    costs = list((rng.integers(1, 40, size=7) ** 3).astype(float))  # cubic in random dims
    owner = place(costs, m, "balanced")
    load = np.bincount(owner, weights=costs, minlength=m)
    opt = brute_force_makespan(costs, m)
    assert opt <= load.max() <= (4 / 3 - 1 / (3 * m)) * opt + 1e-9
    rr = np.bincount(place(costs, m, "round_robin"), weights=costs, minlength=m)
    assert rr.sum() == pytest.approx(load.sum())


def test_timeline_on_a_free_network_is_a_hand_sum():
    w = small_workload()
    layers = [LayerCost("conv", 1e-3, 2e-3, (27 * 8 + 8) * 4), LayerCost("fc", 5e-4, 1e-3, 1280 * 4)]
    free = AlphaBeta(0.0, float("inf"), 2)
    peak = 1e9
    fs = factors(w, 4)
    fcomp = sum(f.compute_flops for f in fs) / peak
    inv = [f.inverse_flops / (peak * 0.1) for f in fs]
    # balanced on 2 workers: 128^3 alone; 28^3 + 10^3 + 8^3 on the other
    pre = 2 * (28 * 28 * 8 + 28 * 8 * 8 + 128 * 128 * 10 + 128 * 10 * 10) / peak
    for scheme in ("dkfac", "pipelined"):
        t = kfac_timeline(w, 4, layers, free, peak, scheme=scheme, placement="balanced", inverse_efficiency=0.1)
        assert t.inverse_s == pytest.approx(max(inv))
        assert t.precondition_s == pytest.approx(pre)
        assert t.iteration_s == pytest.approx(4.5e-3 + fcomp + max(inv) + pre)
    rr = kfac_timeline(w, 4, layers, free, peak, scheme="dkfac", placement="round_robin", inverse_efficiency=0.1)
    assert rr.inverse_s == pytest.approx(inv[0] + inv[2])  # factors 0 and 2 on worker 0


def test_pipelining_hides_factor_communication():
    w = small_workload()
    layers = [LayerCost("conv", 1e-3, 2e-3, (27 * 8 + 8) * 4), LayerCost("fc", 5e-4, 3e-3, 1280 * 4)]
    slow = AlphaBeta(1e-5, 1e7, 4)
    d = kfac_timeline(w, 4, layers, slow, 1e12, scheme="dkfac")
    p = kfac_timeline(w, 4, layers, slow, 1e12, scheme="pipelined")
    assert p.iteration_s < d.iteration_s and p.exposed_comm_s < d.exposed_comm_s


@pytest.mark.parametrize("model", ["logreg", "mlp"])
def test_kfac_reaches_the_target_in_fewer_iterations_than_sgd(model):
    task = Task(model, workers=8, batch=16, seed=0)
    tg = DEFAULT_TARGET[model]
    sgd = sync_sgd(task, DEFAULT_LR[model], target=tg, max_iterations=600)
    k = kfac_sgd(task, 0.1, damping=1e-2, target=tg, max_iterations=600)
    assert k.iterations_to_target is not None and k.iterations_to_target < sgd.iterations_to_target


def test_kfac_with_huge_damping_is_sgd():
    task = Task("mlp", workers=2, batch=8, hidden=6, seed=5)
    damping = 1e16  # preconditioner ~ I / sqrt(damping) on each side: a step of lr / damping
    k = kfac_sgd(task, 0.3 * damping, damping=damping, decay=0.0, target=0.999, max_iterations=30, eval_every=3)
    s = sync_sgd(task, 0.3, target=0.999, max_iterations=30, eval_every=3)
    assert [a for _, a in k.curve] == pytest.approx([a for _, a in s.curve], abs=1 / len(task.yte) + 1e-12)


def test_bad_kfac_input():
    with pytest.raises(ConfigError, match="placement = 'random'"):
        place([1.0], 2, "random")
    with pytest.raises(ConfigError, match="scheme = 'spd'"):
        kfac_timeline(small_workload(), 4, [LayerCost("a", 0, 0, 0), LayerCost("b", 0, 0, 0)],
                      AlphaBeta(0, 1e9, 2), 1e9, scheme="spd")
