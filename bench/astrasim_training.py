"""Training iterations against ASTRA-sim 2, run for run: the eight paper workloads.

    .venv/bin/python bench/astrasim_training.py reference --astrasim PATH/TO/AstraSim_Analytical_Congestion_Unaware
    .venv/bin/python bench/astrasim_training.py compare [--csv CSV]

Each workload's per-layer costs (batch 16 per worker, the ``multitree-node`` device, the
closed-form engine: what ``hw-models train`` uses by default) are exported as Chakra ETs
(:func:`hw_models.training.chakra.layer_nodes`: forward, then per layer in reverse its
backward and its gradient all-reduce, durations in whole µs), one per NPU of a Ring(16)
network (50 GB/s, 500 ns), and run by ASTRA-sim's congestion-unaware analytical backend
with ring, direct, halving-doubling and double binary tree all-reduce (``--algorithms``)
and the system of bench/astrasim_reference.py except a FIFO scheduling policy
(all-reduces leave in the order their gradients are ready, as the timeline sends them).
ASTRA-sim runs one iteration; its time is the largest ``finished`` tick over the ranks and
its exposed communication that minus the rank's compute ticks.

``compare`` reads the same ETs back (``trace:``), runs our timeline with WFBP and
:class:`hw_models.training.astrasim.AstraAnalytical` as the cost of each all-reduce, and
prints iteration 0 beside ASTRA-sim: its end (the last backward or all-reduce of it) and
its exposed communication (end minus compute, ASTRA-sim's definition).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.astrasim_reference import _repo_commits, read_reference as read_rows, run_astrasim, write_inputs  # noqa: E402
from hw_models.training.astrasim import ASTRA_SYSTEM, AstraAnalytical  # noqa: E402
from hw_models.training.chakra import TraceWorkload, export_workload, layer_nodes, load_trace  # noqa: E402

DEFAULT_CSV = Path(__file__).resolve().parent / "data" / "astrasim_training.csv"
BATCH, DEVICE = 16, "multitree-node"
NPUS, BANDWIDTH_GBPS, LATENCY_NS = 16, 50.0, 500.0
SYSTEM = dict(ASTRA_SYSTEM, **{"scheduling-policy": "FIFO"})
FIELDS = ["workload", "npus", "bandwidth_GBps", "latency_ns", "layers", "allreduces", "grad_bytes",
          "compute_us_total", "astrasim_cycles", "astrasim_s", "astrasim_exposed_cycles", "astrasim_exposed_s",
          "algorithm", "astrasim_error"]
ALGORITHMS = ("ring", "direct", "halvingDoubling", "doubleBinaryTree")


def workload_costs():
    from hw_models.training.compute import get_device, layer_costs
    from hw_models.training.workloads import WORKLOADS

    dev = get_device(DEVICE)
    return {name: tuple(layer_costs(fn() if callable(fn) else fn, BATCH, dev)) for name, fn in WORKLOADS.items()}


def reference(args) -> None:
    binary = Path(args.astrasim).resolve()
    src = binary.parents[4]
    rows = []
    t0 = time.process_time()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for alg, (name, costs) in ((a, w) for a in args.algorithms for w in workload_costs().items()):
            write_inputs(work, ["Ring"], [NPUS], alg, SYSTEM, BANDWIDTH_GBPS, LATENCY_NS)
            nodes = layer_nodes(costs)
            prefix = export_workload(work / name, name, nodes, NPUS)
            compute_us = sum(n.duration_us for n in nodes if n.kind == "compute")
            row = {"workload": name, "npus": NPUS, "bandwidth_GBps": BANDWIDTH_GBPS, "latency_ns": LATENCY_NS,
                   "layers": len(costs), "allreduces": sum(n.kind == "allreduce" for n in nodes),
                   "grad_bytes": sum(c.grad_bytes for c in costs), "compute_us_total": compute_us,
                   "algorithm": alg, "astrasim_error": ""}
            try:
                cycles = run_astrasim(binary, work, prefix, NPUS, f"{name} {alg}", 3600)
            except RuntimeError as exc:  # kept: the run ASTRA-sim could not do, and why
                why = next((ln for ln in str(exc).splitlines() if "Assertion" in ln or "rror" in ln), str(exc))
                rows.append(dict(row, astrasim_error=why.strip()[-200:]))
                print(f"{name:18s} {alg:17s} ASTRA-sim failed: {why.strip()[-120:]}", flush=True)
                continue
            exposed = cycles - compute_us * 1000
            rows.append(dict(row, astrasim_cycles=cycles, astrasim_s=f"{cycles * 1e-9:.9g}",
                             astrasim_exposed_cycles=exposed, astrasim_exposed_s=f"{exposed * 1e-9:.9g}"))
            print(f"{name:18s} {alg:17s} {cycles:>14d} cycles, exposed {exposed:>12d}", flush=True)
    out_path = Path(args.out)
    with out_path.open("w", newline="") as f:
        f.write(f"# ASTRA-sim 2 analytical congestion-unaware backend; {_repo_commits(src)}\n")
        f.write(f"# made by bench/astrasim_training.py reference; Ring({NPUS}) {BANDWIDTH_GBPS} GB/s {LATENCY_NS} ns, "
                f"all-reduce per the algorithm column; system {json.dumps(SYSTEM, sort_keys=True)}; batch {BATCH}, device {DEVICE}; "
                "one cycle = 1 ns\n")
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
    print(f"{len(rows)} workloads -> {out_path} ({time.process_time() - t0:.1f} s CPU here)")


def ours(costs, algorithm: str = "ring", **options) -> tuple[float, float]:
    """Our iteration 0 on ``costs``: (end, exposed communication) in seconds."""
    from hw_models.training.policies import WaitFreeBackprop
    from hw_models.training.timeline import simulate

    comm = AstraAnalytical(("Ring",), (NPUS,), BANDWIDTH_GBPS, LATENCY_NS, algorithm,
                           splits=SYSTEM["preferred-dataset-splits"], **options)
    r = simulate(costs, comm, WaitFreeBackprop(), iterations=2)
    comp_end = max(e.end_s for e in r.compute_events if e.iteration == 0)
    comm_end = max((e.end_s for e in r.comm_events if e.iteration == 0), default=0.0)
    end = max(comp_end, comm_end)
    compute = sum(c.fwd_s + c.bwd_s for c in costs)
    return end, end - compute


def read_reference(path: Path = DEFAULT_CSV) -> list[dict]:
    return read_rows(path)


def side_by_side(rows: list[dict]) -> list[dict]:
    """Per stored workload: ASTRA-sim's iteration and exposed communication (s) and ours on
    the same ETs read back."""
    costs = workload_costs()
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in rows:
            if r.get("astrasim_error"):
                continue  # a run ASTRA-sim could not do
            name = r["workload"]
            prefix = export_workload(Path(tmp), name, layer_nodes(costs[name]), 1)
            alg = r.get("algorithm") or "ring"
            end, exposed = ours(TraceWorkload(name, load_trace(prefix)).layer_costs(), alg)
            out.append({"workload": name, "algorithm": alg, "astrasim_s": float(r["astrasim_s"]), "ours_s": end,
                        "astrasim_exposed_s": float(r["astrasim_exposed_s"]), "ours_exposed_s": exposed})
    return out


def compare(args) -> None:
    table = side_by_side(read_reference(Path(args.csv)))
    print(f"{'workload':18s} {'algorithm':17s} {'ASTRA-sim ms':>13s} {'ours ms':>10s} {'dev %':>7s} {'exposed ASTRA ms':>17s} "
          f"{'exposed ours ms':>16s}   (ASTRA-sim: 1 cycle = 1 ns)")
    for t in table:
        peer, end = t["astrasim_s"], t["ours_s"]
        print(f"{t['workload']:18s} {t['algorithm']:17s} {peer * 1e3:>13.4f} {end * 1e3:>10.4f} {100 * (end - peer) / peer:>7.2f} "
              f"{t['astrasim_exposed_s'] * 1e3:>17.4f} {t['ours_exposed_s'] * 1e3:>16.4f}")
    if args.markdown:
        print("\n| workload | all-reduce | ASTRA-sim ms | ours ms | deviation | exposed, ASTRA-sim ms | exposed, ours ms |")
        print("|---|---|---|---|---|---|---|")
        for t in table:
            peer, end = t["astrasim_s"], t["ours_s"]
            print(f"| {t['workload']} | {t['algorithm']} | {peer * 1e3:.4f} | {end * 1e3:.4f} | {100 * (end - peer) / peer:+.3f} % | "
                  f"{t['astrasim_exposed_s'] * 1e3:.4f} | {t['ours_exposed_s'] * 1e3:.4f} |")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("reference")
    r.add_argument("--astrasim", required=True)
    r.add_argument("--out", default=str(DEFAULT_CSV))
    r.add_argument("--algorithms", type=lambda t: t.split(","), default=list(ALGORITHMS),
                   help=f"ASTRA-sim's all-reduce algorithms to run, comma-separated (default: {','.join(ALGORITHMS)})")
    c = sub.add_parser("compare")
    c.add_argument("--csv", default=str(DEFAULT_CSV))
    c.add_argument("--markdown", action="store_true", help="also print docs/validation.md's table")
    args = ap.parse_args(argv)
    reference(args) if args.cmd == "reference" else compare(args)


if __name__ == "__main__":
    main()
