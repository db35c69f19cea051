"""Parameter server: the push/pull schedule (verified as an all-reduce), the coupled and eager
pull policies on hand-worked timelines, the event simulation against closed forms, the
bounded-staleness invariant, and convergence (sync equals all-reduce SGD bit for bit)."""

from __future__ import annotations

import numpy as np
import pytest

from hw_models.training.costs import LayerCost
from hw_models.training.systems.ps import (PushPull, Stragglers, ps_convergence, ps_schedule, server_nodes,
                                           simulate_ps)
from hw_models.training.systems.tasks import DEFAULT_LR, DEFAULT_TARGET, Task, sync_sgd
from hw_models.training.timeline import simulate
from noc.base.errors import ConfigError
from noc.topology import torus


class Linear:
    """Push (reduce-scatter) and pull (all-gather) at 1 ns per byte."""

    num_workers = 4

    def allreduce_s(self, n):
        return 2e-9 * n

    def reduce_scatter_s(self, n):
        return 1e-9 * n

    def all_gather_s(self, n):
        return 1e-9 * n


def test_server_placement():
    assert server_nodes("spread", 16, 4) == (0, 4, 8, 12)
    assert server_nodes("first", 16, 3) == (0, 1, 2)
    assert server_nodes("3,7", 16, 2) == (3, 7)
    with pytest.raises(ConfigError, match="servers = 17"):
        server_nodes("spread", 16, 17)
    with pytest.raises(ConfigError, match="placement = '3,3'"):
        server_nodes("3,3", 16, 2)


@pytest.mark.parametrize("servers", [(0,), (0, 5), (1, 2, 3, 9)])
def test_ps_schedule_is_an_all_reduce(servers):
    t = torus((4, 4))
    s = ps_schedule(t, servers)  # ps_schedule runs the functional verifier itself
    assert s.num_flows == len(servers) and s.num_steps == 2
    assert s.num_transfers == 2 * len(servers) * (t.num_nodes - 1)
    push = s.op == 0
    for f, srv in enumerate(servers):
        assert set(s.dst[push & (s.flow == f)].tolist()) == {srv}


def test_coupled_and_eager_pull_by_hand():
    # two layers; backward: layer 1 (1 ms, 1 MB) then layer 0 (1 ms, 1 MB); push and pull 1 ms each
    layers = [LayerCost("l0", 1e-3, 1e-3, 1_000_000), LayerCost("l1", 1e-3, 1e-3, 1_000_000)]
    c = simulate(layers, Linear(), PushPull(False), iterations=2)
    e = simulate(layers, Linear(), PushPull(True), iterations=2)
    # coupled: fwd 0-2, bwd 2-4; push l1 3-4, push l0 4-5, pull l1 5-6, pull l0 6-7; next fwd l0 at 7
    assert c.iterations[0].iteration_s == pytest.approx(7e-3)
    # eager: push l1 3-4, pull l1 4-5 (ahead of push l0), push l0 5-6, pull l0 6-7: the same end,
    # but l0's pull comes last either way; with pulls first in forward order the front layer waits
    assert e.iterations[0].iteration_s == pytest.approx(7e-3)
    kinds_c = [(ev.kind, ev.pieces[0].layer) for ev in c.comm_events if ev.iteration == 0]
    kinds_e = [(ev.kind, ev.pieces[0].layer) for ev in e.comm_events if ev.iteration == 0]
    assert kinds_c == [("reduce_scatter", 1), ("reduce_scatter", 0), ("all_gather", 1), ("all_gather", 0)]
    assert kinds_e == [("reduce_scatter", 1), ("all_gather", 1), ("reduce_scatter", 0), ("all_gather", 0)]


def test_eager_pull_lets_the_front_layer_start_earlier():
    # front layer small and late, back layer big: coupled pull makes layer 0 wait for all pushes
    layers = [LayerCost("l0", 1e-3, 4e-3, 100_000), LayerCost("l1", 1e-3, 1e-3, 3_000_000)]
    c = simulate(layers, Linear(), PushPull(False), iterations=2)
    e = simulate(layers, Linear(), PushPull(True), iterations=2)
    # bwd l1 2-3, push l1 3-6; bwd l0 3-7; eager: pull l1 6-9, push l0 9-9.1, pull l0 9.1-9.2 -> 9.2
    # coupled: push l0 7-7.1, pull l1 7.1-10.1, pull l0 10.1-10.2 -> 10.2
    assert c.iterations[0].iteration_s == pytest.approx(10.2e-3)
    assert e.iterations[0].iteration_s == pytest.approx(9.2e-3)


def test_sync_round_is_compute_push_pull():
    r = simulate_ps(4, 0.1, 0.04, 0.02, mode="sync", gradients=40)
    assert len(r.updates) == 10
    assert r.time_per_iteration_s() == pytest.approx(0.16)
    assert all(u.staleness() == (0, 0, 0, 0) for u in r.updates)


def test_sync_straggler_sets_the_round():
    r = simulate_ps(4, 0.1, 0.04, 0.02, mode="sync", stragglers=Stragglers.parse("slow:1:3", 4), gradients=40)
    # three pushes at 0.1 (served by 0.13), the straggler's at 0.3 -> 0.31, then four pulls of 0.005
    assert r.time_per_iteration_s() == pytest.approx(0.3 + 0.01 + 0.02)


def test_async_round_robin_staleness_is_n_minus_1():
    n = 6
    r = simulate_ps(n, 0.1, 0.006, 0.006, mode="async", gradients=600)
    stale = [u.staleness()[0] for u in r.updates[5 * n:]]
    assert set(stale) == {n - 1}
    # each worker: compute + its push + its pull (no queueing once staggered)
    assert r.time_per_iteration_s() == pytest.approx(0.1 + 0.001 + 0.001, rel=0.02)


@pytest.mark.parametrize("bound", [0, 1, 3])
def test_ssp_never_lets_a_worker_run_more_than_bound_ahead(bound):
    n = 5
    r = simulate_ps(n, 0.1, 0.01, 0.01, mode=f"ssp:{bound}", stragglers=Stragglers.parse("slow:1:4+lognormal:0.3", n),
                    gradients=300, seed=1)
    done = np.zeros(n, dtype=int)
    for u in r.updates:
        done[u.workers[0]] += 1
        # a gradient of iteration k was started when the slowest had finished >= k - 1 - bound
        assert done.max() - done.min() <= bound + 1
    a = simulate_ps(n, 0.1, 0.01, 0.01, mode="async", stragglers=Stragglers.parse("slow:1:4", n), gradients=300)
    assert r.max_staleness() <= a.max_staleness()


def test_eager_pull_does_not_wait_for_the_push():
    co = simulate_ps(4, 0.1, 0.08, 0.08, mode="async", gradients=400)
    ea = simulate_ps(4, 0.1, 0.08, 0.08, mode="async", eager=True, gradients=400)
    assert ea.time_per_iteration_s() < co.time_per_iteration_s()
    assert ea.mean_staleness() > co.mean_staleness()


@pytest.mark.parametrize("model", ["logreg", "mlp"])
def test_ps_sync_equals_all_reduce_sgd(model):
    task = Task(model, workers=4, batch=8, hidden=8, seed=1)
    run = simulate_ps(4, 0.1, 0.01, 0.01, mode="sync", stragglers=Stragglers.parse("lognormal:0.5", 4),
                      gradients=4 * 60)
    a = ps_convergence(task, run, 0.2, target=0.999, eval_every=10)
    b = sync_sgd(task, 0.2, target=0.999, max_iterations=60, eval_every=10)
    assert a.curve == b.curve


def test_async_with_stragglers_converges_and_staleness_aware_lr_helps():
    task = Task("logreg", workers=8, batch=16, seed=0)
    lr, tg = DEFAULT_LR["logreg"], DEFAULT_TARGET["logreg"]
    run = simulate_ps(8, 0.1, 0.05, 0.05, mode="async", eager=True, stragglers=Stragglers.parse("lognormal:0.5", 8),
                      gradients=8 * 400)
    plain = ps_convergence(task, run, lr, target=tg)
    aware = ps_convergence(task, run, lr, staleness_aware=True, target=tg)
    assert plain.iterations_to_target is not None and aware.iterations_to_target is not None
    assert aware.iterations_to_target < plain.iterations_to_target
    assert aware.extra["time_to_target_s"] == pytest.approx(
        [u.time_s for u in run.updates][8 * aware.iterations_to_target - 1])


def test_bad_ps_input():
    with pytest.raises(ConfigError, match="mode = 'bsp'"):
        simulate_ps(4, 0.1, 0.01, 0.01, mode="bsp")
    with pytest.raises(ConfigError, match="stragglers = 'slow:9:2'"):
        Stragglers.parse("slow:9:2", 4)
    with pytest.raises(ConfigError, match="'gauss:1' is not"):
        Stragglers.parse("gauss:1", 4)


def test_eager_pull_keeps_staleness_bounded_when_the_servers_are_the_bottleneck():
    # pushes take 2x the compute at the servers: without a bound the queue would grow forever
    r = simulate_ps(8, 0.01, 0.16, 0.01, mode="async", eager=True, gradients=8 * 300)
    assert r.max_staleness() <= 3 * 8
    # the servers' throughput sets the rate: 8 pushes of 0.02 s per 8 gradients
    assert r.time_per_iteration_s() == pytest.approx(0.16, rel=0.01)
