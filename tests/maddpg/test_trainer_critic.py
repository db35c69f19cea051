"""``critic="local"`` (DDPG: each critic sees only its own agent's observation and action)
against the centralised critic of MADDPG, per-agent critics (``critic_of``: the paper's
crossed MADDPG-against-DDPG pairings), and the ``--critic`` flag."""

from __future__ import annotations

import numpy as np
import pytest

from hw_models import maddpg_run
from hw_models.cli import main
from maddpg.trainer import MADDPG, make_config

from maddpg_standin_env import make_standin

CFG = dict(env="simple", n_agents=3, seed=4, batch_size=32, hidden_units=16, learning_starts=64,
           update_every_steps=10, buffer_size=300, max_cycles=10)


def _filled(critic: str, other: float, critic_of=None) -> MADDPG:
    """A learner whose replay holds seeded random transitions; agent 1's observations and
    actions are scaled by ``other``."""
    t = MADDPG(make_config(**CFG, critic=critic, critic_of=critic_of), make_standin)
    rp = t.replay
    rng = np.random.default_rng(0)
    size = 200
    for j in range(t.n):
        scale = other if j == 1 else 1.0
        rp.obs[j][:size] = rng.normal(size=(size, t.obs_dims[j])) * scale
        rp.next_obs[j][:size] = rng.normal(size=(size, t.obs_dims[j])) * scale
        a = rng.random((size, t.act_dims[j]))
        rp.act[j][:size] = (a / a.sum(1, keepdims=True)) ** (1.0 if j != 1 else other)
    rp.rew[:, :size] = rng.normal(size=(t.n, size))
    rp.size = rp.pos = size
    return t


@pytest.mark.parametrize("critic", ["global", "local"])
def test_a_local_critic_ignores_the_other_agents(critic):
    """One update from the same state, agent 1's columns of the replay changed: agent 0's
    networks are the same bits with local critics and differ with the centralised one."""
    a, b = _filled(critic, 1.0), _filled(critic, 3.0)
    a.update()
    b.update()
    n0 = a.agents[0].nets()
    same = all(np.array_equal(net.params, b.agents[0].nets()[k].params) for k, net in n0.items())
    assert same == (critic == "local")
    assert not np.array_equal(a.agents[1].critic.params, b.agents[1].critic.params)  # agent 1 did see the change


def test_per_agent_critics_mix_both_kinds():
    """critic_of = (local, global, global): with agent 1's replay columns changed, agent 0 (DDPG)
    gets the same bits and agent 2 (MADDPG) does not; its critic sizes follow each kind."""
    kinds = ("local", "global", "global")
    a, b = _filled("global", 1.0, kinds), _filled("global", 3.0, kinds)
    a.update()
    b.update()
    for i, local in ((0, True), (2, False)):
        ni = a.agents[i].nets()
        same = all(np.array_equal(net.params, b.agents[i].nets()[k].params) for k, net in ni.items())
        assert same == local, i
    assert a.agents[0].critic.sizes[0] == a.obs_dims[0] + a.act_dims[0]
    assert a.agents[2].critic.sizes[0] == sum(a.obs_dims) + sum(a.act_dims)


@pytest.mark.parametrize("kind", ["global", "local"])
def test_per_agent_critics_of_one_kind_are_that_kind(kind):
    runs = []
    for kw in ({"critic": kind}, {"critic": "global" if kind == "local" else "local", "critic_of": (kind,) * 3}):
        t = MADDPG(make_config(**CFG, **kw), make_standin)
        t.train(20)
        runs.append(np.concatenate([net.params for ag in t.agents for net in ag.nets().values()]))
    np.testing.assert_array_equal(runs[0], runs[1])


def test_per_agent_critics_bad_length():
    from noc.base.errors import ConfigError

    with pytest.raises(ConfigError, match=r"critic_of: 2 entries for 3 agents; allowed: one 'global' or 'local' per agent"):
        make_config(**CFG, critic_of=("local", "global"))


def test_local_critic_sizes_and_loop_nests():
    t = MADDPG(make_config(**CFG, critic="local"), make_standin)
    g = MADDPG(make_config(**CFG), make_standin)
    for i in range(3):
        assert t.agents[i].critic.sizes == [t.obs_dims[i] + t.act_dims[i], 16, 16, 1]
        assert g.agents[i].critic.sizes == [sum(g.obs_dims) + sum(g.act_dims), 16, 16, 1]
    # DDPG: one target actor per agent's update, not all n
    fwd = lambda m: sum(n.macs for n in m.update_loop_nests() if n.kernel == "dense_forward")
    assert fwd(t) < fwd(g)


def test_local_critic_trains_deterministically_and_learns_differently():
    runs = []
    for critic in ("local", "local", "global"):
        t = MADDPG(make_config(**CFG, critic=critic), make_standin)
        t.train(30)
        assert t.updates > 5
        runs.append(np.concatenate([net.params for ag in t.agents for net in (ag.actor, ag.actor_t)]))
    np.testing.assert_array_equal(runs[0], runs[1])
    assert not np.array_equal(runs[0], runs[2])


def test_critic_flag(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(maddpg_run, "env_factory", lambda: make_standin)
    args = ["maddpg", "train", "--env", "simple", "--agents", "2", "--seed", "3", "--batch-size", "16",
            "--learning-starts", "50", "--random-episodes", "0", "--episodes", "8", "--no-tensorboard"]
    with pytest.raises(SystemExit) as exc:
        main([*args, "--critic", "central", "--out", str(tmp_path / "bad")])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.startswith("error: ") and "--critic" in err and "'central'" in err, err
    assert err.count("\n") == 1 and "local" in err
    with pytest.raises(SystemExit) as exc:
        main([*args, "--critic", "local", "--out", str(tmp_path / "ok")])
    assert exc.value.code in (0, None)
    ck = np.load(tmp_path / "ok" / "checkpoint.npz")
    for critic in ("local", "global"):
        t = MADDPG(make_config(env="simple", n_agents=2, seed=3, batch_size=16, learning_starts=50, critic=critic),
                   make_standin)
        t.train(8)
        assert t.updates > 0
        same = np.array_equal(ck["agent0/actor"], t.agents[0].actor.params)
        assert same == (critic == "local")
