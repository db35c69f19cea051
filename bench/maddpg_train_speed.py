"""End-to-end MADDPG training speed (environment steps per second, updates included) and
the cost of a checkpoint.

Runs openai/maddpg's defaults on simple_spread (batch 1024, learning from 25,600
transitions on, one update per 100 env steps) from scratch for ``--episodes`` episodes with
``--envs`` environments (the Numba port; ``--env-backend mpe2`` for mpe2), after a short
warm-up run that compiles everything, and prints env steps/s over the whole run. Then it
fills a replay with ``--replay`` transitions and times a first checkpoint (the whole
replay as chunks), and an incremental one after 100 more episodes' worth of transitions.

    NUMBA_NUM_THREADS=1 nice -n 5 .venv/bin/python bench/maddpg_train_speed.py --envs 1 64
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np

from maddpg.trainer import MADDPG, make_config


def run(n_envs: int, episodes: int, agents: int, backend: str) -> tuple[float, int, int, float]:
    warm = MADDPG(make_config(env="simple_spread", n_agents=agents, n_envs=n_envs, batch_size=256, learning_starts=256),
                  env_backend=backend)
    warm.train(max(n_envs, 16 // n_envs * n_envs or n_envs))  # compile acting, the env and an update
    t = MADDPG(make_config(env="simple_spread", n_agents=agents, n_envs=n_envs, seed=0), env_backend=backend)
    t0 = time.perf_counter()
    t.train(episodes)
    dt = time.perf_counter() - t0
    return t.env_steps / dt, t.env_steps, t.updates, dt


def checkpoint_cost(agents: int, replay: int, new_steps: int) -> None:
    t = MADDPG(make_config(env="simple_spread", n_agents=agents, seed=0))
    rng = np.random.default_rng(0)
    rp = t.replay
    for start in range(0, replay, 100_000):
        k = min(100_000, replay - start)
        rp.add_batch([rng.normal(size=(k, d)).astype(np.float32) for d in t.obs_dims],
                     [rng.random((k, d), dtype=np.float32) for d in t.act_dims], rng.normal(size=(k, t.n)),
                     [rng.normal(size=(k, d)).astype(np.float32) for d in t.obs_dims], np.zeros(k, bool))
    t.env_steps = replay
    with tempfile.TemporaryDirectory(dir=".") as d:
        ck = Path(d) / "checkpoint.npz"
        t0 = time.perf_counter()
        t.save(ck)
        full_s = time.perf_counter() - t0
        full_mb = sum(f.stat().st_size for f in Path(d).rglob("*.npz")) / 1e6
        k = new_steps
        rp.add_batch([rng.normal(size=(k, d)).astype(np.float32) for d in t.obs_dims],
                     [rng.random((k, d), dtype=np.float32) for d in t.act_dims], rng.normal(size=(k, t.n)),
                     [rng.normal(size=(k, d)).astype(np.float32) for d in t.obs_dims], np.zeros(k, bool))
        t.env_steps += k
        times = []
        before = t.save_stats[2]
        for _ in range(5):  # the same incremental save (new chunk of k transitions), five times
            t._chunks = t._chunks[:-1] if t._chunks[-1][0] == replay else t._chunks
            t0 = time.perf_counter()
            t.save(ck)
            times.append(time.perf_counter() - t0)
        inc_mb = (t.save_stats[2] - before) / 5 / 1e6
        t0 = time.perf_counter()
        MADDPG(make_config(env="simple_spread", n_agents=agents, seed=0)).load(ck)
        load_s = time.perf_counter() - t0
    print(f"checkpoint, replay of {replay:,} transitions ({agents} agents): first save {full_s:.2f} s, {full_mb:.1f} MB; "
          f"then +{new_steps:,} transitions: {1e3 * float(np.median(times)):.0f} ms (median of 5), {inc_mb:.2f} MB; "
          f"load {load_s:.2f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--envs", type=int, nargs="+", default=[1, 64])
    ap.add_argument("--episodes", type=int, default=2048, help="per run (rounded down to a multiple of --envs)")
    ap.add_argument("--agents", type=int, default=3)
    ap.add_argument("--env-backend", default="auto")
    ap.add_argument("--replay", type=int, default=625_000, help="replay size for the checkpoint timing (0: skip)")
    args = ap.parse_args()
    import numba

    print(f"# {platform.machine()} {os.cpu_count()} cpus, load {os.getloadavg()[0]:.2f}; numba {numba.__version__}, "
          f"NUMBA_NUM_THREADS={numba.config.NUMBA_NUM_THREADS}, OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}")
    for n in args.envs:
        eps = args.episodes // n * n
        rate, steps, updates, dt = run(n, eps, args.agents, args.env_backend)
        print(f"envs {n:>5}: {eps} episodes, {steps:,} env steps, {updates} updates in {dt:.1f} s: {rate:,.0f} env steps/s",
              flush=True)
    if args.replay:
        checkpoint_cost(args.agents, args.replay, 2_500)
    print(f"# load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
