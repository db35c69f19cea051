"""hw-models maddpg eval: deterministic returns against an independent float64 rollout in
mpe2, reproducible output, the GIF's episode, and one-line errors."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from typer.testing import CliRunner

from hw_models.cli import app, main
from maddpg.evaluate import evaluate, load_policy, render_gif
from maddpg.trainer import MADDPG, make_config

CFG = dict(env="simple", n_agents=1, seed=2, batch_size=64, hidden_units=16, learning_starts=200,
           update_every_steps=5, max_cycles=12)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    ck = tmp_path_factory.mktemp("eval") / "checkpoint.npz"
    t = MADDPG(make_config(**CFG))  # the Numba port of simple
    t.train(50, checkpoint_path=ck, checkpoint_every=50)
    assert t.updates > 50
    return ck


def _reference_returns(ck, episodes: int, seed: int) -> np.ndarray:
    """mpe2 through maddpg.env, one episode at a time, the actor in float64 numpy, the
    action the softmax of its logits."""
    from maddpg.env import make_env

    with np.load(ck) as z:
        p = z["agent0/actor"].astype(np.float64)
    sizes = [4, 16, 16, 5]
    out = []
    for e in range(episodes):
        env = make_env("simple", 1, 0, max_cycles=12)
        obs = env.reset(seed=seed * 1_000_003 + e)
        total = 0.0
        for _ in range(12):
            h, k = obs[0].astype(np.float64), 0
            for layer, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
                h = h @ p[k : k + a * b].reshape(a, b) + p[k + a * b : k + a * b + b]
                k += a * b + b
                h = np.maximum(h, 0) if layer < 2 else h
            act = np.exp(h - h.max())
            obs, rew, done = env.step([(act / act.sum()).astype(np.float32)])
            total += sum(rew)
            if done:
                break
        out.append(total)
    return np.asarray(out)


def test_eval_prints_mean_and_spread_of_deterministic_returns(checkpoint, tmp_path):
    args = ["maddpg", "eval", str(checkpoint), "--episodes", "6", "--seed", "7", "--csv", str(tmp_path / "e.csv")]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    assert "seed 7" in r.output and "deterministic" in r.output
    with open(tmp_path / "e.csv") as f:
        got = np.array([float(row["reward"]) for row in csv.DictReader(f)])
    ref = _reference_returns(checkpoint, 6, 7)
    np.testing.assert_allclose(got, ref, rtol=1e-3)
    assert np.std(got) > 0  # six different episodes
    assert f"mean {got.mean():.3f}, std {got.std(ddof=1):.3f}" in r.output
    again = CliRunner().invoke(app, args)
    assert again.output == r.output  # same seed, same output


def test_the_gif_shows_evaluation_episode_0(checkpoint, tmp_path):
    from PIL import Image

    t = load_policy(checkpoint, 4)
    res = evaluate(t, 4, seed=11)
    ret = render_gif(t, 11, tmp_path / "ep.gif", title="t")
    assert ret == pytest.approx(res.returns[0], rel=1e-9)  # mpe2 replay of the port's episode 0
    with Image.open(tmp_path / "ep.gif") as im:
        assert im.n_frames == 13  # the initial state and 12 steps


def test_eval_errors_are_one_line(checkpoint, tmp_path, capsys):
    for args, says in ((["--seed", "-1"], "--seed -1"), (["--env-backend", "gpu"], "--env-backend 'gpu'")):
        with pytest.raises(SystemExit) as exc:
            main(["maddpg", "eval", str(checkpoint), *args])
        err = capsys.readouterr().err
        assert exc.value.code == 2 and says in err and err.count("\n") == 1, err
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"nope")
    with pytest.raises(SystemExit) as exc:
        main(["maddpg", "eval", str(bad)])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "corrupt checkpoint" in err and err.count("\n") == 1
