"""The parameter server's layer-by-layer event simulation: with equally fast workers,
synchronous mode against the synchronous layer-by-layer timeline (a second implementation),
asynchronous mode against a lone worker's timeline (the known case once workers stagger),
overlap against the whole-iteration model, the bounded-staleness invariant, and the replay."""

from __future__ import annotations

import numpy as np
import pytest

from hw_models.training.costs import LayerCost
from hw_models.training.systems.ps import PushPull, Stragglers, ps_convergence, simulate_ps
from hw_models.training.systems.ps_layers import simulate_ps_layers
from hw_models.training.systems.tasks import Task, sync_sgd
from hw_models.training.timeline import simulate
from noc.base.errors import ConfigError

LAYERS = [LayerCost("l0", 1e-3, 4e-3, 100_000), LayerCost("relu", 1e-3, 1e-3, 0),
          LayerCost("l1", 1e-3, 1e-3, 3_000_000), LayerCost("l2", 2e-3, 2e-3, 1_000_000)]


class Linear:
    """All-worker push and pull, linear with a start-up cost; ``scale``: 1/N for a lone worker."""

    def __init__(self, n, sec_per_byte, scale=1.0, workers=None):
        self.num_workers = n if workers is None else workers
        self.a, self.scale = sec_per_byte, scale

    def allreduce_s(self, b):
        return self.reduce_scatter_s(b) + self.all_gather_s(b)

    def reduce_scatter_s(self, b):
        return self.scale * (self.a * b + 1e-5)

    def all_gather_s(self, b):
        return self.scale * (1.2 * self.a * b + 2e-5)


def costs(comm):
    push = [comm.reduce_scatter_s(x.grad_bytes) if x.grad_bytes else 0.0 for x in LAYERS]
    pull = [comm.all_gather_s(x.grad_bytes) if x.grad_bytes else 0.0 for x in LAYERS]
    return push, pull


@pytest.mark.parametrize("a", [3e-10, 1e-9, 3e-9])
@pytest.mark.parametrize("eager", [False, True])
@pytest.mark.parametrize("n", [2, 4])
def test_sync_equal_speeds_is_the_layer_by_layer_timeline(a, eager, n):
    comm = Linear(n, a)
    run = simulate_ps_layers(LAYERS, *costs(comm), n, mode="sync", eager=eager, gradients=n * 20)
    assert run.time_per_iteration_s() == pytest.approx(simulate(LAYERS, comm, PushPull(eager)).iteration_s, rel=1e-9)
    assert all(u.staleness() == (0,) * n for u in run.updates)


def _worker_period(run, w):
    return np.diff([u.time_s for u in run.updates if u.workers == (w,)])[-10:]


@pytest.mark.parametrize("eager, a", [(False, 1e-9), (False, 3e-10), (True, 3e-10)])
def test_async_equal_speeds_is_a_lone_workers_timeline(eager, a):
    n = 4
    comm = Linear(n, a)
    run = simulate_ps_layers(LAYERS, *costs(comm), n, mode="async", eager=eager, gradients=n * 150)
    lone = simulate(LAYERS, Linear(n, a, scale=1 / n, workers=1), PushPull(eager)).iteration_s
    for w in range(n):
        assert _worker_period(run, w) == pytest.approx([lone] * 10, rel=1e-9)
    if not eager:  # staggered round robin, as in the whole-iteration model
        assert {u.staleness()[0] for u in run.updates[n * 10:]} == {n - 1}


def test_pushes_and_pulls_overlap_compute():
    # the whole-iteration model: compute, then the push, then the pull; here they overlap
    n, comm = 4, Linear(4, 1e-9)
    push, pull = costs(comm)
    layered = simulate_ps_layers(LAYERS, push, pull, n, mode="async", gradients=n * 150)
    whole = simulate_ps(n, sum(x.fwd_s + x.bwd_s for x in LAYERS), sum(push), sum(pull), mode="async",
                        gradients=n * 150)
    assert _worker_period(layered, 0)[-1] < np.diff([u.time_s for u in whole.updates if u.workers == (0,)])[-1]


def test_stragglers_sync_waits_async_does_not():
    n, comm = 4, Linear(4, 3e-10)
    strag = Stragglers.parse("slow:1:3", n)
    s = simulate_ps_layers(LAYERS, *costs(comm), n, mode="sync", stragglers=strag, gradients=n * 30)
    a = simulate_ps_layers(LAYERS, *costs(comm), n, mode="async", eager=True, stragglers=strag, gradients=n * 30)
    slow_compute = 3 * sum(x.fwd_s + x.bwd_s for x in LAYERS)
    assert s.time_per_iteration_s() >= slow_compute
    assert a.time_per_iteration_s() < 0.6 * s.time_per_iteration_s()
    assert a.max_staleness() > n - 1  # the straggler's gradients are older


@pytest.mark.parametrize("bound", [0, 2])
def test_ssp_bound(bound):
    n = 5
    run = simulate_ps_layers(LAYERS, *costs(Linear(n, 3e-10)), n, mode=f"ssp:{bound}",
                             stragglers=Stragglers.parse("slow:1:4+lognormal:0.3", n), gradients=200, seed=1)
    done = np.zeros(n, dtype=int)
    for u in run.updates:
        done[u.workers[0]] += 1
        assert done.max() - done.min() <= bound + 1


def test_sync_replay_equals_all_reduce_sgd_and_runs_repeat():
    task = Task("logreg", workers=4, batch=8, seed=1)
    kw = dict(mode="sync", stragglers=Stragglers.parse("lognormal:0.5", 4), gradients=4 * 40, seed=2)
    run = simulate_ps_layers(LAYERS, *costs(Linear(4, 1e-9)), 4, **kw)
    assert run == simulate_ps_layers(LAYERS, *costs(Linear(4, 1e-9)), 4, **kw)
    a = ps_convergence(task, run, 0.2, target=0.999, eval_every=10)
    b = sync_sgd(task, 0.2, target=0.999, max_iterations=40, eval_every=10)
    assert a.curve == b.curve


def test_bad_input():
    with pytest.raises(ConfigError, match="mode = 'bsp'"):
        simulate_ps_layers(LAYERS, [0.0] * 4, [0.0] * 4, 4, mode="bsp")
    with pytest.raises(ConfigError, match="one value per layer"):
        simulate_ps_layers(LAYERS, [0.0] * 3, [0.0] * 4, 4)
