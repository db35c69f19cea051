"""DCT's model-parallel compression against its definitions: traffic by exact arithmetic,
keeping every unit gives the exact gradient and plain synchronous SGD, and the compressed
boundary still converges on the MLP task."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hw_models.training.systems.dct_mp import boundary_width, dct_mp_sgd, mp_loss_grad, mp_traffic
from hw_models.training.systems.tasks import Task, sync_sgd
from noc.base.errors import ConfigError


def test_traffic_is_the_boundary_arithmetic():
    w = boundary_width()
    assert w == 2 * 64 + 256
    t = mp_traffic(w, 128, 16, 0.025)
    k = math.ceil(0.025 * w)
    assert t["dense_bytes"] == 2 * 128 * w * 4 * 15 / 16
    assert t["compressed_bytes"] == 2 * 128 * k * 8 * 15 / 16
    assert t["reduction"] == pytest.approx(4 * w / (8 * k), rel=1e-12)
    assert mp_traffic(w, 128, 16, 1.0)["reduction"] == 1.0
    with pytest.raises(ConfigError, match="keep = 0"):
        mp_traffic(w, 1, 2, 0)


def test_keep_all_is_sync_sgd_and_compressed_still_converges():
    task = Task("mlp", workers=4, batch=16, seed=1)
    ref = sync_sgd(task, 0.2, target=0.95, max_iterations=400)
    full = dct_mp_sgd(task, 1.0, 0.2, target=0.95, max_iterations=400)
    assert full.iterations_to_target == ref.iterations_to_target
    assert [a for _, a in full.curve] == pytest.approx([a for _, a in ref.curve], abs=1e-12)
    half = dct_mp_sgd(task, 0.25, 0.2, target=0.9, max_iterations=600)
    assert half.iterations_to_target is not None


def test_keep_all_gradient_is_the_exact_gradient():
    task = Task("mlp", workers=1, batch=8, seed=0)
    w = task.init_params()
    X, y = task.Xtr[:8], task.ytr[:8]
    np.testing.assert_allclose(mp_loss_grad(task, w, X, y, task.hidden)[1], task.loss_grad(w, X, y)[1], rtol=1e-12)


# ---- the hybrid DP x MP iteration on the timeline --------------------------------------------

def _hybrid_case(fc_grad_bytes):
    """Two embeddings and a linear layer; an alpha-beta ring of 4 workers (1 ms, 4 kB/s)."""
    from hw_models.training.comm import AlphaBeta
    from hw_models.training.costs import LayerCost

    layers = (LayerCost("e1", 0.10, 0.20, 1000), LayerCost("e2", 0.10, 0.10, 500),
              LayerCost("fc", 0.05, 0.10, fc_grad_bytes))
    return layers, ("embedding", "embedding", "linear"), AlphaBeta(latency_s=1e-3, bytes_per_s=4e3, num_workers=4)


def test_boundary_bytes_and_the_hybrid_layers_by_hand():
    from hw_models.training.systems.dct_mp import BOUNDARY, alltoall_s, boundary_bytes, hybrid_layers

    assert boundary_bytes(384, 16, None) == 16 * 384 * 4 == boundary_bytes(384, 16, 1.0)
    assert boundary_bytes(384, 16, 0.025) == 16 * 10 * 8  # k = ceil(9.6) = 10 entries of 8 bytes
    assert boundary_bytes(8, 10, 0.25) == 10 * 2 * 8
    layers, kinds, comm = _hybrid_case(400)
    # every worker sends S/4 to each of 3 others: an all-gather of S, 3 steps of 1 ms + 3/4 S / 4 kB/s
    assert alltoall_s(comm, 320) == pytest.approx(3e-3 + 0.75 * 320 / 4e3, rel=1e-12)
    h = hybrid_layers(layers, kinds, comm, 8, 10, None)
    assert [x.name for x in h] == ["e1", "e2", BOUNDARY, "fc"]
    assert [x.grad_bytes for x in h] == [0, 0, 0, 400]  # embeddings sharded: nothing of theirs all-reduced
    assert h[2].fwd_s == h[2].bwd_s == pytest.approx(0.063, rel=1e-12)
    with pytest.raises(ConfigError, match="no embedding layers"):
        hybrid_layers(layers[2:], kinds[2:], comm, 8, 10, None)


def test_hybrid_iteration_time_by_hand():
    """With fc's all-reduce hidden (400 bytes: 2 (3 ms + 75 ms) = 0.156 s, done before fc's next
    forward pass) an iteration is every pass plus the boundary both ways: 0.65 s + 2 x 0.063
    (dense, W 8 x B 10 x 4 bytes) or 2 x 0.033 (keep 0.25: 2 entries x 8 bytes); with it
    exposed (4000 bytes: 1.506 s) the period is fc's forward and backward plus its all-reduce,
    0.05 + 0.1 + 1.506 s, and the boundary hides under it."""
    from hw_models.training.systems.dct_mp import hybrid_iteration

    layers, kinds, comm = _hybrid_case(400)
    assert hybrid_iteration(layers, kinds, comm, 8, 10, None).iteration_s == pytest.approx(0.65 + 2 * 0.063, rel=1e-9)
    assert hybrid_iteration(layers, kinds, comm, 8, 10, 0.25).iteration_s == pytest.approx(0.65 + 2 * 0.033, rel=1e-9)
    layers, kinds, comm = _hybrid_case(4000)
    for keep in (None, 0.25):
        assert hybrid_iteration(layers, kinds, comm, 8, 10, keep).iteration_s == pytest.approx(0.05 + 0.1 + 1.506,
                                                                                               rel=1e-9)


def test_run_dct_mp_rows_are_the_hybrid_iterations_and_the_traffic_formula():
    """NCF on a 2x2 torus at the message level: the rows' times are the hybrid iterations of
    the same layers and network, the bytes the hand formulas."""
    from hw_models.training.systems.dct_mp import hybrid_iteration
    from hw_models.training.systems.runner import run_dct_mp
    from hw_models.training.systems.setup import resolve_setting

    st, _, _ = resolve_setting("compression", "ncf", 64, "multitree-node", "torus:2x2", None, "ring", None, None,
                               "none", None, None, 10, 0)
    kinds = [x.kind for x in st.workload.layers]
    dense, kept = run_dct_mp(st, 0.1)[0]
    w = 384
    assert dense["mp_bytes_per_worker"] == 2 * 64 * w * 4 * 3 / 4
    assert kept["mp_bytes_per_worker"] == 2 * 64 * math.ceil(0.1 * w) * 8 * 3 / 4
    assert dense["wire_bytes_per_worker"] == kept["wire_bytes_per_worker"] == 4 * (
        256 * 256 + 256 + 256 * 128 + 128 + 128 * 64 + 64 + (64 + 64) + 1)  # the MLP and the prediction layer
    assert dense["iteration_s"] == hybrid_iteration(st.layers, kinds, st.comm, w, 64, None).iteration_s
    assert kept["iteration_s"] == hybrid_iteration(st.layers, kinds, st.comm, w, 64, 0.1).iteration_s
    assert kept["iteration_s"] < dense["iteration_s"] < st.sgd_iteration_s()
    assert kept["mp_time_reduction_percent"] == pytest.approx(100 * (1 - kept["iteration_s"] / dense["iteration_s"]))
