"""Environment steps per second: mpe2 simple_spread vs the batched Numba port.

One "env step" is one environment advancing one time step with all its agents acting.
Episodes are 25 steps and every reset is counted. mpe2 is timed through maddpg.env (the
trainer's path: mpe2's PettingZoo parallel API, continuous actions) and, for reference,
mpe2's parallel env called directly. The port is warmed up (compiled) before timing.

    .venv/bin/python bench/maddpg_env_speed.py [--agents 3 6] [--seconds 2]
"""

from __future__ import annotations

import argparse
import platform
import subprocess
import time

import numpy as np


def _actions(rng, shape):
    z = rng.standard_normal(shape)
    e = np.exp(z - z.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)).astype(np.float32)


def bench_wrapper(n: int, seconds: float) -> float:
    from maddpg.env import make_env

    env = make_env("simple_spread", n, seed=0)
    acts = list(_actions(np.random.default_rng(0), (64, n, 5)))
    steps, ep = 0, 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        env.reset(seed=ep)
        for t in range(25):
            env.step(list(acts[(steps + t) % 64]))
        steps += 25
        ep += 1
    return steps / (time.perf_counter() - t0)


def bench_raw_mpe2(n: int, seconds: float) -> float:
    from mpe2 import simple_spread_v3

    env = simple_spread_v3.parallel_env(N=n, continuous_actions=True, max_cycles=25)
    names = env.possible_agents
    acts = _actions(np.random.default_rng(0), (64, n, 5))
    steps, ep = 0, 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        env.reset(seed=ep)
        for t in range(25):
            a = acts[(steps + t) % 64]
            env.step({k: a[i] for i, k in enumerate(names)})
        steps += 25
        ep += 1
    return steps / (time.perf_counter() - t0)


def bench_port(n: int, B: int, seconds: float) -> float:
    from maddpg.spread_port import SpreadPort

    port = SpreadPort(B, n)
    acts = _actions(np.random.default_rng(0), (8, B, n, 5))
    port.reset(seed=0)
    port.step(acts[0])  # compile (or load the cache) outside the timing
    steps, ep = 0, 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        port.reset(seed=ep)
        for t in range(25):
            port.step(acts[t % 8])
        steps += 25 * B
        ep += 1
    return steps / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--agents", type=int, nargs="+", default=[3, 6])
    ap.add_argument("--batch", type=int, nargs="+", default=[1, 64, 1024, 8192])
    ap.add_argument("--seconds", type=float, default=2.0)
    args = ap.parse_args()
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    except OSError:
        commit = "?"
    print(f"# simple_spread env steps/s ({platform.processor() or platform.machine()}, 1 thread, commit {commit})")
    print(f"{'agents':>6}  {'what':<28} {'env steps/s':>14} {'vs maddpg.env':>14}")
    for n in args.agents:
        ref = bench_wrapper(n, args.seconds)
        print(f"{n:>6}  {'maddpg.env (mpe2 wrapper)':<28} {ref:>14,.0f} {1.0:>13.1f}x")
        raw = bench_raw_mpe2(n, args.seconds)
        print(f"{n:>6}  {'mpe2 parallel_env directly':<28} {raw:>14,.0f} {raw / ref:>13.1f}x")
        for B in args.batch:
            sps = bench_port(n, B, args.seconds)
            print(f"{n:>6}  {f'SpreadPort B={B}':<28} {sps:>14,.0f} {sps / ref:>13.1f}x")


if __name__ == "__main__":
    main()
