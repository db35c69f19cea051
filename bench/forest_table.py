"""The forest all-reduce beside ring, double binary tree and MultiTree on many networks, as
bus GB/s and % of the exact throughput optimum; and the forest's synthesis time.

    .venv/bin/python bench/forest_table.py [--model message|flit] [--only NAME ...] [--algorithms A ...]
        [--sizes-kib 32 1024 65536]
    .venv/bin/python bench/forest_table.py --table [--model message]      # the docs' table, from the CSV
    .venv/bin/python bench/forest_table.py --synthesis torus:16x16:c4 torus:32x32:c4 torus:64x64:c4

    .venv/bin/python bench/forest_table.py --check [--model message]      # the targets, from the CSV

Each run (co-designed NIC and routers of ``hw-models allreduce``'s defaults: ``NicConfig()``,
``FlitNetworkConfig()``, at flit level flits as wide as a network's widest link where that
is wider than 16 B: :func:`nic_for`; verifier seed 1) is appended to ``bench/data/forest_table_<model>.csv``
as soon as it finishes, and a run stored there is not run again, so an interrupted bench
resumes. ``forest`` is built for each size with that NIC and those routers (below 4 MiB
the fastest of its candidates; the ``construction`` column names the one taken).
``--table`` prints the markdown table of docs/collectives.md. % of optimum is
``optimal_bound(topology).all_reduce_cycles(size)`` over the run's cycles (100 %: the
optimum; exact arithmetic for the bound). The
heterogeneous machine (:func:`two_by_eight`) is two boxes of eight accelerators, every
pair in a box joined by a 32 B/cycle link each way, every pair across the boxes by a
0.5 B/cycle one, 4 NIs per accelerator: the cut between the boxes binds.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import math
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

sys.path.insert(0, str(REPO / "bench"))

from forestcoll_msccl import forestcoll_schedule, not_expressible  # noqa: E402

from nic.allreduce import simulate_allreduce  # noqa: E402
from nic.collectives import build, builder, optimal_bound, size_options, timing_options  # noqa: E402
from nic.nic_config import NicConfig  # noqa: E402
from noc.flit import FlitNetworkConfig  # noqa: E402
from noc.base.errors import ConfigError  # noqa: E402
from noc.topology import Topology, parse_spec  # noqa: E402

BASELINES = ("ring", "dbtree", "multitree")
ALGORITHMS = (*BASELINES, "forestcoll", "forest")
"""The table's columns; ``forestcoll`` is ForestColl's own program where the peer wrote one
(bench/forestcoll_msccl.py), not a registry algorithm."""
HEADERS = {"forestcoll": "ForestColl's trees"}
SPECS = ("torus:4x4", "torus:4x4:c4", "torus:8x8", "torus:8x8:c4", "mesh:4x4", "mesh:8x8", "fattree:k4:l2",
         "bigraph:4x4", "hypercube:d4")
FIELDS = ("topology", "size_bytes", "algorithm", "model", "cycles", "busbw_gbps", "optimum_cycles",
          "optimum_percent", "verified", "construction")
TARGETS = {"message": 97.0, "flit": 95.0}
"""% of the optimum forest reaches at 64 MiB on every network of the table, per model."""
MAIN_JOB, SPEEDUP = "torus:4x4:c4", 1.25
"""forest's bus bandwidth over MultiTree's on the main job's network from 8 MiB on."""


def two_by_eight() -> Topology:
    """Two boxes of eight accelerators (full:16:c4 with box-local links at 32 B/cycle and
    links across the boxes at 0.5 B/cycle; NI links 16 B/cycle): the cut between the boxes binds."""
    t = parse_spec("full:16:c4")
    e = t.num_endpoints
    box = lambda v: (v - e) // 8  # noqa: E731 - router vertex -> box
    router = (t.link_src >= e) & (t.link_dst >= e)
    same = router & (box(t.link_src) == box(t.link_dst))
    bw = np.where(router, np.where(same, 32.0, 0.5), t.link_bytes_per_cycle)
    return dataclasses.replace(t, name="2x8 box32 cross0.5", link_bytes_per_cycle=bw.astype(np.float64))


def topologies(only=None) -> dict[str, Topology]:
    out = {s: parse_spec(s) for s in SPECS}
    het = two_by_eight()
    out[het.name] = het
    return {k: v for k, v in out.items() if not only or k in only}


def csv_path(model: str) -> Path:
    return REPO / "bench" / "data" / f"forest_table_{model}.csv"


def read_rows(model: str) -> list[dict]:
    p = csv_path(model)
    if not p.exists():
        return []
    with p.open() as f:
        return list(csv.DictReader(f))


def append_row(model: str, row: dict) -> None:
    p = csv_path(model)
    new = not p.exists()
    with p.open("a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        if new:
            w.writeheader()
        w.writerow(row)
        f.flush()
        os.fsync(f.fileno())  # a finished run survives an interrupted bench


def schedule(name: str, t: Topology, algorithm: str, size: int, nic: NicConfig, network: FlitNetworkConfig):
    """The schedule a run of ``algorithm`` at ``size`` bytes uses (None: ForestColl wrote none)."""
    if algorithm == "forestcoll":
        return forestcoll_schedule(name)
    return build(t, algorithm, **size_options(algorithm, size), **timing_options(algorithm, nic, network))


def nic_for(t: Topology, model: str) -> NicConfig:
    """``NicConfig()``; at flit level on a network with links wider than its flit (the
    two-box machine's 32 B/cycle), flits as wide as the widest link: the flit level carries
    at most one flit per link per cycle."""
    nic = NicConfig()
    widest = math.ceil(float(t.link_bytes_per_cycle.max()))
    return nic.model_copy(update={"flit_bytes": widest}) if model == "flit" and widest > nic.flit_bytes else nic


def run(args) -> None:
    unexpressed = not_expressible()
    done = {(r["topology"], int(r["size_bytes"]), r["algorithm"]) for r in read_rows(args.model)}
    network = FlitNetworkConfig()
    for name, t in topologies(args.only).items():
        ob = optimal_bound(t)
        nic = nic_for(t, args.model)
        for a in args.algorithms or ALGORITHMS:
            todo = [kib for kib in args.sizes_kib if (name, kib * 1024, a) not in done]
            for kib in todo:
                size = kib * 1024
                t0 = time.perf_counter()
                s = schedule(name, t, a, size, nic, network)
                if s is None:
                    print(f"skipped {name} {a}: ForestColl wrote no program ({unexpressed.get(name, 'not made')})",
                          flush=True)
                    break
                try:
                    r = simulate_allreduce(t, s, nic, network, size_bytes=size, model=args.model, seed=1)
                except ConfigError as exc:  # e.g. the two-box machine's 32 B/cycle links at flit level
                    print(f"skipped {name} {a} {kib} KiB ({args.model}): {exc}", flush=True)
                    continue
                opt = float(ob.all_reduce_cycles(size))
                row = {"topology": name, "size_bytes": size, "algorithm": a, "model": args.model,
                       "cycles": round(r.total_cycles, 3), "busbw_gbps": round(r.busbw_gbps, 3),
                       "optimum_cycles": round(opt, 3), "optimum_percent": round(100 * opt / r.total_cycles, 2),
                       "verified": r.verified, "construction": s.params.get("construction", "")}
                append_row(args.model, row)
                print(" ".join(f"{k}={v}" for k, v in row.items()), f"wall={time.perf_counter() - t0:.0f}s",
                      flush=True)


def check(model: str) -> list[str]:
    """The target lines for ``model``'s CSV: forest at 64 MiB at least :data:`TARGETS` % of
    the optimum, and at 32 KiB no more cycles than the fastest of ring, dbtree and MultiTree;
    one line per network, ``ok`` or ``MISS``; and on :data:`MAIN_JOB` from 8 MiB on at
    least :data:`SPEEDUP` times MultiTree's bus bandwidth."""
    by = {(r["topology"], int(r["size_bytes"]), r["algorithm"]): r for r in read_rows(model)}
    out = []
    for name in dict.fromkeys(k[0] for k in by):
        big = by.get((name, 64 << 20, "forest"))
        if big is not None:
            pct = float(big["optimum_percent"])
            out.append(f"{'ok  ' if pct >= TARGETS[model] else 'MISS'} {name} 64 MiB: forest {pct:.2f} % of the "
                       f"optimum (target >= {TARGETS[model]:g} %)")
        small = by.get((name, 32 << 10, "forest"))
        others = [by[(name, 32 << 10, a)] for a in BASELINES if (name, 32 << 10, a) in by]
        if small is not None and others:
            best = min(others, key=lambda r: float(r["cycles"]))
            ok = float(small["cycles"]) <= float(best["cycles"])
            out.append(f"{'ok  ' if ok else 'MISS'} {name} 32 KiB: forest ({small['construction']}) "
                       f"{float(small['cycles']):,.0f} cycles, best other {best['algorithm']} "
                       f"{float(best['cycles']):,.0f}")
    for size in sorted({k[1] for k in by if k[0] == MAIN_JOB and k[1] >= 8 << 20}):
        f, m = by.get((MAIN_JOB, size, "forest")), by.get((MAIN_JOB, size, "multitree"))
        if f is not None and m is not None:
            x = float(f["busbw_gbps"]) / float(m["busbw_gbps"])
            out.append(f"{'ok  ' if x >= SPEEDUP else 'MISS'} {MAIN_JOB} {size >> 20} MiB: forest {x:.3f}x "
                       f"MultiTree's bus bandwidth (target >= {SPEEDUP:g}x)")
    return out


def table(model: str) -> str:
    """The markdown table of ``model``'s CSV (bus GB/s and % of the optimum; "–" not run,
    "n/e" ForestColl could not express the network: the reasons follow the table)."""
    rows = read_rows(model)
    by = {(r["topology"], int(r["size_bytes"]), r["algorithm"]): r for r in rows}
    unexpressed = not_expressible()
    order = [*SPECS, two_by_eight().name]  # the networks in the bench's order, then any other
    names = sorted(dict.fromkeys(r["topology"] for r in rows),
                   key=lambda n: order.index(n) if n in order else len(order))
    sizes = sorted({int(r["size_bytes"]) for r in rows})
    lines = ["| network | size | " + " | ".join(HEADERS.get(a, a) for a in ALGORITHMS) + " |",
             "|---|---:|" + "---:|" * len(ALGORITHMS)]
    for name in names:
        for size in sizes:
            cells = []
            for a in ALGORITHMS:
                r = by.get((name, size, a))
                if r is not None:
                    cells.append(f"{float(r['busbw_gbps']):.1f} ({float(r['optimum_percent']):.1f} %)")
                else:
                    cells.append("n/e" if a == "forestcoll" and name in unexpressed else "–")
            if all(c in ("–", "n/e") for c in cells):
                continue
            kib = size // 1024
            label = f"{kib // 1024} MiB" if kib >= 1024 else f"{kib} KiB"
            lines.append(f"| `{name}` | {label} | " + " | ".join(cells) + " |")
    missing = [n for n in names if n in unexpressed]
    if missing:
        lines += ["", "n/e: ForestColl wrote no program for " + "; ".join(
            f"`{n}` ({unexpressed[n]})" for n in missing) + "."]
    return "\n".join(lines)


def synthesis(specs: list[str], repeats: int = 3) -> None:
    """The forest builder's wall time per network (the builder itself: ``build`` keeps the
    schedules it built), median of ``repeats`` after a first call that imports and compiles."""
    import resource  # noqa: PLC0415

    forest = builder("forest")
    print("| network | transfers | steps | synthesis (median; min–max) | peak RSS |")
    print("|---|---:|---:|---:|---:|")
    for spec in specs:
        t = parse_spec(spec)
        runs = []
        for i in range(repeats + 1):
            s = None  # the previous schedule freed before the next build
            t0 = time.perf_counter()
            s = forest(t)
            if i:  # the first call: imports and compiles
                runs.append(time.perf_counter() - t0)
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
        print(f"| `{spec}` | {s.num_transfers:,} | {s.num_steps} | {statistics.median(runs):.2f} s "
              f"({min(runs):.2f}–{max(runs):.2f}) | {rss:.1f} GB |", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", choices=("message", "flit"), default="message")
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--algorithms", nargs="*", choices=ALGORITHMS, help="run only these (default: all four)")
    ap.add_argument("--sizes-kib", nargs="*", type=int, default=[32, 1024, 8192, 65536])
    ap.add_argument("--table", action="store_true")
    ap.add_argument("--check", action="store_true", help="print the target lines from the CSV")
    ap.add_argument("--synthesis", nargs="*")
    ap.add_argument("--repeats", type=int, default=3, help="timed builds per network (--synthesis)")
    args = ap.parse_args(argv)
    if args.table:
        print(table(args.model))
    elif args.check:
        print("\n".join(check(args.model)))
    elif args.synthesis:
        synthesis(args.synthesis, args.repeats)
    else:
        run(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
