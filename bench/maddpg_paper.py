"""The MADDPG paper's MADDPG-vs-DDPG comparisons (Lowe et al., 2017) with our trainer: every
agent trained with a centralised critic (``critic="global"``, MADDPG) or with a critic over
its own observation and action only (``critic="local"``, DDPG), several seeds.

    .venv/bin/python bench/maddpg_paper.py [--scenarios speaker_listener adversary tag push]
        [--episodes 4096] [--envs 64] [--seeds 0 1 2] [--last 512] [--pairings same crossed]
        [--out bench/data/maddpg_paper.txt]

Scenarios (the paper's names): cooperative communication = simple_speaker_listener (2
agents), physical deception = simple_adversary (1 adversary, 2 good agents), predator-prey
= simple_tag (3 predators, 1 prey, 2 obstacles), keep-away = simple_push (1 adversary, 1
good agent, 2 landmarks: the adversary pushes the agent away from its target).
``--pairings same``: both sides of a competitive scenario use the same algorithm (MADDPG or
DDPG); ``crossed``: the paper's pairings, one side MADDPG and the other DDPG, both ways round
(``critic_of``: each agent's own critic kind).

Per run, over its last ``--last`` episodes: the mean episode return of each side (summed
over its steps, one agent of each side: the sides' agents share their reward in these
scenarios), and for predator-prey the touches per episode (a predator's return / 10: mpe2
pays every predator 10 per predator-prey contact). The table gives the mean over seeds and
the spread (min-max). openai/maddpg's hyperparameters otherwise (batch 1024, learning from
25,600 transitions on, one update per 100 env steps, lr 1e-2, tau 0.01, 25-step episodes).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

SCENARIOS = {  # name: (mpe scenario, n_agents, [(side, agent indices)])
    "speaker_listener": ("simple_speaker_listener", 2, [("team", [0])]),
    "adversary": ("simple_adversary", 3, [("adversary", [0]), ("agents", [1])]),
    "tag": ("simple_tag", 4, [("predators", [0]), ("prey", [3])]),
    "push": ("simple_push", 2, [("adversary", [0]), ("agent", [1])]),
}
TEAMS = {"adversary": [[0], [1, 2]], "tag": [[0, 1, 2], [3]], "push": [[0], [1]]}  # the two sides' agents
ALGO = {"global": "MADDPG", "local": "DDPG"}


def pairings(scenario: str, which: list[str]) -> list[tuple[str, tuple[str, ...] | None]]:
    """(row key, critic_of) of each pairing: every agent the same (critic_of None: the key's
    critic), or, for a competitive scenario, side 0 MADDPG against side 1 DDPG and the reverse."""
    out: list[tuple[str, tuple[str, ...] | None]] = []
    if "same" in which:
        out += [("global", None), ("local", None)]
    if "crossed" in which and scenario in TEAMS:
        n = SCENARIOS[scenario][1]
        for k0, k1 in (("global", "local"), ("local", "global")):
            kinds = [""] * n
            for kind, team in zip((k0, k1), TEAMS[scenario]):
                for a in team:
                    kinds[a] = kind
            out.append((f"{k0}/{k1}", tuple(kinds)))
    return out


def label(key: str) -> str:
    """``global`` -> MADDPG; ``global/local`` -> MADDPG vs DDPG (side 0's algorithm first)."""
    return " vs ".join(ALGO[k] for k in key.split("/"))


def run(scenario: str, critic: str, seed: int, episodes: int, n_envs: int, last: int,
        critic_of: tuple[str, ...] | None = None, **cfg_kw) -> dict[str, float]:
    """One seeded training run; the mean return of each side over the last ``last`` episodes."""
    from maddpg.trainer import MADDPG, make_config

    env, n, sides = SCENARIOS[scenario]
    t = MADDPG(make_config(env=env, n_agents=n, seed=seed, n_envs=n_envs, critic=critic.split("/")[0],
                           critic_of=critic_of, **cfg_kw))
    t.train(episodes)
    ar = np.asarray(t.agent_rewards[-last:], np.float64)
    out = {side: float(ar[:, idx].sum(1).mean() / len(idx)) for side, idx in sides}
    if scenario == "tag":
        out["touches"] = out["predators"] / 10.0
    out["updates"] = float(t.updates)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenarios", nargs="+", default=list(SCENARIOS), choices=list(SCENARIOS))
    ap.add_argument("--episodes", type=int, default=4096)
    ap.add_argument("--envs", type=int, default=64)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--last", type=int, default=512)
    ap.add_argument("--pairings", nargs="+", default=["same", "crossed"], choices=["same", "crossed"],
                    help="same: both sides MADDPG or both DDPG; crossed: one side each (competitive scenarios)")
    ap.add_argument("--out", type=Path, default=None, help="also append the table to this file")
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from maddpg_speed import _commit, _cpu_name

    lines: list[str] = []

    def out(s: str) -> None:
        print(s, flush=True)
        lines.append(s)

    out(f"# bench/maddpg_paper.py {' '.join(sys.argv[1:])}; commit {_commit()}; {_cpu_name()}; "
        f"load average {os.getloadavg()[0]:.2f}")
    out(f"# {args.episodes} episodes ({args.episodes * 25:,} env steps) per run, {args.envs} envs, seeds "
        f"{' '.join(map(str, args.seeds))}; returns over the last {args.last} episodes: mean over seeds (min-max)")
    for sc in args.scenarios:
        res = {}
        t0 = time.perf_counter()
        for key, critic_of in pairings(sc, args.pairings):
            res[key] = [run(sc, key, s, args.episodes, args.envs, args.last, critic_of) for s in args.seeds]
        if not res:
            continue
        first = next(iter(res.values()))[0]
        keys = [k for k in first if k != "updates"]
        sides = " vs ".join(side for side, _ in SCENARIOS[sc][2])
        out(f"## {sc} ({SCENARIOS[sc][0]}), {int(first['updates'])} updates per run, "
            f"{time.perf_counter() - t0:.0f} s; rows: the algorithm of {sides}")
        out(f"{'':<16} " + " ".join(f"{k:>24}" for k in keys))
        for key, per_seed in res.items():
            cells = []
            for k in keys:
                v = [r[k] for r in per_seed]
                cells.append(f"{np.mean(v):>9.2f} ({min(v):.2f}..{max(v):.2f})")
            out(f"{label(key):<16} " + " ".join(f"{c:>24}" for c in cells))
    if args.out:
        with open(args.out, "a") as f:
            f.write("\n".join(lines) + "\n\n")


if __name__ == "__main__":
    main()
