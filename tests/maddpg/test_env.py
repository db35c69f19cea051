"""maddpg.env: the mpe2 scenarios behind the trainer's interface."""

from __future__ import annotations

import numpy as np
import pytest

from maddpg.env import EnvError, make_env


@pytest.mark.parametrize("name,n,obs", [("simple_spread", 3, [18, 18, 18]), ("simple", 1, [4]),
                                        ("simple_adversary_v3", 3, [8, 10, 10]), ("simple_tag", 4, [16, 16, 16, 14])])
def test_shapes_and_a_full_episode(name, n, obs):
    env = make_env(name, n, seed=3, max_cycles=25)
    assert env.n_agents == n and env.obs_dims == obs and env.act_dims == [5] * n
    o = env.reset()
    assert [x.shape[0] for x in o] == obs and all(x.dtype == np.float32 for x in o)
    rng = np.random.default_rng(0)
    for t in range(25):
        o, r, done = env.step([rng.random(5, dtype=np.float32) for _ in range(n)])
        assert len(r) == n and all(np.isfinite(r))
        assert done == (t == 24)


def test_seeded_resets_are_reproducible_and_differ_between_seeds():
    env = make_env("simple_spread", 3, seed=1)
    a, b = env.reset(seed=7), env.reset(seed=7)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    c = env.reset(seed=8)
    assert not all(np.array_equal(x, y) for x, y in zip(a, c))


def test_the_action_vector_is_a_force():
    """u_x = a[2] - a[1]: pushing +x gives +x velocity (obs[0]) and brings the landmark's
    relative x (obs[2] = landmark x - agent x) down."""
    env = make_env("simple", 1, seed=0)
    o0 = env.reset()
    push = np.array([0, 0, 1, 0, 0], np.float32)
    for _ in range(5):
        o, _, _ = env.step([push])
    assert o[0][0] > 0 and o[0][2] < o0[0][2]
    assert abs(o[0][1]) < 1e-6  # nothing pushed along y


@pytest.mark.parametrize("args,msg", [(("bogus", 3), "unknown MPE scenario 'bogus'"), (("simple", 2), "exactly 1 agent"),
                                      (("simple_tag", 1), "n_agents >= 2"), (("simple_spread", 0), "n_agents >= 1")])
def test_bad_arguments(args, msg):
    with pytest.raises(EnvError, match=msg):
        make_env(*args, seed=0)
    env = make_env("simple_spread", 2, seed=0)
    env.reset()
    with pytest.raises(EnvError, match="takes 5 action values, got 3"):
        env.step([np.zeros(3), np.zeros(5)])
