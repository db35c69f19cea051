"""The accelerator's functional path against the CPU trainer, bit for bit, and its traffic
against the timing model's message sizes."""

from __future__ import annotations

import numpy as np
import pytest

from maddpg.accel.config import AccelConfig, Workload
from maddpg.accel.functional import accel_update
from maddpg.accel.host import h2d_bytes
from maddpg.accel.interconnect import exchange_messages
from maddpg.trainer import MADDPG, make_config


def _trainer(env: str, n: int, q_bits: int = 0, q_frac: int = 0) -> MADDPG:
    cfg = make_config(env=env, n_agents=n, seed=7, batch_size=48, buffer_size=600, learning_starts=601,
                      fixed_point_bits=q_bits, fixed_point_frac_bits=q_frac, batch_parts=2)
    t = MADDPG(cfg)
    for _ in range(12):  # 300 transitions, no updates (learning never starts)
        t.run_round()
    return t


def _state(t: MADDPG) -> dict:
    out = {"rng": repr(t.rng.bit_generator.state), "updates": t.updates}
    for i, ag in enumerate(t.agents):
        for name, net in ag.nets().items():
            out[f"{i}/{name}"] = net.params.copy()
        for name, (m, v, k) in ag.opt.items():
            out[f"{i}/{name}/m"], out[f"{i}/{name}/v"], out[f"{i}/{name}/k"] = m.copy(), v.copy(), k
    return out


def _assert_same(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for k in a:
        if isinstance(a[k], np.ndarray):
            assert a[k].dtype == b[k].dtype and np.array_equal(a[k].view(np.uint32), b[k].view(np.uint32)), k
        else:
            assert a[k] == b[k], k


DATAPATHS = pytest.mark.parametrize("q", [(0, 0), (16, 10)], ids=["float32", "fixed16.10"])


@DATAPATHS
def test_sequential_engines_equal_the_trainer_bit_for_bit(q):
    # two trainers from one seed (a deep copy would split the networks' views of their buffers)
    ref, acc = _trainer("simple_spread", 3, *q), _trainer("simple_spread", 3, *q)
    start = _state(ref)
    _assert_same(start, _state(acc))
    for _ in range(2):
        ref.update()
        accel_update(acc, "sequential")
    _assert_same(_state(ref), _state(acc))
    assert not np.array_equal(_state(ref)["0/critic"], start["0/critic"])  # it did learn something


def _parallel_reference(t: MADDPG) -> None:
    """The trainer's own update loop, except that every agent's target actions come from the
    target actors as they were when the update began (what parallel engines compute)."""
    before = [ag.actor_t.params.copy() for ag in t.agents]
    mb, c = t.mb, t.cfg
    for i, ag in enumerate(t.agents):
        t._sample(i, mb)
        for j in range(t.n):
            now = t.agents[j].actor_t.params.copy()
            t.agents[j].actor_t.params[:] = before[j]
            t.agents[j].actor_t.forward_sample(mb.nobs[j], mb.u[j], mb.act[j], c.temperature,
                                               into=(mb.c_in_next, t.act_off[j]))
            t.agents[j].actor_t.params[:] = now
        ag.critic.forward(mb.c_in)
        ag.actor.forward_sample(mb.obs[i], mb.u_actor[i], mb.pi[i], c.temperature)
        t._update_agent(i, ag, mb)
    t.updates += 1
    t.stats.updates += 1
    t.stats.rows += c.batch_size


@DATAPATHS
def test_parallel_engines_equal_the_trainer_run_in_that_order(q):
    ref, acc, seq = (_trainer("simple_spread", 3, *q) for _ in range(3))
    for _ in range(2):
        _parallel_reference(ref)
        accel_update(acc, "parallel")
        seq.update()
    _assert_same(_state(ref), _state(acc))
    # agent 0's step reads no updated target actor in either order; agent 2's does
    s_acc, s_seq = _state(acc), _state(seq)
    assert not np.array_equal(s_acc["2/critic"], s_seq["2/critic"])


def test_traffic_matches_the_timing_model_messages():
    t = _trainer("simple_speaker_listener", 2)  # agents of different sizes
    traffic = accel_update(t, "parallel")
    w = Workload(tuple(t.obs_dims), tuple(t.act_dims), batch=t.cfg.batch_size)
    for kind, got in (("inputs", traffic.inputs), ("targets", traffic.targets)):
        m = exchange_messages(w, 4, kind)
        want = {(int(s), int(d)): int(b) for s, d, b in zip(m.src, m.dst, m.nbytes)}
        assert got == want
    assert traffic.host_to_card == h2d_bytes(w, AccelConfig())
