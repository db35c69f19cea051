"""The convergence harness: exact gradients (finite differences), determinism, shards, and
that plain synchronous SGD reaches the target."""

from __future__ import annotations

import numpy as np
import pytest

from hw_models.training.systems.tasks import DEFAULT_LR, DEFAULT_TARGET, MODELS, Task, sync_sgd
from noc.base.errors import ConfigError


@pytest.fixture(scope="module", params=MODELS)
def task(request):
    return Task(request.param, workers=4, batch=8, hidden=8, seed=3)


def test_gradient_matches_central_differences(task):
    rng = np.random.default_rng(0)
    w = task.init_params() + rng.normal(0, 0.1, task.num_params)
    X, y = task.Xtr[:20], task.ytr[:20]
    _, g = task.loss_grad(w, X, y)
    for k in rng.choice(task.num_params, 25, replace=False):
        e = np.zeros_like(w)
        e[k] = 1e-6
        num = (task.loss_grad(w + e, X, y)[0] - task.loss_grad(w - e, X, y)[0]) / 2e-6
        assert g[k] == pytest.approx(num, rel=1e-5, abs=1e-8)


def test_layer_io_gives_the_weight_gradients(task):
    """K-FAC's per-layer (a, g): a^T g / n is the gradient of the weights and biases."""
    w = task.init_params() + 0.05
    X, y = task.Xtr[:30], task.ytr[:30]
    _, grad = task.loss_grad(w, X, y)
    mats = [s for name, s in task.layer_slices()]
    for k, (a, g) in enumerate(task.layer_io(w, X, y)):
        full = a.T @ g / len(y)
        wsl, bsl = mats[2 * k], mats[2 * k + 1]
        np.testing.assert_allclose(full[:-1].ravel(), grad[wsl], rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(full[-1], grad[bsl], rtol=1e-10, atol=1e-14)


def test_shards_partition_the_training_set(task):
    allidx = np.concatenate(task.shards)
    assert sorted(allidx.tolist()) == list(range(len(task.ytr)))
    assert len(task.yte) + len(task.ytr) == 1797


def test_samplers_are_deterministic_and_stay_in_their_shard(task):
    a, b = task.samplers(), task.samplers()
    for _ in range(10):
        for i, (sa, sb) in enumerate(zip(a, b)):
            Xa, ya = sa.next()
            Xb, yb = sb.next()
            assert np.array_equal(Xa, Xb) and np.array_equal(ya, yb)
    s = task.samplers()[1]
    shard = set(task.shards[1].tolist())
    seen = []
    for _ in range(len(shard) // task.batch):
        s.next()
        seen.extend(s._order[s._pos - task.batch:s._pos].tolist())
    assert set(seen) <= shard and len(seen) == len(set(seen))  # no repeats within an epoch


@pytest.mark.parametrize("model", MODELS)
def test_sync_sgd_reaches_the_target_and_repeats_exactly(model):
    task = Task(model, workers=8, batch=16, seed=0)
    r1 = sync_sgd(task, DEFAULT_LR[model], target=DEFAULT_TARGET[model], max_iterations=600)
    r2 = sync_sgd(task, DEFAULT_LR[model], target=DEFAULT_TARGET[model], max_iterations=600)
    assert r1.iterations_to_target is not None and r1.final_accuracy >= DEFAULT_TARGET[model]
    assert r1 == r2


def test_bad_task_input_names_the_key():
    with pytest.raises(ConfigError, match="model = 'cnn'"):
        Task("cnn")
    with pytest.raises(ConfigError, match="workers = 0"):
        Task("logreg", workers=0)
