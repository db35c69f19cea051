"""maddpg.env: the mpe2 scenarios behind the trainer's interface."""

from __future__ import annotations

import numpy as np
import pytest

from maddpg.env import EnvError, make_env
from noc.base.errors import HwModelsError


@pytest.mark.parametrize("name,n,obs", [("simple_spread", 3, [18, 18, 18]), ("simple_spread_v3", 2, [12, 12]),
                                        ("simple", 1, [4]), ("simple_v3", 1, [4]),
                                        ("simple_adversary_v3", 3, [8, 10, 10]), ("simple_adversary", 4, [12, 14, 14, 14]),
                                        ("simple_tag", 4, [16, 16, 16, 14]), ("simple_tag_v3", 2, [12, 10])])
def test_shapes_and_a_full_episode(name, n, obs):
    env = make_env(name, n, seed=3, max_cycles=25)
    assert env.n_agents == n and len(env.agent_names) == n
    assert env.obs_dims == obs and env.act_dims == [5] * n
    o = env.reset()
    assert [x.shape for x in o] == [(d,) for d in obs] and all(x.dtype == np.float32 for x in o)
    rng = np.random.default_rng(0)
    for t in range(25):
        o, r, done = env.step([rng.random(5, dtype=np.float32) for _ in range(n)])
        assert [x.shape for x in o] == [(d,) for d in obs] and all(x.dtype == np.float32 for x in o)
        assert len(r) == n and all(isinstance(x, float) and np.isfinite(x) for x in r)
        assert done == (t == 24)
    with pytest.raises(EnvError, match="episode is over"):
        env.step([np.zeros(5, np.float32)] * n)


def test_max_cycles_sets_the_episode_length():
    env = make_env("simple_spread", 3, seed=0, max_cycles=4)
    env.reset()
    dones = [env.step([np.full(5, 0.2, np.float32)] * 3)[2] for _ in range(4)]
    assert dones == [False, False, False, True]


def _episode(env, seed, actions):
    out = [env.reset(seed=seed)]
    for acts in actions:
        o, r, _ = env.step(acts)
        out.append(o)
        out.append([np.float32(x) for x in r])
    return out


def test_seeded_resets_and_episodes_are_reproducible_and_differ_between_seeds():
    rng = np.random.default_rng(1)
    acts = [[rng.random(5, dtype=np.float32) for _ in range(3)] for _ in range(10)]
    env = make_env("simple_spread", 3, seed=1)
    a, b = _episode(env, 7, acts), _episode(env, 7, acts)
    c = _episode(make_env("simple_spread", 3, seed=99), 7, acts)  # construction seed does not leak in
    for x, y, z in zip(a, b, c):
        assert all(np.array_equal(p, q) and np.array_equal(p, s) for p, q, s in zip(x, y, z))
    d = env.reset(seed=8)
    assert not all(np.array_equal(x, y) for x, y in zip(a[0], d))


def test_unseeded_resets_follow_the_make_env_seed_and_continue_the_stream():
    e1, e2 = make_env("simple_spread", 3, seed=5), make_env("simple_spread", 3, seed=5)
    first1, second1 = e1.reset(), e1.reset()
    first2 = e2.reset()
    assert all(np.array_equal(x, y) for x, y in zip(first1, first2))  # seed=None -> make_env's seed
    assert all(np.array_equal(x, y) for x, y in zip(first1, e2.reset(seed=5)))
    assert not all(np.array_equal(x, y) for x, y in zip(first1, second1))  # a new episode, not a replay


def test_the_action_vector_is_a_force_in_mpe2_order():
    """u = 5 * (a[2] - a[1], a[4] - a[3]): index 2 pushes +x, index 4 pushes +y; obs = [vel, lm - pos]."""
    env = make_env("simple", 1, seed=0)
    o0 = env.reset()
    o, _, _ = env.step([np.array([0, 0, 1, 0, 0], np.float32)])
    # one step from rest: vel = 0.75 * 0 + 5 * 1 * dt(0.1) = 0.5, pos moves only next step
    np.testing.assert_allclose(o[0][:2], [0.5, 0.0], atol=1e-7)
    np.testing.assert_array_equal(o[0][2:], o0[0][2:])
    o, _, _ = env.step([np.array([0.2, 0.1, 0.3, 0.4, 0.0], np.float32)])
    # soft vector: u = 5 * (0.3 - 0.1, 0.0 - 0.4) = (1, -2); vel = 0.75 * 0.5 + 0.1 * u
    np.testing.assert_allclose(o[0][:2], [0.375 + 0.1, -0.2], atol=1e-6)
    np.testing.assert_allclose(o[0][2:], o0[0][2:] - np.float32(0.5 * 0.1) * np.array([1, 0], np.float32), atol=1e-6)


def test_a_one_hot_vector_equals_mpe2s_discrete_action():
    from mpe2 import simple_spread_v3

    env = make_env("simple_spread", 3, seed=0)
    ref = simple_spread_v3.parallel_env(N=3, continuous_actions=False, max_cycles=25)
    rng = np.random.default_rng(4)
    o = env.reset(seed=11)
    ro, _ = ref.reset(seed=11)
    for _ in range(25):
        k = rng.integers(0, 5, 3)
        o, r, _ = env.step([np.eye(5, dtype=np.float32)[j] for j in k])
        ro, rr, *_ = ref.step({a: int(j) for a, j in zip(ref.possible_agents, k)})
        for i, a in enumerate(env.agent_names):
            np.testing.assert_array_equal(o[i], ro[a])
            assert r[i] == rr[a]


@pytest.mark.parametrize("args,msg", [(("bogus", 3), r"unknown MPE scenario 'bogus'; allowed: simple_spread"),
                                      (("simple", 2), "impossible for simple; allowed: exactly 1"),
                                      (("simple_tag", 1), "allowed: an integer >= 2"),
                                      (("simple_adversary_v3", 1), "allowed: an integer >= 2"),
                                      (("simple_spread", 0), "allowed: an integer >= 1"),
                                      (("simple_spread", 2.5), "not an integer")])
def test_bad_arguments(args, msg):
    with pytest.raises(EnvError, match=msg) as exc:
        make_env(*args, seed=0)
    assert isinstance(exc.value, HwModelsError)


def test_bad_actions():
    env = make_env("simple_spread", 2, seed=0)
    with pytest.raises(EnvError, match="call reset"):
        env.step([np.zeros(5), np.zeros(5)])
    env.reset()
    with pytest.raises(EnvError, match=r"actions\[0\]: length 3; allowed: a vector of length 5"):
        env.step([np.zeros(3), np.zeros(5)])
    with pytest.raises(EnvError, match="got 1 action vectors; allowed: exactly 2"):
        env.step([np.zeros(5)])
    with pytest.raises(EnvError, match="max_cycles"):
        make_env("simple", 1, seed=0, max_cycles=0)


@pytest.mark.parametrize("name,obs,act", [("simple_speaker_listener", [3, 11], [3, 5]),
                                          ("simple_speaker_listener_v4", [3, 11], [3, 5]),
                                          ("simple_reference", [21, 21], [15, 15]),
                                          ("simple_reference_v3", [21, 21], [15, 15])])
def test_two_agent_scenarios_with_their_own_sizes(name, obs, act):
    """simple_speaker_listener: the speaker sees the goal colour (3) and utters 3 values, the
    listener sees [vel 2, 3 landmarks 6, utterance 3] and moves (5); simple_reference: both see
    [vel 2, landmarks 6, goal colour 3, the other's utterance 10] and act with 5 + 10 values.
    The utterance each agent hears next step is the other's action clipped to [0, 1]."""
    env = make_env(name, 2, seed=1, max_cycles=25)
    assert env.obs_dims == obs and env.act_dims == act
    o = env.reset()
    assert [x.shape for x in o] == [(d,) for d in obs]
    a = [np.linspace(-0.5, 1.5, d).astype(np.float32) for d in act]
    o, r, done = env.step(a)
    utterance = a[0][5:] if act[0] > 5 else a[0]  # reference: after the 5 move values; speaker: all of it
    np.testing.assert_array_equal(o[1][-utterance.size:], np.clip(utterance, 0, 1))
    if name.startswith("simple_speaker_listener"):
        assert r[0] == r[1]  # both get -|listener - goal|^2
    with pytest.raises(EnvError, match=rf"actions\[0\]: length 4; allowed: a vector of length {act[0]}"):
        env.step([np.zeros(4), np.zeros(act[1])])


@pytest.mark.parametrize("args,msg", [(("simple_speaker_listener", 3), "impossible for simple_speaker_listener; "
                                       "allowed: exactly 2"),
                                      (("simple_speaker_listener_v3", 2), "unknown MPE scenario "
                                       "'simple_speaker_listener_v3'; allowed: .*simple_speaker_listener \\(or "
                                       "simple_speaker_listener_v4\\)"),
                                      (("simple_spread_v4", 3), "unknown MPE scenario 'simple_spread_v4'"),
                                      (("simple_reference", 1), "impossible for simple_reference; allowed: exactly 2")])
def test_version_suffix_must_be_the_scenarios_own(args, msg):
    with pytest.raises(EnvError, match=msg):
        make_env(*args, seed=0)
