"""The forest all-reduce beside MultiTree and ring, as % of the throughput optimum.

    .venv/bin/python bench/forest_compare.py [--model message|flit] [--topos torus:4x4:c4 ...] [--sizes-kib 32 ...]

For each topology and size: cycles of forest, MultiTree and ring (codesigned NIC, default
network, at the chosen level) and each as % of ``optimal_bound(topology).all_reduce_cycles``
(exact; 100 % is the optimum), then the synthesis time of forest on larger tori (median of
three calls after a first one). Prints a markdown table.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nic.allreduce import simulate_allreduce  # noqa: E402
from nic.collectives import build, optimal_bound  # noqa: E402
from nic.collectives.forest import forest  # noqa: E402
from noc.topology import parse_spec  # noqa: E402

ALGORITHMS = ("forest", "multitree", "ring")


def schedule(t, name):
    return forest(t) if name == "forest" else build(t, name)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", choices=("message", "flit"), default="message")
    ap.add_argument("--topos", nargs="*", default=["torus:4x4", "torus:4x4:c2", "torus:4x4:c4", "torus:8x8",
                                                   "torus:8x8:c4"])
    ap.add_argument("--sizes-kib", nargs="*", type=int, default=[32, 8192, 65536])
    ap.add_argument("--synthesis", nargs="*", default=["torus:16x16:c4", "torus:32x32:c4"])
    args = ap.parse_args(argv)
    print(f"| topology | size | level | " + " | ".join(f"{a} cycles (% of optimum)" for a in ALGORITHMS) + " |")
    print("|---|---:|---|" + "---:|" * len(ALGORITHMS))
    for spec in args.topos:
        t = parse_spec(spec)
        ob = optimal_bound(t)
        scheds = {a: schedule(t, a) for a in ALGORITHMS}
        for kib in args.sizes_kib:
            size = kib * 1024
            opt = float(ob.all_reduce_cycles(size))
            cells = []
            for a in ALGORITHMS:
                r = simulate_allreduce(t, scheds[a], size_bytes=size, model=args.model)
                cells.append(f"{r.total_cycles:,.0f} ({100 * opt / r.total_cycles:.1f} %)")
            print(f"| `{spec}` | {kib:,} KiB | {args.model} | " + " | ".join(cells) + " |", flush=True)
    for spec in args.synthesis:
        t = parse_spec(spec)
        forest(t)
        runs = []
        for _ in range(3):
            t0 = time.perf_counter()
            s = forest(t)
            runs.append(time.perf_counter() - t0)
        print(f"synthesis {spec}: {s.num_transfers:,} transfers, {s.num_steps} steps, median {statistics.median(runs):.2f} s "
              f"(min {min(runs):.2f}, max {max(runs):.2f})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
