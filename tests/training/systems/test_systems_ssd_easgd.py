"""SSD-SGD and the EASGD family: against second implementations, hand-worked exchanges,
the stability condition of the synchronous centre update, an explicit pipeline simulation
of the delayed synchronisation, and convergence."""

from __future__ import annotations

import numpy as np
import pytest

from hw_models.training.systems.easgd import easgd, easgd_round_s, exchange
from hw_models.training.systems.ssd import ssd_iteration_s, ssd_sgd
from hw_models.training.systems.tasks import DEFAULT_LR, DEFAULT_TARGET, Task, run_until, sync_sgd
from noc.base.errors import ConfigError


@pytest.fixture(scope="module")
def task():
    return Task("logreg", workers=4, batch=8, seed=4)


def test_ssd_k1_without_local_steps_is_one_step_delayed_sgd(task):
    a = ssd_sgd(task, 0.2, 1, lr_local=0.0, target=0.999, max_iterations=50, eval_every=5)
    # second implementation: w_{t+1} = w_t - lr * mean_i g_i(w_{t-1})
    samplers = task.samplers()
    w = task.init_params()
    queue = []

    def step(t):
        g = np.array([s.grad(w) for s in samplers]).mean(axis=0)
        if queue:
            w[:] -= 0.2 * queue.pop(0)
        queue.append(g)
        return w

    b = run_until("delayed", task, step, target=0.999, max_iterations=50, eval_every=5)
    assert a.curve == b.curve


def test_ssd_pipeline_rate_matches_an_explicit_event_simulation():
    """Compute and network as two resources: a period's all-reduce starts when its k steps
    are done and the previous all-reduce is over; the period after next waits for it."""
    for comp, upd, ar, k in [(1.0, 0.1, 3.0, 2), (1.0, 0.0, 0.5, 4), (0.2, 0.05, 5.0, 3), (1.0, 0.0, 8.0, 8)]:
        t_c = 0.0
        net_free = 0.0
        done = []  # when each period's all-reduce ends
        ends = []
        for p in range(200):
            if p >= 2:  # period p's local models need the result of period p-2 (one period of delay)
                t_c = max(t_c, done[p - 2])
            t_c += k * (comp + upd)
            start = max(t_c, net_free)
            net_free = start + ar
            done.append(net_free)
            ends.append(t_c)
        rate = (ends[-1] - ends[100]) / (99 * k)
        assert rate == pytest.approx(ssd_iteration_s(comp, upd, ar, k), rel=1e-9)


@pytest.mark.parametrize("k", [2, 8])
def test_ssd_converges(k):
    t = Task("logreg", workers=8, batch=16, seed=0)
    lr, tg = DEFAULT_LR["logreg"], DEFAULT_TARGET["logreg"]
    base = sync_sgd(t, lr, target=tg, max_iterations=800)
    r = ssd_sgd(t, lr, k, target=tg, max_iterations=800)
    assert r.iterations_to_target is not None and r.iterations_to_target <= 2 * base.iterations_to_target


def test_exchanges_by_hand():
    x = np.array([[1.0], [3.0]])
    c = np.array([0.0])
    exchange("sync", x, c, 0.5)
    assert x.ravel().tolist() == [0.5, 1.5] and c.tolist() == [2.0]
    x = np.array([[1.0], [3.0]])
    c = np.array([0.0])
    exchange("async", x, c, 0.5)  # worker 0: d=0.5 -> c=0.5; worker 1: d=1.25 -> c=1.75
    assert x.ravel().tolist() == [0.5, 1.75] and c.tolist() == [1.75]


def test_hogwild_equals_sync_with_equal_speed_workers(task):
    a = easgd(task, "sync", 0.2, alpha=0.1, tau=2, target=0.999, max_iterations=40, eval_every=10)
    b = easgd(task, "hogwild", 0.2, alpha=0.1, tau=2, target=0.999, max_iterations=40, eval_every=10)
    assert a.curve == b.curve


def test_sync_centre_update_is_stable_only_for_n_alpha_below_2():
    t = Task("logreg", workers=8, batch=16, seed=0)
    lr, tg = DEFAULT_LR["logreg"], DEFAULT_TARGET["logreg"]
    ok = easgd(t, "sync", lr, alpha=0.9 / 8, target=tg, max_iterations=600)
    bad = easgd(t, "sync", lr, alpha=2.4 / 8, target=tg, max_iterations=600)
    robin = easgd(t, "async", lr, alpha=2.4 / 8, target=tg, max_iterations=600)
    assert ok.iterations_to_target is not None
    assert bad.iterations_to_target is None
    assert robin.iterations_to_target is not None


def test_measgd_momentum_speeds_up_logreg():
    t = Task("logreg", workers=8, batch=16, seed=0)
    lr, tg = DEFAULT_LR["logreg"], DEFAULT_TARGET["logreg"]
    a = easgd(t, "async", lr, alpha=0.9 / 8, target=tg, max_iterations=600)
    m = easgd(t, "measgd", lr, alpha=0.9 / 8, target=tg, max_iterations=600)
    assert m.iterations_to_target < a.iterations_to_target


def test_easgd_round_times():
    kw = dict(push_all_s=0.8, pull_all_s=0.8, allreduce_s=0.3, num_workers=8, mem_bytes_per_s=1e9)
    m = 10_000_000  # update 0.03 s
    assert easgd_round_s("async", 1, 0.1, m, **kw) == pytest.approx(8 * (0.2 + 0.03))
    assert easgd_round_s("async", 100, 0.1, m, **kw) == pytest.approx(10.0)
    assert easgd_round_s("hogwild", 1, 0.1, m, **kw) == pytest.approx(1.6)
    assert easgd_round_s("sync", 1, 0.1, m, **kw) == pytest.approx(0.1 + 0.3 + 0.03)


def test_bad_easgd_input(task):
    with pytest.raises(ConfigError, match="variant = 'downpour'"):
        easgd(task, "downpour", 0.1, alpha=0.1, target=0.9)
    with pytest.raises(ConfigError, match="alpha = 1.5"):
        easgd(task, "sync", 0.1, alpha=1.5, target=0.9)
    with pytest.raises(ConfigError, match="delay = 0"):
        ssd_sgd(task, 0.1, 0, target=0.9)


# ---- on the iteration timeline -----------------------------------------------------------------

from hw_models.training.comm import AlphaBeta  # noqa: E402
from hw_models.training.costs import LayerCost, OptimizerCost  # noqa: E402
from hw_models.training.policies import WaitFreeBackprop  # noqa: E402
from hw_models.training.systems.easgd import easgd_timeline  # noqa: E402
from hw_models.training.systems.ssd import ssd_timeline  # noqa: E402
from hw_models.training.timeline import Exchange, simulate  # noqa: E402

LAYERS = [LayerCost("l0", 1e-3, 2e-3, 3_000_000), LayerCost("l1", 2e-3, 2e-3, 2_000_000),
          LayerCost("relu", 0.5e-3, 0.5e-3, 0), LayerCost("l2", 3e-3, 2e-3, 1_000_000)]
M = sum(x.grad_bytes for x in LAYERS)
C = sum(x.fwd_s + x.bwd_s for x in LAYERS)
MEM = 1e11


def _eth(bw, latency=1e-5):
    return AlphaBeta(latency_s=latency, bytes_per_s=bw, num_workers=4)


@pytest.mark.parametrize("bw", [1e10, 1e9, 1e8, 2e7])
@pytest.mark.parametrize("k", [1, 2, 3, 8])
def test_ssd_fused_timeline_equals_the_closed_form(bw, k):
    comm = _eth(bw)
    t, _ = ssd_timeline(LAYERS, comm, k, MEM, policy="fused")
    assert t == pytest.approx(ssd_iteration_s(C, 3 * M / MEM, comm.allreduce_s(M), k), rel=1e-9)


@pytest.mark.parametrize("k", [1, 2, 4])
def test_ssd_layer_by_layer_timeline_bounds(k):
    # network-bound: the network is never idle, so a step is the layers' all-reduces over k
    comm = _eth(2e7)
    t, res = ssd_timeline(LAYERS, comm, k, MEM)
    per_layer = sum(comm.allreduce_s(x.grad_bytes) for x in LAYERS if x.grad_bytes)
    assert per_layer > comm.allreduce_s(M)  # three start-up costs instead of one
    assert t == pytest.approx(per_layer / k, rel=1e-9)
    # compute-bound: the exchange is hidden, a step is compute + local updates
    t, _ = ssd_timeline(LAYERS, _eth(1e11), k, MEM)
    assert t == pytest.approx(C + 3 * M / MEM, rel=1e-9)


def test_ssd_timeline_gates_the_period_after_next_layer_by_layer():
    comm = _eth(1e8)
    _, res = ssd_timeline(LAYERS, comm, 2, MEM)
    ar = {(e.iteration, e.layers[0]): e.end_s for e in res.comm_events}
    assert {it for it, _ in ar} == {1, 3, 5, 7, 9, 11, 13, 15}  # only the hand-over steps communicate
    fwd = {(e.iteration, e.layer): e.start_s for e in res.compute_events if e.op == "forward"}
    upd = {(e.iteration, e.layer): e.start_s for e in res.compute_events if e.op == "update"}
    for it in (4, 6, 8):  # first step of a period: waits for the hand-over two periods back (it - 3)
        for i in (0, 1, 3):
            assert upd[(it - 1, i)] >= ar[(it - 3, i)] - 1e-15 and fwd[(it, i)] > upd[(it - 1, i)]
    # and some layer really waited for its all-reduce (the network is the bottleneck here)
    assert any(abs(upd[(it - 1, i)] - ar[(it - 3, i)]) < 1e-12 for it in (6, 8) for i in (0, 1, 3))


def _ps(bw):
    return (lambda b: 2e-5 + 0.9 * b / bw), (lambda b: 3e-5 + 1.2 * b / bw)


@pytest.mark.parametrize("variant", ["sync", "async", "measgd", "hogwild"])
@pytest.mark.parametrize("tau", [1, 3])
@pytest.mark.parametrize("bw", [1e10, 1e8])
def test_easgd_fused_timeline_equals_the_closed_form(variant, tau, bw):
    comm = _eth(bw)
    push, pull = _ps(bw)
    t, _ = easgd_timeline(variant, tau, LAYERS, comm, push, pull, num_workers=4, mem_bytes_per_s=1e9, policy="fused")
    expect = easgd_round_s(variant, tau, C, M, push_all_s=push(M), pull_all_s=pull(M), allreduce_s=comm.allreduce_s(M),
                           num_workers=4, mem_bytes_per_s=1e9) / tau
    assert t == pytest.approx(expect, rel=1e-9)


def test_sync_easgd_tau1_layer_by_layer_is_ssgd_with_the_centre_update():
    comm = _eth(1e8)
    push, pull = _ps(1e8)
    t, _ = easgd_timeline("sync", 1, LAYERS, comm, push, pull, num_workers=4, mem_bytes_per_s=1e9)
    upd = OptimizerCost(per_layer_s=tuple(3 * x.grad_bytes / 1e9 for x in LAYERS))
    ref = simulate(LAYERS, comm, WaitFreeBackprop(), optimizer=upd)
    assert t == pytest.approx(ref.iteration_s, rel=1e-9)


def test_easgd_master_layer_by_layer_network_bound():
    comm = _eth(1e7)
    push, pull = _ps(1e7)
    for variant, serial in (("async", True), ("hogwild", False)):
        t, _ = easgd_timeline(variant, 2, LAYERS, comm, push, pull, num_workers=4, mem_bytes_per_s=1e9)
        per = [push(x.grad_bytes) + pull(x.grad_bytes) for x in LAYERS if x.grad_bytes]
        upd = [4 * 3 * x.grad_bytes / 1e9 for x in LAYERS if x.grad_bytes]
        rnd = sum(p + u for p, u in zip(per, upd)) if serial else sum(max(p, u) for p, u in zip(per, upd))
        assert t == pytest.approx(rnd / 2, rel=1e-9)


def test_bad_exchange():
    with pytest.raises(ConfigError, match="Exchange.every = 0"):
        Exchange(every=0)
    with pytest.raises(ConfigError, match="Exchange.update_on = 'never'"):
        Exchange(update_on="never")
