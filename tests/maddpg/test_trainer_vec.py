"""Vectorised training (n_envs > 1): the port and mpe2 give the same run bit for bit, the
replay holds the envs' transitions in env order, the update schedule counts every env's
steps, episode seeds do not depend on N, and a new scenario's port plugs in by name."""

from __future__ import annotations

import numpy as np
import pytest

from maddpg import vec_env
from maddpg.trainer import MADDPG, make_config
from noc.base.errors import ConfigError

from maddpg_standin_env import StandInSimple, make_standin

SMALL = dict(seed=5, batch_size=32, hidden_units=16, learning_starts=64, update_every_steps=10, buffer_size=300,
             max_cycles=10)


def _weights(t: MADDPG) -> np.ndarray:
    return np.concatenate([net.params for ag in t.agents for net in ag.nets().values()])


@pytest.mark.parametrize("env,n_agents,n_envs", [("simple", 1, 1), ("simple_spread", 2, 1), ("simple_spread", 3, 4),
                                                   ("simple_adversary", 3, 2), ("simple_tag", 3, 2),
                                                   ("simple_speaker_listener", 2, 1), ("simple_speaker_listener_v4", 2, 2),
                                                   ("simple_reference", 2, 2), ("simple_push", 2, 2)])
def test_port_backend_trains_exactly_as_mpe2(env, n_agents, n_envs):
    """The Numba port and mpe2 (through maddpg.env) as the environments of the same run: the
    same rewards, weights and replay, bit for bit, with updates running."""
    cfg = make_config(**SMALL, env=env, n_agents=n_agents, n_envs=n_envs)
    port = MADDPG(cfg, env_backend="port")
    mpe2 = MADDPG(cfg, env_backend="mpe2")
    assert (port.venv.backend, mpe2.venv.backend) == ("port", "mpe2")
    episodes = 12 if n_envs == 1 else 16
    port.train(episodes)
    mpe2.train(episodes)
    assert port.updates > 3
    assert port.rewards == mpe2.rewards
    np.testing.assert_array_equal(_weights(port), _weights(mpe2))
    np.testing.assert_array_equal(port.replay.oa, mpe2.replay.oa)
    np.testing.assert_array_equal(port.replay.rew, mpe2.replay.rew)


class _Recording:
    """Stand-in envs that record their reset seeds and every transition they produce."""

    def __init__(self) -> None:
        self.log: list[tuple[int, int, np.ndarray, np.ndarray]] = []  # (env id, step, obs, reward)
        self.seeds: list[int] = []
        self.count = 0

    def factory(self, name, n_agents, seed, max_cycles):
        rec = self
        k = self.count
        self.count += 1

        class Env(StandInSimple):
            def reset(self, seed=None):
                rec.seeds.append(seed)
                self.k_step = 0
                return super().reset(seed)

            def step(self, actions):
                obs, rew, done = super().step(actions)
                rec.log.append((k, self.k_step, np.concatenate(obs), np.asarray(rew)))
                self.k_step += 1
                return obs, rew, done

        return Env(n_agents, seed, max_cycles)


def test_replay_order_update_schedule_and_episode_seeds():
    """N = 4 envs, 10-step episodes, an update every 10 env steps from 64 transitions on:
    row g of the replay is env g % 4's step g // 4 of its round (env order within a vector
    step); the updates are those of the steps 70, 80, ..., counted over all envs; episode e
    resets with seed * 1000003 + e, as with one env."""
    rec = _Recording()
    cfg = make_config(**{**SMALL, "buffer_size": 1000}, env="simple", n_agents=2, n_envs=4)
    t = MADDPG(cfg, rec.factory)
    rec.seeds.clear()  # the stand-in's constructor resets too
    t.train(8)
    assert t.env_steps == 80 and len(t.replay) == 80
    assert rec.seeds == [5 * 1_000_003 + e for e in range(8)]
    # the envs' own record, put in the order the replay should hold it: round, step, env
    per = {(r // 40, s, k): (o, rw) for r, (k, s, o, rw) in enumerate(rec.log)}
    for g in range(80):
        rnd, within = divmod(g, 40)
        step, env = divmod(within, 4)
        nxt, rew = per[(rnd, step, env)]
        np.testing.assert_array_equal(t.replay.next_o[g], nxt)
        np.testing.assert_array_equal(t.replay.rew[:, g], rew.astype(np.float32))
    # one update at every multiple of 10 env steps at which the replay holds >= 64 transitions
    assert t.updates == len([m for m in range(10, 81, 10) if m >= 64]) == 2


def test_update_schedule_counts_every_env_step_when_a_vector_step_crosses_several():
    """N = 16 envs, an update every 5 steps: each vector step adds 16 transitions and runs
    the 3 or 4 updates whose multiples of 5 it crossed."""
    cfg = make_config(**{**SMALL, "update_every_steps": 5, "learning_starts": 40, "buffer_size": 1000},
                      env="simple", n_agents=1, n_envs=16)
    t = MADDPG(cfg, make_standin)
    t.train(16)
    assert t.env_steps == 160
    assert t.updates == len([m for m in range(5, 161, 5) if m >= 40])


def test_same_seed_same_run_per_n_envs_and_n_envs_changes_it():
    cfg4 = make_config(**SMALL, env="simple", n_agents=2, n_envs=4)
    a, b = MADDPG(cfg4, make_standin), MADDPG(cfg4, make_standin)
    a.train(12)
    b.train(12)
    assert a.updates > 3
    np.testing.assert_array_equal(_weights(a), _weights(b))
    assert a.rewards == b.rewards
    one = MADDPG(make_config(**SMALL, env="simple", n_agents=2), make_standin)
    one.train(12)
    assert not np.array_equal(_weights(a), _weights(one))  # the acting batch changes the random stream
    assert [len(x) for x in a.agent_rewards] == [2] * 12
    np.testing.assert_allclose([sum(x) for x in a.agent_rewards], a.rewards, rtol=1e-12)


def test_episodes_must_be_a_multiple_of_n_envs():
    t = MADDPG(make_config(**SMALL, env="simple", n_agents=1, n_envs=4), make_standin)
    with pytest.raises(ConfigError, match=r"episodes: 10 is not a multiple of n_envs \(4\); allowed: a multiple of 4 "
                                          r"\(e.g. 8 or 12\)"):
        t.train(10)
    with pytest.raises(ConfigError, match="run_episode.*n_envs is 4"):
        t.run_episode()


class StandInPort:
    """The stand-in's dynamics as a batched port (numpy), following the port interface."""

    def __init__(self, n_envs, n_agents, max_cycles):
        self.n_envs, self.n_agents, self.max_cycles = n_envs, n_agents, max_cycles
        self.obs_dim, self.act_dim = 4, 5
        self.p = np.zeros((n_envs, n_agents, 2))
        self.v = np.zeros((n_envs, n_agents, 2))
        self.lm = np.zeros((n_envs, n_agents, 2))
        self.t = np.zeros(n_envs, np.int64)

    @property
    def done(self):
        return self.t >= self.max_cycles

    def observe(self):
        return np.concatenate([self.v, self.lm - self.p], axis=2).astype(np.float32)

    def reset(self, seed):
        rng = np.random.default_rng(seed)
        for b in range(self.n_envs):
            self.p[b] = rng.uniform(-1, 1, (self.n_agents, 2))
            self.v[b] = 0.0
            self.lm[b] = rng.uniform(-1, 1, (self.n_agents, 2))
        self.t[:] = 0
        return self.observe()

    def step(self, act):
        # the differences in float32 (as the stand-in takes them), then float64
        u = np.stack([act[..., 1] - act[..., 2], act[..., 3] - act[..., 4]], axis=2).astype(np.float64) * 5.0
        self.v = self.v * 0.75 + u * 0.1
        self.p = self.p + self.v * 0.1
        self.t += 1
        return self.observe(), -np.sum((self.p - self.lm) ** 2, axis=2)


def test_a_new_port_plugs_in_by_name(monkeypatch):
    """A port registered under a scenario name is what "auto" picks for it; trained over 4
    envs it gives the run that N single stand-in envs give (same dynamics)."""
    import sys

    monkeypatch.setitem(sys.modules, "standin_port_module", sys.modules[__name__])
    monkeypatch.setitem(vec_env.PORTS, "simple_tag", "standin_port_module:StandInPort")
    assert vec_env.port_class("simple_tag_v3") is StandInPort
    cfg = make_config(**SMALL, env="simple_tag", n_agents=2, n_envs=4)
    ported = MADDPG(cfg)
    assert isinstance(ported.venv, vec_env.PortVecEnv)
    listed = MADDPG(cfg, make_standin)
    ported.train(12)
    listed.train(12)
    assert ported.updates > 3
    assert ported.rewards == listed.rewards
    np.testing.assert_array_equal(_weights(ported), _weights(listed))


def test_agents_of_different_sizes_get_networks_of_their_sizes():
    """simple_speaker_listener through the trainer: the speaker's actor maps its 3 observed
    values to 3 logits, the listener's 11 to 5; both critics see all 3 + 11 observations and
    3 + 5 actions; the replay and acting keep each agent's own widths."""
    from maddpg.reference_port import ReferencePort
    from maddpg.speaker_listener_port import SpeakerListenerPort

    assert vec_env.port_class("simple_speaker_listener_v4") is SpeakerListenerPort
    assert vec_env.port_class("simple_reference_v3") is ReferencePort
    assert vec_env.port_class("simple_speaker_listener_v3") is None
    t = MADDPG(make_config(**SMALL, env="simple_speaker_listener_v4", n_agents=2, n_envs=3))
    assert isinstance(t.venv, vec_env.PortVecEnv)
    h = SMALL["hidden_units"]
    assert [ag.actor.sizes for ag in t.agents] == [[3, h, h, 3], [11, h, h, 5]]
    assert [ag.critic.sizes for ag in t.agents] == [[22, h, h, 1]] * 2
    assert [ag.actor.n_params for ag in t.agents] == [3 * h + h + h * h + h + h * 3 + 3,
                                                      11 * h + h + h * h + h + h * 5 + 5]
    acts = t.act(t.venv.reset([1, 2, 3]))
    assert [a.shape for a in acts] == [(3, 3), (3, 5)]
    np.testing.assert_allclose([a.sum(axis=1) for a in acts], 1.0, rtol=1e-5)  # Gumbel-softmax samples
    t.train(6)
    assert t.replay.oa.shape[1] == 3 + 11 + 3 + 5


def test_backend_choice_and_errors(monkeypatch):
    from maddpg.adversary_port import AdversaryPort
    from maddpg.spread_port import SimplePort, SpreadPort
    from maddpg.tag_port import TagPort

    assert vec_env.port_class("simple_spread") is SpreadPort and vec_env.port_class("simple_v3") is SimplePort
    assert vec_env.port_class("simple_adversary") is AdversaryPort and vec_env.port_class("simple_tag_v3") is TagPort
    monkeypatch.delitem(vec_env.PORTS, "simple_adversary")  # a scenario without a port runs on mpe2
    assert vec_env.port_class("simple_adversary") is None
    v = vec_env.make_vec_env("simple_adversary", 2, 3, 0, 25)  # no port: mpe2
    assert v.backend == "mpe2" and v.obs_dims == [8, 10, 10]
    with pytest.raises(ConfigError, match="env_backend: 'port' but 'simple_adversary' has no batched port; allowed"):
        vec_env.make_vec_env("simple_adversary", 2, 3, 0, 25, backend="port")
    with pytest.raises(ConfigError, match="env_backend: 'gpu' is not allowed; allowed: auto, port, mpe2"):
        vec_env.make_vec_env("simple", 2, 1, 0, 25, backend="gpu")
    with pytest.raises(ConfigError, match="n_agents: 2 agents is impossible for simple; allowed: exactly 1"):
        vec_env.make_vec_env("simple", 2, 2, 0, 25)
    with pytest.raises(ConfigError, match="unknown MPE scenario 'simple_nope'"):
        vec_env.make_vec_env("simple_nope", 2, 2, 0, 25)
