"""The paper's MADDPG-vs-DDPG comparison (bench/maddpg_paper.py) in a short seeded version:
cooperative communication (simple_speaker_listener), MADDPG against DDPG, 1,536 episodes on
the Numba port. Slow (minutes): ``pytest -m slow tests/maddpg/test_paper_slow.py``."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "maddpg_paper.py"


def _paper():
    spec = importlib.util.spec_from_file_location("maddpg_paper", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
def test_speaker_listener_maddpg_and_ddpg_short_seeded():
    paper = _paper()
    kw = dict(episodes=1536, n_envs=64, last=256)
    m = paper.run("speaker_listener", "global", 0, **kw)
    d = paper.run("speaker_listener", "local", 0, **kw)
    assert m["updates"] == d["updates"] > 100
    assert m == paper.run("speaker_listener", "global", 0, **kw)  # same seed, same figures
    assert m["team"] != d["team"]  # the critics really differ
    # Not checked here: learning past a random policy. At this budget (1,536 episodes) MADDPG's
    # team return was -53.2 against a random policy's -39.3 (seed 0); bench/maddpg_paper.py
    # runs the comparison at 3,072 episodes (docs/maddpg.md).
