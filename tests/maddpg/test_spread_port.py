"""maddpg.spread_port: the batched Numba port reproduces mpe2 bit for bit.

B mpe2 environments (through maddpg.env, as the trainer sees them) run in lock-step with
one port of B environments: the port starts from mpe2's world state, both get the same
action vectors every step, and observations (float32) and rewards (float64) must be
identical at every step. Episodes mix soft probability vectors, one-hot vectors and
out-of-range vectors (clipped by both), crowded starts so contact forces and collision
penalties are exercised, and grazing starts (neighbours within a few contact margins of
touching) so both branches of the soft contact's logaddexp are, not only free flight.
"""

from __future__ import annotations

import numpy as np
import pytest

from maddpg.env import make_env
from maddpg.spread_port import PortError, SimplePort, SpreadPort, _logaddexp0


def _world_state(env):
    w = env.world
    pos = np.array([a.state.p_pos for a in w.agents])
    vel = np.array([a.state.p_vel for a in w.agents])
    lm = np.array([m.state.p_pos for m in w.landmarks])
    return pos, vel, lm


def _random_actions(rng, B, n, kind):
    if kind == "soft":  # a Gumbel-softmax actor's output
        z = rng.standard_normal((B, n, 5)) * 2.0
        e = np.exp(z - z.max(-1, keepdims=True))
        return (e / e.sum(-1, keepdims=True)).astype(np.float32)
    if kind == "onehot":
        return np.eye(5, dtype=np.float32)[rng.integers(0, 5, (B, n))]
    return rng.uniform(-0.5, 1.5, (B, n, 5)).astype(np.float32)  # out of [0, 1]: clipped


def _lockstep(name, port_cls, n, B, episodes, seed, crowd_every=0):
    envs = [make_env(name, n, seed=0) for _ in range(B)]
    port = port_cls(B, n)
    rng = np.random.default_rng(seed)
    checked = collisions = 0
    for ep in range(episodes):
        kind = ("soft", "onehot", "wild")[ep % 3]
        ref_obs = [e.reset(seed=int(seed * 100_003 + ep * B + b)) for b, e in enumerate(envs)]
        crowded = crowd_every and ep % crowd_every == 0
        grazing = crowd_every and ep % (2 * crowd_every) == 1
        for b, e in enumerate(envs):
            if crowded:  # squeeze the agents into a small box, give them speed
                for a in e.world.agents:
                    a.state.p_pos = a.state.p_pos * 0.2
                    a.state.p_vel = rng.uniform(-1, 1, 2)
            elif grazing:  # agents in a row, neighbours within a few contact margins of touching
                x0 = rng.uniform(-1, 0)
                gaps = 0.3 + rng.uniform(-0.03, 0.01, len(e.world.agents))
                for k, a in enumerate(e.world.agents):
                    a.state.p_pos = np.array([x0 + gaps[:k].sum(), rng.uniform(-1e-3, 1e-3)])
            p, v, lm = _world_state(e)
            port.pos[b], port.vel[b], port.lm[b] = p, v, lm
        port.t[:] = 0
        if not (crowded or grazing):
            np.testing.assert_array_equal(port.observe(), np.array(ref_obs))
        for t in range(25):
            acts = _random_actions(rng, B, n, kind)
            if grazing:
                acts *= np.float32(0.05)  # drift slowly, stay in the soft-contact zone
            obs, rew = port.step(acts)
            d = np.linalg.norm(port.pos[:, :, None] - port.pos[:, None], axis=-1)
            collisions += int(np.sum(d < 0.3) - d.size // n)  # touching pairs (x2), self excluded
            for b, e in enumerate(envs):
                o, r, done = e.step(list(acts[b]))
                assert done == (t == 24) and bool(port.done[b]) == done
                np.testing.assert_array_equal(obs[b], np.array(o), err_msg=f"obs ep {ep} step {t} env {b}")
                np.testing.assert_array_equal(rew[b], np.array(r), err_msg=f"rew ep {ep} step {t} env {b}")
                checked += 1
    return checked, collisions


@pytest.mark.parametrize("n,B,episodes", [(3, 8, 30), (2, 4, 15), (5, 4, 12), (1, 2, 6)])
def test_spread_port_equals_mpe2_every_step(n, B, episodes):
    checked, collisions = _lockstep("simple_spread", SpreadPort, n, B, episodes, seed=n, crowd_every=2)
    assert checked == B * episodes * 25
    if n > 1:
        assert collisions > 0  # contact forces and penalties were exercised


def test_simple_port_equals_mpe2_every_step():
    checked, _ = _lockstep("simple", SimplePort, 1, 8, 12, seed=9)
    assert checked == 8 * 12 * 25


@pytest.mark.parametrize("n", [1, 3, 4])
def test_reset_with_one_env_is_mpe2s_seeded_reset(n):
    env = make_env("simple_spread", n, seed=0)
    port = SpreadPort(1, n)
    for s in (0, 1, 12345):
        o = env.reset(seed=s)
        po = port.reset(seed=s)
        p, v, lm = _world_state(env)
        np.testing.assert_array_equal(port.pos[0], p)
        np.testing.assert_array_equal(port.vel[0], v)
        np.testing.assert_array_equal(port.lm[0], lm)
        np.testing.assert_array_equal(po[0], np.array(o))
    simple, sport = make_env("simple", 1, seed=0), SimplePort(1)
    np.testing.assert_array_equal(sport.reset(seed=4)[0], np.array(simple.reset(seed=4)))


def test_batched_reset_is_seeded_and_masked():
    a, b = SpreadPort(6, 3), SpreadPort(6, 3)
    np.testing.assert_array_equal(a.reset(seed=3), b.reset(seed=3))
    assert len({tuple(a.pos[i].ravel()) for i in range(6)}) == 6  # envs differ
    a.step(np.full((6, 3, 5), 0.2, np.float32))
    before = a.pos.copy()
    mask = np.array([True, False, True, False, False, False])
    a.reset(seed=4, env_mask=mask)
    np.testing.assert_array_equal(a.pos[~mask], before[~mask])
    assert not np.array_equal(a.pos[mask], before[mask])
    np.testing.assert_array_equal(a.t, np.where(mask, 0, 1))
    assert not np.any(a.vel[mask])


def test_logaddexp_matches_numpy_bitwise():
    rng = np.random.default_rng(0)
    xs = np.concatenate([[0.0, -0.0, 1e-300, -1e-300, 700.0, -700.0, -745.5, 40.0, -40.0],
                         rng.standard_normal(2000) * 10.0, rng.standard_normal(2000) * 300.0])
    for x in xs:
        assert _logaddexp0(float(x)) == np.logaddexp(0.0, x), x


def test_bad_sizes_and_actions():
    with pytest.raises(PortError, match="n_envs: 0 is not allowed; allowed: an integer >= 1"):
        SpreadPort(0, 3)
    with pytest.raises(PortError, match="n_agents: 2 is not allowed; allowed: exactly 1"):
        SimplePort(4, 2)
    port = SpreadPort(2, 3)
    port.reset(seed=0)
    with pytest.raises(PortError, match=r"actions: shape \(2, 3, 4\); allowed: \(2, 3, 5\)"):
        port.step(np.zeros((2, 3, 4), np.float32))
