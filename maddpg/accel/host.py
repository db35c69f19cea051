"""The host side: the PCIe link and the CPU's measured times.

PCIe: generation -> per-lane rate and line code (gen 1-2: 2.5/5 GT/s, 8b/10b; gen 3-5:
8/16/32 GT/s, 128b/130b), times lanes and ``pcie_efficiency`` (packet headers) -> payload
bytes per second; each DMA costs ``pcie_latency_us`` more. Per update the host sends every
agent's sampled minibatch (each engine gets its own agent's columns of all of them, plus its
rewards and done flags) and reads back the actors' parameters, which the CPU acts with.

The CPU's side is measured on this machine with the trainer itself (:func:`measure_cpu`):
environment step time (acting, stepping, storing), the sampling of one update's minibatches
(indices and the replay gather, which stays on the CPU), and the whole CPU update — the
baseline. A measurement is a :class:`CpuProfile`, saved as JSON and reusable.
"""

from __future__ import annotations

import json
import math
import platform
import statistics
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from maddpg.accel.config import AccelConfig, Workload
from noc.base.errors import ConfigError

GT_PER_S = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0}


def pcie_bytes_per_s(cfg: AccelConfig) -> float:
    code = 0.8 if cfg.pcie_gen <= 2 else 128.0 / 130.0
    return cfg.pcie_lanes * GT_PER_S[cfg.pcie_gen] * 1e9 * code / 8.0 * cfg.pcie_efficiency


def h2d_bytes(w: Workload, cfg: AccelConfig) -> int:
    """Host to card per update: every agent's minibatch (all agents' observations, actions,
    next observations) and each agent's rewards and done flags."""
    words = w.n_agents * w.batch * (2 * sum(w.obs_dims) + sum(w.act_dims)) + w.n_agents * w.batch * 2
    return words * cfg.word_bytes


def d2h_bytes(w: Workload, cfg: AccelConfig) -> int:
    """Card to host per update: the actors' parameters, for acting."""
    from maddpg.accel.resources import params

    return sum(params(w.actor_sizes(i)) for i in range(w.n_agents)) * cfg.word_bytes


def transfer_s(nbytes: int, cfg: AccelConfig, dmas: int = 1) -> float:
    return nbytes / pcie_bytes_per_s(cfg) + dmas * cfg.pcie_latency_us * 1e-6


@dataclass(frozen=True)
class CpuProfile:
    """Measured CPU times (seconds) for one scenario, agent count and minibatch."""

    env: str
    n_agents: int
    batch: int
    env_step_s: float  # one environment step of one env: acting, stepping, storing
    sample_s: float  # one update's minibatch sampling for every agent (indices and gather)
    update_s: float  # one whole CPU update (every agent), sampling included: the baseline
    threads: int
    machine: str
    measured: str
    seed: int
    repeats: int

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, sort_keys=True)


def machine_name() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{platform.node()} / {cpu}"


def load_profile(path: str | Path) -> CpuProfile:
    """A profile :meth:`CpuProfile.to_json` wrote; a missing, unreadable or hand-damaged
    one (a field missing, unknown or of the wrong type, a time not a finite number > 0) is a
    one-line :class:`ConfigError` naming the field."""
    p = Path(path)
    try:
        d = json.loads(p.read_text())
    except FileNotFoundError:
        raise ConfigError(f"CPU profile {p}: no such file") from None
    except (json.JSONDecodeError, UnicodeDecodeError, IsADirectoryError) as exc:
        raise ConfigError(f"CPU profile {p}: not a profile written by this tool ({type(exc).__name__})") from None
    names = [f.name for f in fields(CpuProfile)]
    if not isinstance(d, dict) or set(d) != set(names):
        got = sorted(d) if isinstance(d, dict) else type(d).__name__
        raise ConfigError(f"CPU profile {p}: not a profile written by this tool (fields {got}; expected "
                          f"{', '.join(names)})")
    for f in fields(CpuProfile):
        v = d[f.name]
        if f.type in ("float", float):
            ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0
            rule = "a finite number of seconds > 0"
        elif f.type in ("int", int):
            ok, rule = isinstance(v, int) and not isinstance(v, bool) and v >= 0, "an integer >= 0"
        else:
            ok, rule = isinstance(v, str), "a string"
        if not ok:
            raise ConfigError(f"CPU profile {p}: field {f.name!r} = {v!r}; allowed: {rule}")
    return CpuProfile(**d)


def measure_cpu(env: str, n_agents: int, batch: int = 1024, seed: int = 0, repeats: int = 5, episodes: int = 8,
                fixed_point_bits: int = 0, fixed_point_frac_bits: int = 0, threads: int | None = None) -> CpuProfile:
    """Time the trainer on this machine: ``episodes`` episodes without updates (environment
    step time), then ``repeats`` minibatch samplings and updates (median of each; one
    warm-up first, which compiles)."""
    from maddpg.trainer import MADDPG, make_config

    cfg = make_config(env=env, n_agents=n_agents, seed=seed, batch_size=batch, buffer_size=max(4 * batch, 4096),
                      learning_starts=max(4 * batch, 4096) + 1, fixed_point_bits=fixed_point_bits,
                      fixed_point_frac_bits=fixed_point_frac_bits)
    t = MADDPG(cfg, threads=threads)
    t.run_round()  # warm-up: compiles acting and the environment
    t0 = time.perf_counter()
    steps0 = t.env_steps
    for _ in range(episodes):
        t.run_round()
    env_step = (time.perf_counter() - t0) / max(t.env_steps - steps0, 1)
    t.update()  # warm-up: compiles the update's kernels
    samples, updates = [], []
    for _ in range(repeats):
        a = time.perf_counter()
        for i in range(t.n):
            t._sample(i, t.mb)
        samples.append(time.perf_counter() - a)
        a = time.perf_counter()
        t.update()
        updates.append(time.perf_counter() - a)
    return CpuProfile(env, n_agents, batch, env_step, statistics.median(samples), statistics.median(updates),
                      t.update_threads(), machine_name(), time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), seed,
                      repeats)
