"""hw-models maddpg train: outputs, seed line, resume, Ctrl-C keeps the checkpoint, errors exit 2."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from typer.testing import CliRunner

from hw_models.cli import app, main
from hw_models import maddpg_run
from maddpg_standin_env import make_standin

ARGS = ["maddpg", "train", "--env", "simple", "--agents", "1", "--seed", "3", "--batch-size", "16",
        "--learning-starts", "50", "--random-episodes", "5"]


@pytest.fixture(autouse=True)
def _standin(monkeypatch):
    monkeypatch.setattr(maddpg_run, "env_factory", lambda: make_standin)


def _rewards(path):
    with open(path) as f:
        return [float(r["reward"]) for r in csv.DictReader(f)]


def test_train_writes_outputs_and_resume_matches_a_straight_run(tmp_path):
    r = CliRunner().invoke(app, [*ARGS, "--episodes", "12", "--out", str(tmp_path / "a"), "--checkpoint-every", "4"])
    assert r.exit_code == 0, r.output
    assert "seed 3" in r.output
    for name in ("rewards.csv", "learning_curve.png", "checkpoint.npz"):
        assert (tmp_path / "a" / name).stat().st_size > 0
    straight = _rewards(tmp_path / "a" / "rewards.csv")
    assert len(straight) == 12
    b = tmp_path / "b"
    assert CliRunner().invoke(app, [*ARGS, "--episodes", "6", "--out", str(b), "--checkpoint-every", "3"]).exit_code == 0
    r = CliRunner().invoke(app, [*ARGS, "--episodes", "12", "--out", str(b), "--checkpoint-every", "3", "--resume"])
    assert r.exit_code == 0, r.output
    assert "resumed" in r.output
    assert _rewards(b / "rewards.csv") == straight
    a_ck, b_ck = np.load(tmp_path / "a" / "checkpoint.npz"), np.load(b / "checkpoint.npz")
    np.testing.assert_array_equal(a_ck["agent0/actor"], b_ck["agent0/actor"])


def test_ctrl_c_keeps_the_last_checkpoint(tmp_path, monkeypatch):
    from maddpg.trainer import MADDPG

    real = MADDPG.run_episode

    def run_episode(self):
        if self.episode == 7:
            raise KeyboardInterrupt
        return real(self)

    monkeypatch.setattr(MADDPG, "run_episode", run_episode)
    r = CliRunner().invoke(app, [*ARGS, "--episodes", "20", "--out", str(tmp_path), "--checkpoint-every", "5"])
    assert r.exit_code == 130, r.output
    assert "episode 5" in r.output and "--resume" in r.output
    from maddpg.trainer import make_config

    t = MADDPG(make_config(env="simple", n_agents=1, seed=3, batch_size=16, learning_starts=50), make_standin)
    t.load(tmp_path / "checkpoint.npz")
    assert t.episode == 5


def test_bad_resume_is_a_one_line_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main([*ARGS, "--episodes", "3", "--out", str(tmp_path), "--resume"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "no checkpoint" in err and err.count("\n") == 1


def test_fixed_point_run_keeps_every_weight_on_the_q_grid(tmp_path):
    """--fixed-point 12.6: every stored weight is a multiple of 2^-6 inside the signed 12-bit range."""
    out = tmp_path / "q"
    r = CliRunner().invoke(app, [*ARGS, "--episodes", "6", "--out", str(out), "--fixed-point", "12.6"])
    assert r.exit_code == 0, r.output
    assert "Q5.6 fixed point (12 bits)" in r.output
    w = np.load(out / "checkpoint.npz")["agent0/actor"].astype(np.float64) * 2**6
    np.testing.assert_array_equal(w, np.rint(w))
    assert w.min() >= -(2**11) and w.max() <= 2**11 - 1
    assert np.unique(w).size > 10  # trained, not all saturated or zero
    # resuming it as a float32 run is a mismatched checkpoint, not a silent mix
    with pytest.raises(SystemExit) as exc:
        main([*ARGS, "--episodes", "8", "--out", str(out), "--resume"])
    assert exc.value.code == 2


@pytest.mark.parametrize("text", ["16", "16.x", "8.8", "40.10", "1.0"])
def test_bad_fixed_point_is_a_one_line_error(tmp_path, capsys, text):
    with pytest.raises(SystemExit) as exc:
        main([*ARGS, "--episodes", "3", "--out", str(tmp_path), "--fixed-point", text])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --fixed-point") and err.count("\n") == 1


def test_batch_parts_flag_reaches_the_trainer_and_a_mismatch_on_resume_is_named(tmp_path, capsys):
    from maddpg.trainer import MADDPG, make_config

    r = CliRunner().invoke(app, [*ARGS, "--episodes", "8", "--out", str(tmp_path), "--batch-parts", "3"])
    assert r.exit_code == 0, r.output
    t = MADDPG(make_config(env="simple", n_agents=1, seed=3, batch_size=16, learning_starts=50, batch_parts=3), make_standin)
    t.train(8)
    assert t.updates > 0
    np.testing.assert_array_equal(np.load(tmp_path / "checkpoint.npz")["agent0/actor"], t.agents[0].actor.params)
    np.testing.assert_allclose(_rewards(tmp_path / "rewards.csv"), t.rewards, rtol=0, atol=1e-6)  # CSV keeps 6 decimals
    with pytest.raises(SystemExit) as exc:  # resuming with other parts would change the arithmetic
        main([*ARGS, "--episodes", "9", "--out", str(tmp_path), "--resume"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "batch_parts" in err and err.count("\n") == 1
    with pytest.raises(SystemExit) as exc:
        main([*ARGS, "--episodes", "3", "--out", str(tmp_path), "--batch-parts", "0"])
    assert exc.value.code == 2


def test_an_unusable_output_directory_stops_the_run_before_training(tmp_path, capsys, monkeypatch):
    def no_training(*args, **kwargs):
        raise AssertionError("trained although the outputs cannot be written")

    monkeypatch.setattr("maddpg.trainer.MADDPG.train", no_training)
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    (tmp_path / "d" / "rewards.csv").mkdir(parents=True)
    for out, says in ((blocker, "cannot make the output directory"), (tmp_path / "d", "rewards.csv there is a directory")):
        with pytest.raises(SystemExit) as exc:
            main([*ARGS, "--episodes", "3", "--out", str(out)])
        err = capsys.readouterr().err
        assert exc.value.code == 2 and says in err and err.count("\n") == 1


def test_a_run_that_ends_before_learning_says_so(tmp_path):
    r = CliRunner().invoke(app, [*ARGS, "--episodes", "2", "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    # 2 episodes x 25 steps; learning starts at 50 transitions, updates at multiples of 100 env steps
    assert "warning: --episodes 2 ends after 50 env steps, before the first update at 100" in r.output
    assert "warning: no update ran in 50 env steps" in r.output and "0 updates" in r.output
    r = CliRunner().invoke(app, [*ARGS, "--episodes", "4", "--out", str(tmp_path / "b")])
    assert "warning" not in r.output and "1 updates" in r.output


def test_envs_flag_runs_rounds_of_episodes(tmp_path):
    from maddpg.trainer import MADDPG, make_config

    r = CliRunner().invoke(app, [*ARGS, "--episodes", "8", "--envs", "4", "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert "4 env(s) (custom backend)" in r.output
    t = MADDPG(make_config(env="simple", n_agents=1, seed=3, batch_size=16, learning_starts=50, n_envs=4), make_standin)
    t.train(8)
    np.testing.assert_allclose(_rewards(tmp_path / "rewards.csv"), t.rewards, rtol=0, atol=1e-6)
    np.testing.assert_array_equal(np.load(tmp_path / "checkpoint.npz")["agent0/critic"], t.agents[0].critic.params)


@pytest.mark.parametrize("extra,says", [
    (["--episodes", "10", "--envs", "4"], "--episodes 10: not a multiple of --envs 4; allowed: a multiple of 4 (e.g. 8 or 12)"),
    (["--episodes", "4", "--envs", "0"], "--envs"),
    (["--episodes", "4", "--env-backend", "gpu"], "--env-backend 'gpu': allowed: auto, port, mpe2"),
    (["--episodes", "4", "--threads", "99"], "--threads 99: allowed: 1.."),
    (["--episodes", "4", "--seeds", "1", "-5"], "--seeds"),
])
def test_bad_flags_are_one_line_errors(tmp_path, capsys, extra, says):
    with pytest.raises(SystemExit) as exc:
        main([*ARGS, *extra, "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.startswith("error: ") and says in err and err.count("\n") == 1, err


def test_seeds_run_each_seed_and_plot_their_mean_and_spread(tmp_path):
    args = [a for a in ARGS if a not in ("--seed", "3")]
    r = CliRunner().invoke(app, [*args, "--seeds", "1", "2", "--episodes", "6", "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert "seed 1" in r.output and "seed 2" in r.output
    single = tmp_path / "single"
    assert CliRunner().invoke(app, [*args, "--seed", "2", "--episodes", "6", "--out", str(single)]).exit_code == 0
    assert (tmp_path / "seed2" / "rewards.csv").read_bytes() == (single / "rewards.csv").read_bytes()
    with open(tmp_path / "seeds_summary.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 6 and (tmp_path / "seeds_curve.png").stat().st_size > 0
    for row in rows:
        per = [float(row["seed1_mean100"]), float(row["seed2_mean100"])]
        assert float(row["mean"]) == pytest.approx(np.mean(per), abs=2e-6)
        assert float(row["std"]) == pytest.approx(np.std(per, ddof=1), abs=2e-6)
    with open(tmp_path / "seed1" / "rewards.csv") as f:
        r1 = [float(x["reward"]) for x in csv.DictReader(f)]
    assert float(rows[-1]["seed1_mean100"]) == pytest.approx(np.mean(r1), abs=2e-6)
