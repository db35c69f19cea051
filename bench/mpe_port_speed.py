"""Environment steps per second: mpe2 vs the batched Numba ports, at 1 and 1024 envs.

One "env step" is one environment advancing one time step with all its agents acting;
every env resets once per 25 steps and the resets are counted. mpe2 runs the way the
trainer runs it: simple_adversary and simple_tag through ``maddpg.env.make_env``,
simple_speaker_listener and simple_reference (not in maddpg.env) through mpe2's parallel
API with the same clipped float32 continuous actions. "mpe2 B=1024" is 1024 mpe2 envs
stepped one after the other (episodes staggered, so any stretch holds its share of resets);
a port steps all its envs in one call and resets them together every 25 steps.

Measurements are interleaved: for one scenario at a time, each round times every
(implementation, B) once, in the same order, for at least ``--seconds``; the table gives the median over the rounds,
the spread (min..max) and the median by process CPU time (the port/mpe2 ratio uses it) (robust to a busy machine: the
ports are single-threaded). Ports are compiled (or loaded from the cache) before timing.

    nice -n 5 .venv/bin/python bench/mpe_port_speed.py [--rounds 5] [--seconds 0.3] [--seed 0]
"""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import statistics
import subprocess
import time

import numpy as np

SCENARIOS = {  # name -> (n_agents, mpe2 module when maddpg.env does not list the scenario, port)
    "simple_spread": (3, None, "maddpg.spread_port:SpreadPort"),
    "simple_adversary": (3, None, "maddpg.adversary_port:AdversaryPort"),
    "simple_tag": (4, None, "maddpg.tag_port:TagPort"),
    "simple_speaker_listener": (2, "mpe2.simple_speaker_listener_v4", "maddpg.speaker_listener_port:SpeakerListenerPort"),
    "simple_reference": (2, "mpe2.simple_reference_v3", "maddpg.reference_port:ReferencePort"),
}
EPISODE = 25


class _RawMpe:
    def __init__(self, module: str) -> None:
        self._env = importlib.import_module(module).parallel_env(max_cycles=EPISODE, continuous_actions=True)
        self.names = list(self._env.possible_agents)

    def reset(self, seed: int) -> None:
        self._env.reset(seed=seed)

    def step(self, actions) -> None:
        self._env.step({a: np.clip(np.array(v, np.float32), 0.0, 1.0) for a, v in zip(self.names, actions)})


def _port_class(name: str):
    module, _, cls = SCENARIOS[name][2].partition(":")
    return getattr(importlib.import_module(module), cls)


def _mpe2_env(name: str, n: int, seed: int):
    from maddpg.env import make_env

    module = SCENARIOS[name][1]
    return _RawMpe(module) if module else make_env(name, n, seed=seed)


def _soft_actions(rng, shape):
    z = rng.standard_normal(shape) * 2.0
    e = np.exp(z - z.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)).astype(np.float32)


class Mpe2Runner:
    """B mpe2 envs, episodes staggered; a chunk is one step of every env."""

    def __init__(self, name: str, B: int, seed: int) -> None:
        n = SCENARIOS[name][0]
        dims = _port_class(name)(1, n).act_dims
        self.envs = [_mpe2_env(name, n, seed) for _ in range(B)]
        self.t = [b % EPISODE for b in range(B)]
        rng = np.random.default_rng(seed)
        self.acts = [[_soft_actions(rng, d) for d in dims] for _ in range(16)]
        self.seed, self.ep, self.k = seed, 0, 0
        for e in self.envs:
            e.reset(seed=seed)

    def chunk(self) -> int:
        for b, e in enumerate(self.envs):
            if self.t[b] == EPISODE:
                self.ep += 1
                e.reset(seed=self.seed * 1_000_003 + self.ep)
                self.t[b] = 0
            e.step(self.acts[self.k % 16])
            self.t[b] += 1
            self.k += 1
        return len(self.envs)


class PortRunner:
    """One port of B envs; a chunk is one episode (reset + 25 steps of all envs)."""

    def __init__(self, name: str, B: int, seed: int) -> None:
        self.port = _port_class(name)(B, SCENARIOS[name][0])
        rng = np.random.default_rng(seed)
        p = self.port
        self.acts = [_soft_actions(rng, (B, p.n_agents, p.act_dim)) for _ in range(8)]
        self.seed, self.ep = seed, 0
        p.reset(seed=seed)
        p.step(self.acts[0])  # compile or load the cache outside the timing

    def chunk(self) -> int:
        self.ep += 1
        self.port.reset(seed=self.seed * 1_000_003 + self.ep)
        for t in range(EPISODE):
            self.port.step(self.acts[t % 8])
        return EPISODE * self.port.n_envs


def _time(runner, seconds: float) -> tuple[float, float]:
    steps = 0
    w0, c0 = time.perf_counter(), time.process_time()
    while time.perf_counter() - w0 < seconds:
        steps += runner.chunk()
    return steps / (time.perf_counter() - w0), steps / max(time.process_time() - c0, 1e-9)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenarios", nargs="+", default=list(SCENARIOS), choices=list(SCENARIOS))
    ap.add_argument("--batch", type=int, nargs="+", default=[1, 1024])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=0.3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    except OSError:
        commit = "?"
    print(f"# env steps/s, mpe2 vs Numba ports ({platform.processor() or platform.machine()}, 1 thread, "
          f"commit {commit}, seed {args.seed}, {args.rounds} interleaved rounds of >= {args.seconds} s, "
          f"load average {os.getloadavg()[0]:.1f} at start)")
    print(f"{'scenario':<24} {'impl':<5} {'B':>5} {'median steps/s':>15} {'min..max (wall)':>23} {'median (CPU)':>13} {'port/mpe2':>10}")
    for name in args.scenarios:  # one scenario at a time: 1024 mpe2 envs hold ~1.4 GB
        runners = {}
        for B in args.batch:
            runners[("mpe2", B)] = Mpe2Runner(name, B, args.seed)
            runners[("port", B)] = PortRunner(name, B, args.seed)
        wall: dict = {k: [] for k in runners}
        cpu: dict = {k: [] for k in runners}
        for _ in range(args.rounds):
            for k, r in runners.items():
                w, c = _time(r, args.seconds)
                wall[k].append(w)
                cpu[k].append(c)
        for (impl, B), ws in wall.items():
            med_cpu = statistics.median(cpu[(impl, B)])
            ratio = f"{med_cpu / statistics.median(cpu[('mpe2', B)]):>9.0f}x" if impl == "port" else ""
            print(f"{name:<24} {impl:<5} {B:>5} {statistics.median(ws):>15,.0f} {min(ws):>11,.0f}..{max(ws):<11,.0f} "
                  f"{med_cpu:>13,.0f} {ratio:>10}", flush=True)
        del runners


if __name__ == "__main__":
    main()
