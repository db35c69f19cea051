"""A longer MADDPG run on MPE simple_spread (3 agents, openai/maddpg defaults) against a random policy.

    .venv/bin/python bench/maddpg_learning.py [--episodes 25000] [--seed 0] [--out results/maddpg_learning]

Prints the mean episode reward (summed over agents) per block of episodes next to a
uniformly random policy's, measured on the same environment, and writes rewards.csv,
learning_curve.png and a checkpoint (rerun with --resume to extend a run). Results are in
docs/maddpg.md.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from maddpg.trainer import MADDPG, make_config, random_policy_return


def env_factory():
    from maddpg.env import make_env

    return lambda name, n, seed, max_cycles: make_env(name, n, seed, max_cycles=max_cycles)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--env", default="simple_spread")
    ap.add_argument("--agents", type=int, default=3)
    ap.add_argument("--episodes", type=int, default=25000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--block", type=int, default=500)
    ap.add_argument("--random-episodes", type=int, default=500)
    ap.add_argument("--out", type=Path, default=Path("results/maddpg_learning"))
    ap.add_argument("--resume", action="store_true")
    args = ap.parse_args()
    factory = env_factory()
    cfg = make_config(env=args.env, n_agents=args.agents, seed=args.seed)
    t = MADDPG(cfg, factory)
    ck = args.out / "checkpoint.npz"
    if args.resume:
        t.load(ck)
    print(f"# MADDPG {args.env}, {t.n} agents, seed {args.seed}, openai/maddpg defaults; env: maddpg.env (mpe2)", flush=True)
    rnd = random_policy_return(factory(args.env, args.agents, args.seed + 1, cfg.max_cycles), args.random_episodes,
                               args.seed + 1, cfg.max_cycles)
    print(f"# random policy: mean episode reward {rnd:.2f} over {args.random_episodes} episodes", flush=True)
    print(f"{'episodes':>12} {'mean reward':>12} {'vs random':>10} {'updates':>8} {'wall s':>8}", flush=True)
    t0 = time.perf_counter()

    def on_episode(rec) -> None:
        if t.episode % args.block == 0:
            m = float(np.mean(t.rewards[-args.block:]))
            print(f"{t.episode - args.block:>5}-{t.episode:<6} {m:>12.2f} {m - rnd:>+10.2f} {t.updates:>8} "
                  f"{time.perf_counter() - t0:>8.0f}", flush=True)

    t.train(args.episodes, checkpoint_path=ck, checkpoint_every=args.block, on_episode=on_episode)
    from hw_models.maddpg_outputs import write_outputs

    csv_path, png_path = write_outputs(args.out, t.rewards, rnd, f"MADDPG {args.env}, {t.n} agents, seed {args.seed}")
    print(f"# wrote {csv_path}, {png_path}")


if __name__ == "__main__":
    main()
