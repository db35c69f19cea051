"""Compression with error feedback: conservation in exact arithmetic, the quantisers' error
formulas, wire bytes, the timeline's costs against hand sums, convergence to the target."""

from __future__ import annotations

import numpy as np
import pytest

from hw_models.training.comm import AlphaBeta
from hw_models.training.costs import LayerCost
from hw_models.training.policies import WaitFreeBackprop
from hw_models.training.systems.compression import (CompressedComm, Compressor, WorkerCompressor, compressed_timeline,
                                                    compression_costs, ef_sgd, eightbit, onebit, topk)
from hw_models.training.systems.tasks import DEFAULT_LR, DEFAULT_TARGET, Task, sync_sgd
from hw_models.training.timeline import simulate
from noc.base.errors import ConfigError


@pytest.mark.parametrize("kind", ["topk", "randk", "threshold"])
def test_error_feedback_conserves_the_gradient_sum_exactly(kind):
    """Integer-valued gradients: every sum is exact in float64, so sent + residual must equal
    the gradients' sum bit for bit."""
    rng = np.random.default_rng(1)
    slices = [slice(0, 37), slice(37, 100)]
    wc = WorkerCompressor(Compressor(kind, 0.1, refresh=3), slices, seed=5)
    e = np.zeros(100)
    total_g = np.zeros(100)
    total_sent = np.zeros(100)
    for t in range(40):
        g = rng.integers(-1000, 1000, 100).astype(np.float64)
        p = g + e
        c = wc(p, t)
        e = p - c
        total_g += g
        total_sent += c
    assert np.array_equal(total_sent + e, total_g)


def test_topk_keeps_the_largest_magnitudes():
    x = np.array([3.0, -7.0, 0.5, 6.0, -1.0])
    assert topk(x, 2).tolist() == [0.0, -7.0, 0.0, 6.0, 0.0]


def test_onebit_error_is_the_closed_form():
    rng = np.random.default_rng(2)
    for n in (1, 7, 1000):
        x = rng.normal(size=n)
        q = onebit(x)
        err2 = np.sum((x - q) ** 2)
        l1, l2 = np.abs(x).sum(), np.sum(x * x)
        assert err2 == pytest.approx(l2 - l1 * l1 / n, rel=1e-9, abs=1e-12)
        assert err2 <= (1 - 1 / n) * l2 + 1e-12  # the delta-compressor bound


def test_eightbit_error_within_half_a_step():
    rng = np.random.default_rng(3)
    x = rng.standard_cauchy(5000)
    q = eightbit(x)
    scale = np.abs(x).max() / 127
    assert np.max(np.abs(x - q)) <= scale / 2 * (1 + 1e-12)
    assert len(np.unique(np.rint(q / scale))) <= 255


def test_threshold_is_refreshed_only_every_refresh_iterations():
    wc = WorkerCompressor(Compressor("threshold", 0.1, refresh=4), [slice(0, 50)], seed=0)
    x = np.arange(1.0, 51.0)
    assert np.count_nonzero(wc(x, 0)) == 5  # threshold 46
    assert np.count_nonzero(wc(x + 10, 1)) == 15  # old threshold, larger values: more kept
    assert np.count_nonzero(wc(x + 10, 4)) == 5  # refreshed


def test_wire_bytes():
    n = 1000
    assert Compressor("topk", 0.01).wire_bytes(n) == 10 * 8
    assert Compressor("randk", 0.01).wire_bytes(n) == 10 * 4 + 8
    assert Compressor("onebit").wire_bytes(n) == 125 + 4
    assert Compressor("eightbit").wire_bytes(n) == 1004
    assert Compressor("none").wire_bytes(n) == 4000


def test_timeline_costs_against_hand_sums():
    layers = [LayerCost("a", 1e-3, 2e-3, 4_000_000), LayerCost("b", 5e-4, 1e-3, 400_000)]
    ab = AlphaBeta(1e-6, 10e9, 8)
    comp = Compressor("topk", 0.01)
    bw = 100e9
    costs, opt = compression_costs(layers, comp, 8, bw)
    assert costs[0].bwd_s == pytest.approx(2e-3 + 4 * 4_000_000 / bw)
    assert opt.per_layer_s[1] == pytest.approx((8 * 1000 * 8 + 2 * 400_000) / bw)
    cc = CompressedComm(ab, comp)
    assert cc.allreduce_s(4_000_000) == pytest.approx(ab.all_gather_s(8 * 10_000 * 8))
    r = compressed_timeline(layers, ab, comp, WaitFreeBackprop(), mem_bytes_per_s=bw)
    plain = simulate(layers, ab, WaitFreeBackprop())
    assert r.compute_s == pytest.approx(plain.compute_s + sum(c.bwd_s - x.bwd_s for c, x in zip(costs, layers))
                                        + sum(opt.per_layer_s))
    # 'none' is the plain timeline
    none = compressed_timeline(layers, ab, Compressor("none"), WaitFreeBackprop(), mem_bytes_per_s=bw)
    assert none.iteration_s == pytest.approx(plain.iteration_s)
    # error averaging adds the amortised dense all-reduce
    avg = compressed_timeline(layers, ab, comp, WaitFreeBackprop(), mem_bytes_per_s=bw, fix="error_averaging",
                              average_every=5)
    assert avg.iteration_s == pytest.approx(r.iteration_s + ab.allreduce_s(4_400_000) / 5)


@pytest.mark.parametrize("comp", [Compressor("topk", 0.01), Compressor("onebit"), Compressor("threshold", 0.01)])
def test_compressed_sgd_with_error_feedback_reaches_the_target(comp):
    task = Task("logreg", workers=8, batch=16, seed=0)
    lr, tg = DEFAULT_LR["logreg"], DEFAULT_TARGET["logreg"]
    full = sync_sgd(task, lr, target=tg, max_iterations=800)
    r = ef_sgd(task, comp, lr, target=tg, max_iterations=800)
    assert r.iterations_to_target is not None
    assert r.iterations_to_target <= 2 * full.iterations_to_target
    assert r.extra["bytes_per_worker_iteration"] < r.extra["dense_bytes"] / 10


def test_error_feedback_helps_topk():
    task = Task("logreg", workers=8, batch=16, seed=0)
    lr, tg = DEFAULT_LR["logreg"], DEFAULT_TARGET["logreg"]
    ef = ef_sgd(task, Compressor("topk", 0.01), lr, target=tg, max_iterations=400)
    raw = ef_sgd(task, Compressor("topk", 0.01), lr, error_feedback=False, target=tg, max_iterations=400)
    assert ef.iterations_to_target is not None
    assert raw.iterations_to_target is None or raw.iterations_to_target > ef.iterations_to_target


def test_no_compression_is_sync_sgd():
    task = Task("mlp", workers=4, batch=8, hidden=8, seed=2)
    a = ef_sgd(task, Compressor("none"), 0.2, target=0.9, max_iterations=60, eval_every=10)
    b = sync_sgd(task, 0.2, target=0.9, max_iterations=60, eval_every=10)
    assert a.curve == b.curve


def test_bad_compressor_input():
    with pytest.raises(ConfigError, match="compressor = 'gzip'"):
        Compressor("gzip")
    with pytest.raises(ConfigError, match="ratio = 0"):
        Compressor("topk", 0)
    task = Task("logreg", workers=2)
    with pytest.raises(ConfigError, match="fix = 'step_ahead' corrects error feedback"):
        ef_sgd(task, Compressor("topk"), 0.1, error_feedback=False, fix="step_ahead", target=0.9)
