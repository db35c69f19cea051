"""Speed of the all-reduce simulations: a 64 MiB MultiTree all-reduce on 4x4 and 8x8 tori.

    .venv/bin/python bench/allreduce_speed.py [--sizes 64MiB] [--models message,flit]

Prints, per (topology, model): wall time, simulated cycles and simulated cycles per second
of one all-reduce with the co-designed NIC (4 NIs per node), after a warm-up run that
compiles the Numba kernels. Targets (issue 5): message level, 8x8 64 MiB in under 2 s;
flit level under 2 minutes.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from noc.base.units import parse_sizes_bytes  # noqa: E402
from nic.allreduce import NicConfig, simulate_allreduce  # noqa: E402
from nic.collectives import multitree  # noqa: E402
from noc.topology import parse_spec  # noqa: E402


def network_config(model: str):
    from noc.flit import FlitNetworkConfig  # noqa: PLC0415

    return FlitNetworkConfig()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topologies", default="torus:4x4:c4,torus:8x8:c4")
    ap.add_argument("--sizes", default="64MiB")
    ap.add_argument("--models", default="message,flit")
    args = ap.parse_args()
    print(f"{'topology':<16}{'model':<9}{'size':>10}{'wall s':>10}{'sim cycles':>14}{'cycles/s':>14}")
    for model in args.models.split(","):
        net = network_config(model)
        warm = parse_spec("torus:4x4:c4")
        simulate_allreduce(warm, multitree(warm), NicConfig(), net, 1 << 16, model=model)  # compile
        for spec in args.topologies.split(","):
            t = parse_spec(spec)
            s = multitree(t)
            for size in parse_sizes_bytes(args.sizes):
                t0 = time.perf_counter()
                r = simulate_allreduce(t, s, NicConfig(), net, size, model=model)
                wall = time.perf_counter() - t0
                print(f"{spec:<16}{model:<9}{size:>10}{wall:>10.2f}{r.total_cycles:>14,.0f}{r.total_cycles / wall:>14,.0f}",
                      flush=True)


if __name__ == "__main__":
    main()
