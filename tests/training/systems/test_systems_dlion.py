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
