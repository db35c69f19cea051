"""Checkpoints: the replay is saved in append-only chunks (a save writes only what is new),
stale chunks go, a resume is exact (also with N envs and after a real SIGINT / SIGTERM to a
training process), and damaged chunk sets are clear errors."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from hw_models.cli import app
from maddpg.checkpoint import CheckpointError, chunk_dir, load_npz, save_npz_atomic
from maddpg.trainer import MADDPG, make_config

from maddpg_standin_env import make_standin

ROOT = Path(__file__).resolve().parents[2]
SMALL = dict(env="simple", n_agents=2, seed=5, batch_size=32, hidden_units=16, learning_starts=64,
             update_every_steps=10, buffer_size=300, max_cycles=10)


def _state(t: MADDPG) -> dict[str, np.ndarray]:
    out = {f"{i}/{k}": net.params.copy() for i, ag in enumerate(t.agents) for k, net in ag.nets().items()}
    out.update({f"{i}/adam_{k}_{m}": ag.opt[k][j].copy() for i, ag in enumerate(t.agents) for k in ag.opt
                for j, m in enumerate("mv")})
    rp = t.replay
    out.update(oa=rp.oa.copy(), next_o=rp.next_o.copy(), rew=rp.rew.copy(), done=rp.done.copy(),
               ring=np.array([rp.pos, rp.size, t.env_steps, t.updates, t.episode]))
    return out


def _chunks(ck: Path) -> list[tuple[int, int, int]]:
    """(first, end, rows) of every chunk file next to ``ck``."""
    out = []
    for f in sorted(chunk_dir(ck).iterdir()):
        with np.load(f) as z:
            meta = json.loads(bytes(z["__meta__"]).decode())
            out.append((meta["start"], meta["stop"], z["done"].shape[0]))
    return out


def test_a_save_writes_only_the_new_transitions_and_drops_what_left_the_ring(tmp_path):
    ck = tmp_path / "ck.npz"
    t = MADDPG(make_config(**SMALL), make_standin)
    t.train(8, checkpoint_path=ck, checkpoint_every=4)  # saves at 40 and 80 transitions
    assert _chunks(ck) == [(0, 40, 40), (40, 80, 40)]
    t.train(35, checkpoint_path=ck, checkpoint_every=4)  # ..., 320, 350: the 300-slot ring wrapped
    meta = load_npz(ck)[1]
    got = _chunks(ck)
    assert got == [tuple(c) + (c[1] - c[0],) for c in meta["replay"]["chunks"]]
    assert got[-1] == (320, 350, 30)  # the last save wrote the 30 transitions since the one before
    assert got[0][0] <= 350 - 300 < got[0][1]  # the oldest chunk still holds transition 50, older ones are gone
    assert all(a[1] == b[0] for a, b in zip(got, got[1:]))  # contiguous
    assert t.save_stats[0] == 9  # episodes 4, 8, ..., 32 and the end, 35
    # the transitions round-trip exactly into a fresh learner, at their ring positions
    r = MADDPG(make_config(**SMALL), make_standin)
    r.load(ck)
    for k, v in _state(t).items():
        np.testing.assert_array_equal(_state(r)[k], v, err_msg=k)


def test_resume_with_vectorised_envs_is_exact(tmp_path):
    cfg = make_config(**SMALL, n_envs=4)
    full = MADDPG(cfg, make_standin)
    full.train(40)
    half = MADDPG(cfg, make_standin)
    half.train(20, checkpoint_path=tmp_path / "ck.npz", checkpoint_every=8)
    resumed = MADDPG(cfg, make_standin)
    resumed.load(tmp_path / "ck.npz")
    assert resumed.episode == 20
    resumed.train(40)
    assert full.rewards == resumed.rewards and full.agent_rewards == resumed.agent_rewards
    for k, v in _state(full).items():
        np.testing.assert_array_equal(_state(resumed)[k], v, err_msg=k)
    with pytest.raises(CheckpointError, match="key 'n_envs' is 4 in the checkpoint but 2 now"):
        MADDPG(make_config(**SMALL, n_envs=2), make_standin).load(tmp_path / "ck.npz")


def test_format_1_checkpoints_still_load(tmp_path):
    """A checkpoint of the previous format (the whole replay in the one file, no n_envs key,
    no per-agent returns) resumes as before."""
    t = MADDPG(make_config(**SMALL), make_standin)
    t.train(12)
    arrays = {f"agent{i}/{k}": net.params for i, ag in enumerate(t.agents) for k, net in ag.nets().items()}
    for i, ag in enumerate(t.agents):
        for k, (m, v, _) in ag.opt.items():
            arrays[f"agent{i}/adam_{k}_m"], arrays[f"agent{i}/adam_{k}_v"] = m, v
    arrays.update(t.replay.state())
    arrays["rng_state"] = np.frombuffer(json.dumps(t.rng.bit_generator.state).encode(), np.uint8)
    arrays["rewards"] = np.asarray(t.rewards)
    config = t.cfg.model_dump()
    del config["n_envs"]
    meta = {"config": config, "episode": t.episode, "env_steps": t.env_steps, "updates": t.updates,
            "obs_dims": t.obs_dims, "act_dims": t.act_dims,
            "adam_steps": [[ag.opt["actor"][2], ag.opt["critic"][2]] for ag in t.agents]}
    save_npz_atomic(tmp_path / "old.npz", arrays, meta, fmt="hw-models/maddpg-checkpoint/1")
    r = MADDPG(make_config(**SMALL), make_standin)
    r.load(tmp_path / "old.npz")
    t.train(30)
    r.train(30)
    assert r.rewards == t.rewards
    for k, v in _state(t).items():
        np.testing.assert_array_equal(_state(r)[k], v, err_msg=k)


def test_missing_or_damaged_chunks_are_named(tmp_path):
    ck = tmp_path / "ck.npz"
    t = MADDPG(make_config(**SMALL), make_standin)
    t.train(8, checkpoint_path=ck, checkpoint_every=4)
    second = chunk_dir(ck) / "replay_000000000040_000000000080.npz"
    data = second.read_bytes()
    second.unlink()
    with pytest.raises(CheckpointError, match="replay_000000000040_000000000080.npz: replay chunk listed by ck.npz is missing"):
        MADDPG(make_config(**SMALL), make_standin).load(ck)
    second.write_bytes(data[:100])
    with pytest.raises(CheckpointError, match="replay_000000000040_000000000080.npz: corrupt checkpoint"):
        MADDPG(make_config(**SMALL), make_standin).load(ck)
    shutil.copy(chunk_dir(ck) / "replay_000000000000_000000000040.npz", second)  # the wrong rows under its name
    with pytest.raises(CheckpointError, match="corrupt replay chunk .holds 0..40"):
        MADDPG(make_config(**SMALL), make_standin).load(ck)


TRAIN = ["maddpg", "train", "--env", "simple", "--agents", "1", "--seed", "3", "--batch-size", "32",
         "--learning-starts", "64", "--random-episodes", "0", "--checkpoint-every", "5", "--log-every", "5",
         "--no-tensorboard"]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_saves_then_exits_and_the_resume_is_exact(tmp_path, sig):
    """A training process (the Numba port of simple) gets a real signal mid-run: it saves a
    checkpoint at the end of the episode and exits 128 + signal. Resumed to a later episode,
    the run equals an uninterrupted one byte for byte (rewards.csv, every checkpoint array,
    the replay)."""
    out = tmp_path / "stopped"
    proc = subprocess.Popen([sys.executable, "-m", "hw_models", *TRAIN, "--episodes", "1000000", "--out", str(out)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        while not (out / "checkpoint.npz").exists():  # the run is under way (its first periodic checkpoint)
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        time.sleep(0.2)
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + sig, (stdout, stderr)
    assert f"{signal.Signals(sig).name}: stopped after episode" in stdout and "--resume" in stdout, stdout
    stopped_at = load_npz(out / "checkpoint.npz")[1]["episode"]
    assert f"stopped after episode {stopped_at}," in stdout
    final = stopped_at + 7
    r = CliRunner().invoke(app, [*TRAIN, "--episodes", str(final), "--out", str(out), "--resume"])
    assert r.exit_code == 0, r.output
    straight = tmp_path / "straight"
    r = CliRunner().invoke(app, [*TRAIN, "--episodes", str(final), "--out", str(straight)])
    assert r.exit_code == 0, r.output
    assert (out / "rewards.csv").read_bytes() == (straight / "rewards.csv").read_bytes()
    a, b = np.load(out / "checkpoint.npz"), np.load(straight / "checkpoint.npz")
    assert sorted(a.files) == sorted(b.files)
    for k in a.files:
        if k == "__meta__":  # the log rows hold wall-clock rates, and the interrupted run's replay is in other
            ma, mb = (json.loads(bytes(z[k]).decode()) for z in (a, b))  # chunks (compared below); the rest matches
            for m in (ma, mb):
                for row in m["log_rows"]:
                    row.pop("env_steps_per_s")
                m["replay"].pop("chunks")
            assert ma == mb
        else:
            np.testing.assert_array_equal(a[k], b[k], err_msg=k)
    ta, tb = (MADDPG(make_config(env="simple", n_agents=1, seed=3, batch_size=32, learning_starts=64)) for _ in "ab")
    ta.load(out / "checkpoint.npz")
    tb.load(straight / "checkpoint.npz")
    for k, v in _state(ta).items():
        np.testing.assert_array_equal(_state(tb)[k], v, err_msg=k)
