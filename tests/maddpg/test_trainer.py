"""maddpg.trainer: determinism, lossless resume, checkpoint errors, and evidence that it learns."""

from __future__ import annotations

import numpy as np
import pytest

from maddpg.checkpoint import CheckpointError
from maddpg.trainer import MADDPG, make_config, random_policy_return
from noc.base.errors import ConfigError, HwModelsError

from maddpg_standin_env import make_standin

SMALL = dict(env="simple", n_agents=2, seed=5, batch_size=32, hidden_units=16, learning_starts=64,
             update_every_steps=10, buffer_size=300, max_cycles=10)


def _weights(t: MADDPG) -> np.ndarray:
    return np.concatenate([net.params for ag in t.agents for net in ag.nets().values()])


def test_same_seed_same_result_and_different_seed_differs():
    a = MADDPG(make_config(**SMALL), make_standin)
    b = MADDPG(make_config(**SMALL), make_standin)
    a.train(30)
    b.train(30)
    assert a.updates > 5
    np.testing.assert_array_equal(_weights(a), _weights(b))
    assert a.rewards == b.rewards
    c = MADDPG(make_config(**{**SMALL, "seed": 6}), make_standin)
    c.train(30)
    assert not np.array_equal(_weights(a), _weights(c))


@pytest.mark.parametrize("n_agents,fixed_point", [(3, 0), (4, 16)])
def test_results_depend_on_batch_parts_not_on_threads(n_agents, fixed_point):
    """The minibatch's parts run on Numba's threads; one thread gives the same rewards,
    weights and Adam moments, bit for bit (float and fixed point)."""
    import numba

    cfg = make_config(**{**SMALL, "n_agents": n_agents, "batch_parts": 3, "fixed_point_bits": fixed_point,
                         "fixed_point_frac_bits": 10 if fixed_point else 0})
    a = MADDPG(cfg, make_standin, threads=numba.config.NUMBA_NUM_THREADS)  # all threads, whatever the batch size
    b = MADDPG(cfg, make_standin, threads=1)
    assert a.update_threads() == min(numba.config.NUMBA_NUM_THREADS, 3) and b.update_threads() == 1
    a.train(25)
    b.train(25)
    assert a.updates > 5
    np.testing.assert_array_equal(_weights(a), _weights(b))
    assert a.rewards == b.rewards
    for ga, gb in zip(a.agents, b.agents):
        for name in ("actor", "critic"):
            np.testing.assert_array_equal(ga.opt[name][0], gb.opt[name][0])
            np.testing.assert_array_equal(ga.opt[name][1], gb.opt[name][1])


def test_batch_parts_change_only_the_rounding_of_an_update():
    """From the same state, one update with the minibatch in 1, 2 or 5 parts: the same
    weights up to float32 rounding of the weight gradients' partial sums."""
    runs = []
    for parts in (1, 2, 5):
        t = MADDPG(make_config(**{**SMALL, "n_agents": 3, "batch_parts": parts}), make_standin)
        while t.updates == 0:
            t.run_episode()
        assert t.updates == 1
        runs.append(_weights(t))
    for w in runs[1:]:
        assert not np.array_equal(w, runs[0])  # the parts really were summed separately
        np.testing.assert_allclose(w, runs[0], rtol=0, atol=1e-5)


def test_resume_loses_nothing(tmp_path):
    """Train N vs train N/2, save, load into a fresh learner, train to N: identical."""
    ck = tmp_path / "ck.npz"
    full = MADDPG(make_config(**SMALL), make_standin)
    full.train(40)  # 400 steps: the 300-slot replay has wrapped
    half = MADDPG(make_config(**SMALL), make_standin)
    half.train(20, checkpoint_path=ck, checkpoint_every=7)
    resumed = MADDPG(make_config(**SMALL), make_standin)
    resumed.load(ck)
    assert resumed.episode == 20 and resumed.replay.size == 200
    resumed.train(40)
    assert resumed.replay.size == 300
    np.testing.assert_array_equal(_weights(full), _weights(resumed))
    for ag_f, ag_r in zip(full.agents, resumed.agents):
        for name in ("actor", "critic"):
            np.testing.assert_array_equal(ag_f.opt[name][0], ag_r.opt[name][0])
            assert ag_f.opt[name][2] == ag_r.opt[name][2]
    assert full.rewards == resumed.rewards
    assert (full.env_steps, full.updates) == (resumed.env_steps, resumed.updates)


def test_replay_rows_are_the_critic_input_layout():
    from maddpg import kernels as K
    from maddpg.replay import ReplayBuffer

    rp = ReplayBuffer(8, [3, 2], [5, 5])
    rng = np.random.default_rng(0)
    rows = []
    for _ in range(10):  # wraps
        obs = [rng.normal(size=3).astype(np.float32), rng.normal(size=2).astype(np.float32)]
        act = [rng.random(5).astype(np.float32) for _ in range(2)]
        nxt = [o + 1 for o in obs]
        rp.add(obs, act, [0.5, -0.5], nxt, False)
        rows.append((np.concatenate(obs + act), np.concatenate(nxt)))
    assert rp.size == 8 and rp.pos == 2
    np.testing.assert_array_equal(rp.oa[1], rows[9][0])
    np.testing.assert_array_equal(rp.next_o[1], rows[9][1])
    st = rp.state()
    assert st["replay/obs1"].flags.c_contiguous and st["replay/obs1"].shape == (8, 2)
    idx = np.array([1, 5, 1], np.int64)
    c_in, c_next = np.zeros((3, 15), np.float32), np.full((3, 15), 7.0, np.float32)
    K.gather_transitions(rp.oa, rp.next_o, idx, c_in, c_next)
    np.testing.assert_array_equal(c_in, rp.oa[idx])
    np.testing.assert_array_equal(c_next[:, :5], rp.next_o[idx])
    assert np.all(c_next[:, 5:] == 7.0)  # the action columns are the target actors' to fill
    other = ReplayBuffer(8, [3, 2], [5, 5])
    other.load_state(st)
    np.testing.assert_array_equal(other.oa, rp.oa)
    np.testing.assert_array_equal(other.next_o, rp.next_o)


def test_corrupt_missing_and_mismatched_checkpoints_are_clear_errors(tmp_path):
    ck = tmp_path / "ck.npz"
    t = MADDPG(make_config(**SMALL), make_standin)
    t.train(3, checkpoint_path=ck, checkpoint_every=1)
    good = ck.read_bytes()
    with pytest.raises(CheckpointError, match="no checkpoint"):
        MADDPG(make_config(**SMALL), make_standin).load(tmp_path / "none.npz")
    ck.write_bytes(good[: len(good) // 2])
    with pytest.raises(CheckpointError, match="corrupt"):
        MADDPG(make_config(**SMALL), make_standin).load(ck)
    ck.write_bytes(b"not a zip at all")
    with pytest.raises(HwModelsError, match="corrupt"):
        MADDPG(make_config(**SMALL), make_standin).load(ck)
    ck.write_bytes(good)
    with pytest.raises(CheckpointError, match="'lr' is 0.01 in the checkpoint but 0.02 now"):
        MADDPG(make_config(**{**SMALL, "lr": 0.02}), make_standin).load(ck)
    with pytest.raises(CheckpointError, match="different configuration"):
        MADDPG(make_config(**{**SMALL, "n_agents": 3}), make_standin).load(ck)
    assert not list(tmp_path.glob("*.tmp"))


def test_config_errors_name_the_key():
    with pytest.raises(ConfigError, match="gamma"):
        make_config(gamma=2.0)
    with pytest.raises(ConfigError, match="unknown key 'lrr'"):
        make_config(lrr=0.1)
    with pytest.raises(ConfigError, match="fixed_point_frac_bits"):
        make_config(fixed_point_bits=8, fixed_point_frac_bits=8)
    assert make_config().learning_starts_samples == 1024 * 25


def test_update_loop_nests_count_the_work():
    t = MADDPG(make_config(**SMALL), make_standin)
    nests = t.update_loop_nests()
    assert {n.kernel for n in nests} >= {"dense_forward", "dense_backward_weights", "dense_backward_input", "adam_clip",
                                         "soft_update", "gumbel_softmax"}
    assert all(n.loops[0].trip > 0 for n in nests)


def _mpe(name, n, seed, max_cycles):
    from maddpg.env import make_env

    return make_env(name, n, seed, max_cycles=max_cycles)


def test_learns_mpe_simple_far_beyond_random():
    """mpe2 simple_v3 (one agent, reach the landmark): after 300 episodes the return is far
    above a uniformly random policy's, measured here on the same environment."""
    cfg = make_config(env="simple", n_agents=1, seed=1, batch_size=256, learning_starts=1000, update_every_steps=5,
                      tile_b=256)
    t = MADDPG(cfg, _mpe)
    t.train(300)
    random_ret = random_policy_return(_mpe("simple", 1, 99, 25), 100, 99, 25)
    learned = float(np.mean(t.rewards[-50:]))
    # random wanders off (well below -20); the learned policy parks near the landmark
    assert learned > random_ret / 3, (learned, random_ret)
