"""Compile the suite's heaviest Numba kernels into the cache, before the test workers start.

With an empty Numba cache each pytest-xdist worker compiles the kernels its first tests
need, and the two workers start on the same kernels (the message-level loop, the flit
co-simulation, the flit network, the MADDPG batch kernels): minutes of the same compile
done twice. ``tests/conftest.py`` runs this script first, its jobs split over the workers'
cores, so that each kernel is compiled once and the workers load it from the cache.

Each job is a tiny real run through the public API, so the kernels are compiled for exactly
the argument types the tests use (a run that compiles something else only costs time: the
tests stay correct, they compile what they need themselves).

    python tests/warm_kernels.py [JOB ...]     # default: every job; --list names them
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _allreduce(model: str, narrow: bool = False) -> None:
    from nic.allreduce import NicConfig, simulate_allreduce
    from nic.collectives import build
    from noc.flit import FlitNetworkConfig
    from noc.topology import parse_spec

    t = parse_spec("torus:2x2")
    if narrow:
        t = t.with_links(bytes_per_cycle=8)
    net = FlitNetworkConfig(num_vcs=4, vc_depth_flits=32)
    for design in ("codesigned", "baseline"):
        simulate_allreduce(t, build(t, "ring"), NicConfig(design=design), net, 4096, model=model)


def message() -> None:
    """The message-level event loop (nic.message_loop.run)."""
    _allreduce("message")


def cosim() -> None:
    """The flit-level co-simulation with links at least a flit wide (nic.flit_cosim_stages.cosim)."""
    _allreduce("flit")


def cosim_narrow() -> None:
    """The co-simulation's second network type: links narrower than a flit."""
    _allreduce("flit", narrow=True)


def traffic() -> None:
    """The flit network under synthetic traffic (noc.flit_traffic._advance)."""
    from noc.flit_traffic import TrafficConfig, run_traffic
    from noc.topology import parse_spec

    run_traffic(parse_spec("torus:2x2"), None, TrafficConfig(rate_packets=0.1, warmup_cycles=10, measure_cycles=20))


def maddpg() -> None:
    """The MADDPG trainer's batch kernels: acting, forward, the sampled forward, backward."""
    from maddpg.trainer import MADDPG, make_config

    for fixed_point_bits in (0, 16):  # float32 and a Q-format datapath
        cfg = make_config(n_agents=2, n_envs=2, batch_size=64, learning_starts=64, update_every_steps=8,
                          max_cycles=25, fixed_point_bits=fixed_point_bits,
                          fixed_point_frac_bits=10 if fixed_point_bits else 0)
        MADDPG(cfg).train(episodes=6)


JOBS = {f.__name__: f for f in (message, cosim, cosim_narrow, traffic, maddpg)}


def main(argv: list[str]) -> int:
    if argv[:1] == ["--list"]:
        for name, f in JOBS.items():
            print(f"{name}: {f.__doc__}")
        return 0
    unknown = [a for a in argv if a not in JOBS]
    if unknown:
        print(f"error: unknown job(s) {', '.join(unknown)}; choose from {', '.join(JOBS)}", file=sys.stderr)
        return 2
    for name in argv or list(JOBS):
        t0 = time.perf_counter()
        JOBS[name]()
        print(f"warm-up {name}: {time.perf_counter() - t0:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
