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
