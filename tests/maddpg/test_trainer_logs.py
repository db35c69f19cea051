"""Log rows: losses and Q statistics recomputed independently (float64 numpy networks on the
same minibatch), per-agent returns from the environments' own rewards, TensorBoard event
files read back with TensorBoard's EventAccumulator (also across a resume)."""

from __future__ import annotations

import csv

import numpy as np
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from typer.testing import CliRunner

from hw_models.cli import app
from hw_models import maddpg_run
from maddpg.train_log import TensorBoardLog, tag_of
from maddpg.trainer import MADDPG, make_config

from maddpg_standin_env import StandInSimple, make_standin

SMALL = dict(env="simple", n_agents=1, seed=5, batch_size=32, hidden_units=16, learning_starts=64,
             update_every_steps=10, buffer_size=300, max_cycles=10)


def _mlp64(params: np.ndarray, sizes: list[int], x: np.ndarray) -> np.ndarray:
    """float64 forward pass of a flat ``W0, b0, W1, b1, ...`` parameter vector."""
    h, k = x.astype(np.float64), 0
    for layer, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        w = params[k : k + a * b].astype(np.float64).reshape(a, b)
        k += a * b
        h = h @ w + params[k : k + b]
        k += b
        if layer < len(sizes) - 2:
            h = np.maximum(h, 0.0)
    return h


def test_losses_and_q_statistics_match_a_float64_recomputation():
    t = MADDPG(make_config(**SMALL), make_standin)
    t.train(6)  # 60 steps, no update yet
    assert t.updates == 0
    t.log_row()
    ag = t.agents[0]
    pre = {k: net.params.copy() for k, net in ag.nets().items()}
    t.train(7)  # the update at step 70 (the last step of episode 7)
    assert t.updates == 1
    row = t.log_row()
    assert row["updates_in_interval"] == 1 and row["episode"] == 7 and row["env_steps"] == 70
    c, rp, mb = t.cfg, t.replay, t.mb
    idx = mb.idx.copy()
    cs, as_ = ag.critic.sizes, ag.actor.sizes
    od = t.obs_dims[0]
    q = _mlp64(pre["critic"], cs, rp.oa[idx])[:, 0]
    q_next = _mlp64(pre["critic_t"], cs, np.concatenate([rp.next_o[idx], mb.act[0]], axis=1))[:, 0]
    y = rp.rew[0, idx].astype(np.float64) + c.gamma * (1.0 - rp.done[idx]) * q_next
    np.testing.assert_allclose(row["critic_loss_agent0"], np.mean((q - y) ** 2), rtol=1e-4)
    np.testing.assert_allclose([row["q_mean_agent0"], row["q_std_agent0"], row["q_min_agent0"], row["q_max_agent0"]],
                               [q.mean(), q.std(), q.min(), q.max()], rtol=1e-4, atol=1e-6)
    obs = rp.oa[idx, :od]
    logits = _mlp64(pre["actor"], as_, obs)
    q_pi = _mlp64(ag.critic.params, cs, np.concatenate([obs, mb.pi[0]], axis=1))[:, 0]  # after the critic step
    np.testing.assert_allclose(row["actor_loss_agent0"], -q_pi.mean() + c.actor_reg * np.mean(logits**2), rtol=1e-4)
    assert t.stats.updates == 0  # the interval was closed


def test_per_agent_returns_are_the_environments_rewards():
    seen: dict[int, np.ndarray] = {}

    class Env(StandInSimple):
        def step(self, actions):
            obs, rew, done = super().step(actions)
            seen[self.key] = seen.get(self.key, 0) + np.asarray(rew)
            return obs, rew, done

    envs = []

    def factory(name, n, seed, mc):
        e = Env(n, seed, mc)
        e.key = len(envs)
        envs.append(e)
        return e

    t = MADDPG(make_config(**{**SMALL, "n_agents": 3, "n_envs": 2}), factory)
    t.train(2)
    np.testing.assert_array_equal(t.agent_rewards, [seen[0], seen[1]])
    row = t.log_row()
    np.testing.assert_allclose([row[f"reward_agent{i}"] for i in range(3)], (seen[0] + seen[1]) / 2, rtol=1e-12)


def test_cli_writes_metrics_csv_and_tensorboard_events_that_read_back(tmp_path, monkeypatch):
    monkeypatch.setattr(maddpg_run, "env_factory", lambda: make_standin)
    args = ["maddpg", "train", "--env", "simple", "--agents", "2", "--seed", "1", "--batch-size", "16",
            "--learning-starts", "50", "--random-episodes", "0", "--log-every", "2", "--checkpoint-every", "4"]
    r = CliRunner().invoke(app, [*args, "--episodes", "6", "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    with open(tmp_path / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    assert [int(x["episode"]) for x in rows] == [2, 4, 6]
    assert [int(x["env_steps"]) for x in rows] == [50, 100, 150]
    assert [int(x["updates_in_interval"]) for x in rows] == [0, 1, 0]  # one update per 100 env steps: at 100
    assert rows[0]["critic_loss_agent0"] == "nan" and float(rows[1]["critic_loss_agent1"]) > 0
    with open(tmp_path / "rewards.csv") as f:
        per_ep = list(csv.DictReader(f))
    for row, lo in zip(rows, (0, 2, 4)):
        for i in range(2):
            want = np.mean([float(e[f"reward_agent{i}"]) for e in per_ep[lo : lo + 2]])
            np.testing.assert_allclose(float(row[f"reward_agent{i}"]), want, rtol=1e-5)
    acc = EventAccumulator(str(tmp_path / "tb"))
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    assert {"reward/mean", "reward/agent1", "loss/critic_agent0", "loss/actor_agent1", "q/std_agent0",
            "train/updates", "train/env_steps_per_s"} <= tags
    crit = acc.Scalars("loss/critic_agent0")
    assert [e.step for e in crit] == [100]  # no value without an update
    np.testing.assert_allclose(crit[0].value, float(rows[1]["critic_loss_agent0"]), rtol=1e-6)
    assert [e.step for e in acc.Scalars("reward/mean")] == [50, 100, 150]
    np.testing.assert_allclose([e.value for e in acc.Scalars("reward/agent1")],
                               [float(x["reward_agent1"]) for x in rows], rtol=1e-6)
    # resume to 8 episodes from the checkpoint at 6: the events continue, none doubled
    r = CliRunner().invoke(app, [*args, "--episodes", "8", "--out", str(tmp_path), "--resume"])
    assert r.exit_code == 0, r.output
    acc = EventAccumulator(str(tmp_path / "tb"))
    acc.Reload()
    assert [e.step for e in acc.Scalars("reward/mean")] == [50, 100, 150, 200]
    assert [e.step for e in acc.Scalars("loss/critic_agent0")] == [100, 200]


def test_a_resumed_log_replaces_what_an_interrupted_run_logged_past_its_checkpoint(tmp_path):
    """Steps 100..400 logged, the run resumes from a checkpoint at step 200: TensorBoard
    shows the resumed run's values from 300 on, the old ones are dropped."""
    a = TensorBoardLog(tmp_path)
    for s in (100, 200, 300, 400):
        a.write({"env_steps": s, "reward_mean": -1.0})
    a.close()
    b = TensorBoardLog(tmp_path, resume_step=201)
    for s in (300, 400, 500):
        b.write({"env_steps": s, "reward_mean": -2.0, "critic_loss_agent0": float("nan")})
    b.close()
    acc = EventAccumulator(str(tmp_path))
    acc.Reload()
    assert [(e.step, e.value) for e in acc.Scalars("reward/mean")] == [(100, -1.0), (200, -1.0), (300, -2.0),
                                                                       (400, -2.0), (500, -2.0)]
    assert "loss/critic_agent0" not in acc.Tags()["scalars"]  # NaN (no update) is left out
    assert tag_of("q_mean_agent2") == "q/mean_agent2" and tag_of("env_steps") is None
