"""Speed of the flit-level all-reduce co-simulation alone (``nic.flit_cosim.run_flit``),
of one or more source trees side by side.

    .venv/bin/python bench/cosim_speed.py                      # this tree, 5 rounds
    .venv/bin/python bench/cosim_speed.py --roots OLD,. --rounds 7

Each round runs every tree once, in turn (interleaved, so load on the machine falls on
all of them alike), in a fresh process that first runs every case untimed (loading or
compiling the kernels) and then times each case ``--repeats`` times (best of those: one
figure per round). Prints, per case and tree, the median wall seconds over the rounds and
the spread (min..max). The schedule is laid out (``prepare``) outside the timing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

CASES = [  # (topology, algorithm, design, size in bytes)
    ("torus:4x4:c4", "multitree", "codesigned", 256 << 10),
    ("torus:4x4", "ring", "baseline", 64 << 10),
    ("torus:8x8", "dbtree", "codesigned", 64 << 10),
    ("fattree:k4:l2", "ring", "baseline", 64 << 10),
]


def _once(repeats: int) -> dict:
    """Seconds per case of the code on sys.path[0] (best of ``repeats``)."""
    from nic.allreduce import NicConfig
    from nic.collectives import build
    from nic.flit_cosim import run_flit
    from noc.flit import FlitNetworkConfig
    from noc.topology import parse_spec

    try:
        from nic.preparation import prepare
    except ImportError:  # a tree from before nic.allreduce was split by job
        from nic.allreduce import prepare
    net = FlitNetworkConfig(num_vcs=4, vc_depth_flits=32)
    runs = []
    for spec, algorithm, design, size in CASES:
        t = parse_spec(spec)
        s = build(t, algorithm)
        nic = NicConfig(design=design)
        prep = prepare(t, s, nic, size)
        runs.append((f"{spec} {algorithm} {design} {size >> 10} KiB", lambda t=t, s=s, p=prep, n=nic: run_flit(
            t, s, p, n, net)))
    cycles = {name: float(fn().arrive_cycles.max()) for name, fn in runs}  # warm-up: load or compile
    out = {}
    for name, fn in runs:
        best = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - t0)
        out[name] = {"seconds": best, "cycles": cycles[name]}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--roots", default=".", help="comma-separated source trees (default: this one)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--once", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.once:
        print(json.dumps(_once(args.repeats)))
        return 0
    roots = [str(Path(r).resolve()) for r in args.roots.split(",")]
    seconds: dict = {}
    cycles: dict = {}
    for rnd in range(args.rounds):
        for root in roots:
            env = {**os.environ, "PYTHONPATH": root}
            res = subprocess.run([sys.executable, __file__, "--once", "--repeats", str(args.repeats)], cwd=root,
                                 env=env, check=True, capture_output=True, text=True)
            for name, r in json.loads(res.stdout.strip().splitlines()[-1]).items():
                seconds.setdefault(name, {}).setdefault(root, []).append(r["seconds"])
                cycles.setdefault(name, {})[root] = r["cycles"]
        print(f"round {rnd + 1}/{args.rounds} done", file=sys.stderr)
    print(f"{'case':44s} {'tree':28s} {'cycles':>9s} {'median s':>9s} {'min..max s':>16s}")
    for name, by_root in seconds.items():
        for root, xs in by_root.items():
            print(f"{name:44s} {root[-28:]:28s} {cycles[name][root]:9.0f} {statistics.median(xs):9.4f} "
                  f"{min(xs):7.4f}..{max(xs):.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
