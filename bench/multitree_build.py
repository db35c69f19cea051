"""Speed of the MultiTree construction (nic.collectives.multitree).

    .venv/bin/python bench/multitree_build.py [--sizes 4,8,16,32] [--nis 1,4]

Targets (issue 3): a 16x16 torus (256 nodes) in under 1 s, a 32x32 torus (1024 nodes) in
under 30 s. Prints, per torus and NI count: construction steps, tree edges, the time of the
tree construction alone (Numba kernel, compiled beforehand) and of the whole Schedule
(construction + transfer arrays), best of --repeat runs.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nic.collectives.multitree import multitree, multitree_trees  # noqa: E402
from noc.topology import torus  # noqa: E402


def best_of(repeat: int, fn):
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="4,8,16,32", help="torus sides k (k x k), comma-separated")
    ap.add_argument("--nis", default="1,4", help="NIs per node, comma-separated")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    multitree_trees(torus((4, 4)))  # compile (or load the cache) outside the timings
    print(f"{'topology':<16}{'nodes':>7}{'steps':>7}{'edges':>10}{'trees s':>10}{'schedule s':>12}")
    for k in (int(x) for x in args.sizes.split(",")):
        for nis in (int(x) for x in args.nis.split(",")):
            t = torus((k, k), c=nis)
            rep = 1 if k >= 32 else args.repeat
            t_trees, (_, child, _, _, steps) = best_of(rep, lambda: multitree_trees(t))
            t_sched, _ = best_of(rep, lambda: multitree(t))
            print(f"{t.name:<16}{t.num_nodes:>7}{steps:>7}{len(child):>10}{t_trees:>10.3f}{t_sched:>12.3f}", flush=True)


if __name__ == "__main__":
    main()
