"""DLion against its definitions: weighted batching equalises finish times (exact shares),
the prioritised exchange sends the top-k by magnitude that fit bandwidth x time, with no
technique on the run is synchronous SGD, and the techniques converge on digits."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hw_models.training.hetero import Profile
from hw_models.training.systems.dlion import (ENTRY_BYTES, Net, dlion, link_entries, parse_techniques, topk,
                                              weighted_batches)
from hw_models.training.systems.tasks import Task, sync_sgd
from noc.base.errors import ConfigError


def test_weighted_shares_make_finish_times_equal():
    f = np.array([1.0, 1.5, 3.0, 7.0])
    share, b = weighted_batches(64, f)
    t = share * f
    assert np.allclose(t, t[0], rtol=1e-12) and share.sum() == pytest.approx(64)
    assert b.sum() == 64 and np.all(b >= 1) and np.all(np.abs(b - share) < 1)
    _, even = weighted_batches(12, [2.0, 2.0, 2.0])
    assert list(even) == [4, 4, 4]


def test_prioritised_link_sends_top_k_within_bandwidth_times_time():
    assert link_entries(1000, 800.0, 0.5) == math.floor(800 * 0.5 / ENTRY_BYTES)
    assert link_entries(10, 1e9, 1.0) == 10
    v = np.array([0.1, -5.0, 2.0, -0.3, 4.0])
    out = topk(v, 2)
    assert list(out) == [0, -5.0, 0, 0, 4.0]
    assert list(topk(v, 0)) == [0.0] * 5 and list(topk(v, 9)) == list(v)


@pytest.fixture(scope="module")
def task():
    return Task("logreg", workers=4, batch=16, seed=0)


NET = Net(compute_s=1.0, link_s=0.5, allreduce_s=0.75, model_bytes=4 * 650)


def test_no_technique_is_synchronous_sgd(task):
    none = Profile.parse("none", 4)
    r = dlion(task, (), NET, none, none, 0.1, target=0.95, max_iterations=300)
    ref = sync_sgd(task, 0.1, target=0.95, max_iterations=300)
    assert r.iterations_to_target == ref.iterations_to_target
    assert [a for _, a in r.curve] == pytest.approx([a for _, a in ref.curve], abs=1e-12)
    # equal workers and links: a round is compute + one full-model link transfer
    assert r.extra["mean_round_s"] == pytest.approx(NET.compute_s + NET.link_s, rel=1e-12)


def test_techniques_converge_and_batching_removes_the_straggler_wait(task):
    w = Profile.parse("slow:1:4", 4)
    lk = Profile.parse("slow:1:8", 4)
    base = dlion(task, (), NET, w, lk, 0.1, target=0.95, max_iterations=600)
    bat = dlion(task, ("batching",), NET, w, lk, 0.1, target=0.95, max_iterations=600)
    allt = dlion(task, ("batching", "priority", "transfer"), NET, w, lk, 0.1, target=0.95, max_iterations=600)
    for r in (base, bat, allt):
        assert r.iterations_to_target is not None
    # without batching the round waits for the 4x slower worker and the 8x slower link
    assert base.extra["mean_round_s"] == pytest.approx(4 * NET.compute_s + 8 * NET.link_s, rel=1e-12)
    # with it every worker's compute is N B / sum(1/f) * f_i / B (up to integer batches)
    share_t = 4 / (3 + 1 / 4) * NET.compute_s
    assert bat.extra["mean_round_s"] - 8 * NET.link_s == pytest.approx(share_t, rel=0.05)
    assert allt.extra["time_to_target_s"] < bat.extra["time_to_target_s"] < base.extra["time_to_target_s"]


def test_same_seed_same_run(task):
    w = Profile.parse("walk:0.3+lognormal:0.2", 4, seed=4)
    a = dlion(task, ("batching", "priority"), NET, w, w, 0.1, target=0.95, max_iterations=100, seed=4)
    b = dlion(task, ("batching", "priority"), NET, w, w, 0.1, target=0.95, max_iterations=100, seed=4)
    assert a.curve == b.curve and a.extra == b.extra


def test_technique_sets_parse():
    assert parse_techniques("all") == [(), ("batching",), ("priority",), ("transfer",),
                                       ("batching", "priority", "transfer")]
    assert parse_techniques("transfer+batching,none") == [("batching", "transfer"), ()]
    with pytest.raises(ConfigError, match="'gossip' unknown"):
        parse_techniques("gossip")


def _timeline_net(policy):
    """Three layers on an alpha-beta network: a link's time for ``b`` bytes has a start-up
    cost, so the layer-by-layer exchange pays it per layer."""
    from hw_models.training.comm import AlphaBeta
    from hw_models.training.costs import LayerCost

    layers = (LayerCost("a", 0.10, 0.20, 1000), LayerCost("b", 0.05, 0.10, 600), LayerCost("c", 0.05, 0.10, 1000))
    link = AlphaBeta(latency_s=1e-3, bytes_per_s=4e3, num_workers=4)
    ring = AlphaBeta(latency_s=1e-3, bytes_per_s=2e3, num_workers=4)
    m = sum(x.grad_bytes for x in layers)
    c = sum(x.fwd_s + x.bwd_s for x in layers)
    return Net(c, link.allreduce_s(m), ring.allreduce_s(m), m, layers, link.allreduce_s, ring, policy)


@pytest.mark.parametrize("techs", [(), ("batching",), ("priority",), ("batching", "priority", "transfer")])
def test_fused_timeline_reproduces_the_round_formula(task, techs):
    """One exchange after the backward pass on the timeline is compute + exchange (+ transfer),
    the closed form's round, for every technique set and the all-reduce baseline."""
    from hw_models.training.systems.dlion import allreduce_baseline

    fused = _timeline_net("fused")
    closed = Net(fused.compute_s, fused.link_s, fused.allreduce_s, fused.model_bytes)
    w = Profile.parse("slow:1:3+walk:0.2", 4, seed=1)
    lk = Profile.parse("slow:2:5+walk:0.2", 4, seed=2)
    kw = dict(target=0.95, max_iterations=80, transfer_every=7, seed=1)
    a = dlion(task, techs, fused, w, lk, 0.1, **kw)
    b = dlion(task, techs, closed, w, lk, 0.1, **kw)
    assert a.extra["seconds"] == pytest.approx(b.extra["seconds"], rel=1e-12)
    assert a.curve == b.curve
    kw.pop("transfer_every")
    x = allreduce_baseline(task, fused, w, lk, 0.1, **kw)
    y = allreduce_baseline(task, closed, w, lk, 0.1, **kw)
    assert x.extra["seconds"] == pytest.approx(y.extra["seconds"], rel=1e-12)


def test_layer_by_layer_exchange_overlaps_the_backward_pass(task):
    """wfbp: the front layers' exchange waits behind the backward pass, the rest overlaps it,
    so a round is shorter than fused's yet at least the compute; by hand on one round with
    equal workers and links: backward c, b, a end at 0.30, 0.40, 0.60 s (after 0.2 s forward),
    each layer's exchange takes the link callable's time for its bytes."""
    none = Profile.parse("none", 4)
    net = _timeline_net("wfbp")
    r = dlion(task, (), net, none, none, 0.1, target=0.95, max_iterations=5)
    t = lambda b: 2 * (3 * 1e-3 + 0.75 * b / 4e3)  # noqa: E731 - the link callable: AlphaBeta ring all-reduce, 4 workers
    # exchanges: c at 0.30 (ends 0.30 + t(1000)), b after it, a from max(0.60, end of b)
    end_c = 0.30 + t(1000)
    end_b = max(0.40, end_c) + t(600)
    end_a = max(0.60, end_b) + t(1000)
    assert r.extra["mean_round_s"] == pytest.approx(end_a, rel=1e-9)
    fused = dlion(task, (), _timeline_net("fused"), none, none, 0.1, target=0.95, max_iterations=5)
    assert end_a < fused.extra["mean_round_s"]


def test_batching_never_lengthens_a_round_the_profiles_drift_between_rounds(task):
    """Round by round on the same drifting workers and links, batching's round is at most the
    round without it (the slowest link is the same, the slowest worker's compute no longer);
    yet its mean over its own rounds can be the longer one, because it averages other rounds
    of a walk whose links slow down: the mean over the rounds both ran is the comparable one."""
    from hw_models.training.systems.runner import Setting, run_dlion

    w = Profile.parse("slow:1:3+walk:0.3", 4, seed=3)
    lk = Profile.parse("walk:0.3", 4, seed=4)
    net = _timeline_net("wfbp")
    kw = dict(target=0.95, max_iterations=120, seed=3)
    none = dlion(task, (), net, w, lk, 0.1, **kw)
    bat = dlion(task, ("batching",), net, w, lk, 0.1, **kw)
    common = min(len(none.extra["round_s"]), len(bat.extra["round_s"]))
    assert common >= 20 and all(b <= a * (1 + 1e-12) for a, b in zip(none.extra["round_s"][:common], bat.extra["round_s"][:common]))
    assert math.fsum(none.extra["round_s"]) == pytest.approx(none.extra["seconds"], rel=1e-12)
    # the command's column is that mean, over the rounds every round-timed run ran
    from hw_models.training.comm import AlphaBeta

    comm = AlphaBeta(latency_s=1e-3, bytes_per_s=4e3, num_workers=4)
    st = Setting(None, 16, net.layers, comm, "ring", 1e12, 320e9, task, 0.1, 0.95, 120, lambda s: comm)
    timing, _ = run_dlion(st, [(), ("batching",)], "slow:1:3+walk:0.3", "walk:0.3", seed=3, baselines=())
    per = {row["techniques"]: _round_s(st, row) for row in timing}
    n = min(len(v) for v in per.values())
    assert [row["techniques"] for row in timing] == ["allreduce", "none", "batching"]
    for row in timing:
        assert row["common_rounds"] == n
        assert row["common_round_s"] == pytest.approx(math.fsum(per[row["techniques"]][:n]) / n, rel=1e-12)


def _round_s(st, row):
    """The rounds' seconds of ``row``'s run, as run_dlion's network makes them (a link's time
    for b bytes: the all-gather of 4 b)."""
    from hw_models.training.systems.dlion import Net, allreduce_baseline

    net = st.comm
    m = st.model_bytes
    nt = Net(st.compute_s, net.all_gather_s(4 * m), net.allreduce_s(m), m, tuple(st.layers),
             lambda b: net.all_gather_s(4 * b), net, "wfbp")
    wp, lp = Profile.parse("slow:1:3+walk:0.3", 4, seed=3), Profile.parse("walk:0.3", 4, seed=4)
    kw = dict(target=0.95, max_iterations=120, seed=3)
    if row["techniques"] == "allreduce":
        r = allreduce_baseline(st.task, nt, wp, lp, 0.1, **kw)
    else:
        techs = () if row["techniques"] == "none" else tuple(row["techniques"].split("+"))
        r = dlion(st.task, techs, nt, wp, lp, 0.1, **kw)
    return r.extra["round_s"]
