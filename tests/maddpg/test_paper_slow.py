"""The paper's MADDPG-vs-DDPG comparisons (bench/maddpg_paper.py) in short seeded versions on
the Numba ports. Slow (minutes): ``pytest -m slow tests/maddpg/test_paper_slow.py``."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "maddpg_paper.py"
KEEP_AWAY_EPISODES = 3072  # 1,024 of them fill the replay, then 513 updates
KEEP_AWAY_MARGIN = 2.0  # adversary return, MADDPG over DDPG


def _paper():
    spec = importlib.util.spec_from_file_location("maddpg_paper", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
def test_speaker_listener_maddpg_and_ddpg_short_seeded():
    """Cooperative communication, 1,536 episodes: the two critics give different, reproducible
    runs. Not checked here: learning past a random policy. At this budget MADDPG's team return
    was -53.2 against a random policy's -39.3 (seed 0); bench/maddpg_paper.py runs the
    comparison at 3,072 episodes (docs/maddpg.md)."""
    paper = _paper()
    kw = dict(episodes=1536, n_envs=64, last=256)
    m = paper.run("speaker_listener", "global", 0, **kw)
    d = paper.run("speaker_listener", "local", 0, **kw)
    assert m["updates"] == d["updates"] > 100
    assert m == paper.run("speaker_listener", "global", 0, **kw)  # same seed, same figures
    assert m["team"] != d["team"]  # the critics really differ


@pytest.mark.slow
def test_keep_away_adversary_does_better_with_maddpg_than_with_ddpg():
    """Keep-away (simple_push), the paper's claim that ours reproduces most clearly: with
    centralised critics (MADDPG on both sides) the adversary keeps the good agent further from
    its target than with DDPG on both sides, while the good agent scores about the same. At
    3,072 episodes and 3 seeds: adversary -4.49 (-4.77..-3.95) against -10.45
    (-11.22..-9.37), good agent -8.11 against -8.09 (bench/data/maddpg_paper.txt); here
    seed 0 at the same budget. (At 2,048 episodes the comparison is not yet about the
    adversary: one DDPG good agent had learned nothing, -23.3, so its DDPG adversary scored
    -0.2.)"""
    paper = _paper()
    kw = dict(episodes=KEEP_AWAY_EPISODES, n_envs=64, last=512)
    m = paper.run("push", "global", 0, **kw)
    d = paper.run("push", "local", 0, **kw)
    assert m["updates"] == d["updates"] > 500
    assert m["adversary"] > d["adversary"] + KEEP_AWAY_MARGIN, (m, d)
    assert abs(m["agent"] - d["agent"]) < KEEP_AWAY_MARGIN, (m, d)
