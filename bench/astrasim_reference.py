"""Collectives against ASTRA-sim 2's analytical (congestion-unaware) backend, run for run.

    .venv/bin/python bench/astrasim_reference.py reference --astrasim PATH/TO/AstraSim_Analytical_Congestion_Unaware
    .venv/bin/python bench/astrasim_reference.py compare [--csv CSV]

``reference`` writes ASTRA-sim's inputs for every point of the matrix below (a network
``.yml``, a system ``.json``, one Chakra ET per rank holding the single collective, written
by :mod:`hw_models.training.chakra`), runs the binary (built outside this repository from
its public source; the commits of it and its submodules go in the CSV's header) and stores
``bench/data/astrasim_collectives.csv``: per point the largest ``sys[i] finished, N
cycles`` over the ranks (ASTRA-sim's cycle is 1 ns) and the same in seconds.

``compare`` recomputes our side for every stored point and prints it beside ASTRA-sim's with
the deviation: :class:`hw_models.training.astrasim.AstraAnalytical` (ASTRA-sim's analytical
semantics: GB/s of 2^30 B, ns, its chunking, in closed form) and, with ``--message``, our
message-level simulator set up with the same semantics
(:func:`hw_models.training.astrasim.message_collective_ns`, every message on a link of its
own as ASTRA-sim's congestion-unaware backend has it) and, with ``--congestion aware``,
messages sharing the network's links (``store-and-forward``: crossing them link by link,
as ASTRA-sim's congestion-aware backend moves a chunk; its stored runs:
``--csv bench/data/astrasim_collectives_aware.csv``). ``--csv-out`` writes the table,
``--markdown`` prints docs/validation.md's tables.

Matrix: bandwidth 50 GB/s and latency 500 ns per link; Ring(8), FullyConnected(8),
Switch(8) and Ring(4) x Ring(4); all-reduce with ring, double binary tree, halving-doubling
and direct on each dimension; reduce-scatter and all-gather with ring and direct; sizes
1 KiB .. 1 GiB, every factor of 4; system: endpoint-delay 10 ns, one active chunk per
dimension, ``preferred-dataset-splits`` 4, LIFO, ``collective-optimization`` baseline,
local memory bandwidth 1600 GB/s.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hw_models.training.astrasim import (  # noqa: E402
    ASTRA_SYSTEM, CONGESTION, AstraAnalytical, message_collective_ns)
from hw_models.training.chakra import EtNode, export_workload  # noqa: E402

MESSAGE_ALGORITHMS = ("ring", "direct", "halvingDoubling", "doubleBinaryTree")
DEFAULT_CSV = Path(__file__).resolve().parent / "data" / "astrasim_collectives.csv"
BANDWIDTH_GBPS = 50.0
LATENCY_NS = 500.0
NETWORKS = {  # name -> (topologies, npus per dimension)
    "Ring8": (("Ring",), (8,)),
    "FullyConnected8": (("FullyConnected",), (8,)),
    "Switch8": (("Switch",), (8,)),
    "Ring4xRing4": (("Ring", "Ring"), (4, 4)),
}
ALGORITHMS = {"allreduce": ("ring", "doubleBinaryTree", "halvingDoubling", "direct"),
              "reduce_scatter": ("ring", "direct"), "all_gather": ("ring", "direct")}
SIZES = [1 << e for e in range(10, 31, 2)]
FIELDS = ["network", "topologies", "npus", "collective", "algorithm", "size_bytes", "bandwidth_GBps",
          "latency_ns", "splits", "astrasim_cycles", "astrasim_s"]
_FINISHED = re.compile(r"sys\[(\d+)\] finished, (\d+) cycles")


def _repo_commits(src: Path) -> str:
    def head(p: Path) -> str:
        r = subprocess.run(["git", "-C", str(p), "rev-parse", "HEAD"], capture_output=True, text=True)
        return r.stdout.strip() or "unknown"
    subs = {"astra-sim": src, "chakra": src / "extern/graph_frontend/chakra",
            "astra-network-analytical": src / "extern/network_backend/analytical",
            "fmt": src / "extern/helper/fmt", "spdlog": src / "extern/helper/spdlog"}
    return "; ".join(f"{k} {head(p)}" for k, p in subs.items())


def points():
    for net, (topos, npus) in NETWORKS.items():
        for coll, algs in ALGORITHMS.items():
            for alg in algs:
                if alg == "halvingDoubling" and any(n & (n - 1) for n in npus):
                    continue
                for size in SIZES:
                    yield net, topos, npus, coll, alg, size


def write_inputs(work: Path, topos, npus, alg: str, system: dict, bandwidth_gbps: float, latency_ns: float) -> None:
    """ASTRA-sim's network (one entry per dimension), system (``alg`` for every collective) and
    memory inputs, in ``work``."""
    (work / "net.yml").write_text(
        f"topology: [ {', '.join(topos)} ]\nnpus_count: [ {', '.join(map(str, npus))} ]\n"
        f"bandwidth: [ {', '.join([str(bandwidth_gbps)] * len(topos))} ]\n"
        f"latency: [ {', '.join([str(latency_ns)] * len(topos))} ]\n")
    system = dict(system)
    for k in ("all-reduce", "all-gather", "reduce-scatter", "all-to-all"):
        system[f"{k}-implementation"] = [alg] * len(topos)
    (work / "sys.json").write_text(json.dumps(system, indent=1))
    (work / "mem.json").write_text(json.dumps({"memory-type": "NO_MEMORY_EXPANSION"}))


def run_astrasim(binary: Path, work: Path, prefix, ranks: int, what: str, timeout: float) -> int:
    """Run ASTRA-sim on the workload ``prefix`` with ``work``'s inputs; the last rank's finish cycle."""
    out = subprocess.run([str(binary), f"--workload-configuration={prefix}", f"--system-configuration={work / 'sys.json'}",
                          f"--network-configuration={work / 'net.yml'}",
                          f"--remote-memory-configuration={work / 'mem.json'}"],
                         capture_output=True, text=True, cwd=work, timeout=timeout)
    text = out.stdout + out.stderr
    found = {int(a): int(b) for a, b in _FINISHED.findall(text)}
    if out.returncode != 0 or len(found) != ranks:
        raise RuntimeError(f"ASTRA-sim failed on {what}: rc {out.returncode}\n{text[-2000:]}")
    return max(found.values())


def run_point(binary: Path, work: Path, topos, npus, coll, alg, size) -> int:
    ranks = 1
    for n in npus:
        ranks *= n
    write_inputs(work, topos, npus, alg, ASTRA_SYSTEM, BANDWIDTH_GBPS, LATENCY_NS)
    prefix = export_workload(work / "et", "coll", [EtNode(0, coll, coll, comm_bytes=size)], ranks)
    return run_astrasim(binary, work, prefix, ranks, f"{topos} {npus} {coll} {alg} {size}", 600)


def reference(args) -> None:
    binary = Path(args.astrasim).resolve()
    src = binary.parents[4] if len(binary.parents) > 4 else binary.parent
    rows = []
    t0 = time.process_time()
    pts = [p for p in points() if (args.sizes is None or p[-1] in args.sizes)
           and (args.networks is None or p[0] in args.networks)]
    backend = "congestion-aware" if "Congestion_Aware" in binary.name else "congestion-unaware"

    def one(i):
        with tempfile.TemporaryDirectory() as tmp:
            _, topos, npus, coll, alg, size = pts[i]
            return run_point(binary, Path(tmp), topos, npus, coll, alg, size)

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(one, range(len(pts))))
    for (net, topos, npus, coll, alg, size), cycles in zip(pts, results):
        rows.append({"network": net, "topologies": "x".join(topos), "npus": "x".join(map(str, npus)),
                     "collective": coll, "algorithm": alg, "size_bytes": size, "bandwidth_GBps": BANDWIDTH_GBPS,
                     "latency_ns": LATENCY_NS, "splits": ASTRA_SYSTEM["preferred-dataset-splits"],
                     "astrasim_cycles": cycles, "astrasim_s": f"{cycles * 1e-9:.9g}"})
        print(f"{net:16s} {coll:15s} {alg:17s} {size:>11d} B  {cycles:>12d} cycles", flush=True)
    out = Path(args.out)
    with out.open("w", newline="") as f:
        f.write(f"# ASTRA-sim 2 analytical {backend} backend; {_repo_commits(src)}\n")
        f.write(f"# made by bench/astrasim_reference.py reference; system {json.dumps(ASTRA_SYSTEM, sort_keys=True)}; "
                "one cycle = 1 ns; the time is the largest over the ranks\n")
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
    print(f"{len(rows)} points -> {out} ({time.process_time() - t0:.1f} s CPU in this process)")


def read_reference(path: Path = DEFAULT_CSV) -> list[dict]:
    with Path(path).open() as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def _model(row: dict, **options) -> AstraAnalytical:
    return AstraAnalytical(topologies=tuple(row["topologies"].split("x")),
                           npus=tuple(int(n) for n in row["npus"].split("x")),
                           bandwidth_GBps=float(row["bandwidth_GBps"]), latency_ns=float(row["latency_ns"]),
                           algorithm=row["algorithm"], splits=int(row["splits"]), **options)


def ours(row: dict, **options) -> float:
    """Our closed-form side's nanoseconds for one stored row."""
    return _model(row, **options).collective_ns(row["collective"], int(row["size_bytes"]))


def ours_message(row: dict, congestion: str = "unaware", **options) -> float | None:
    """Our message-level simulator's nanoseconds for one stored row (None: an algorithm it
    does not build)."""
    if row["algorithm"] not in MESSAGE_ALGORITHMS:
        return None
    return message_collective_ns(_model(row, **options), row["collective"], int(row["size_bytes"]), congestion)


NET_TITLES = {"Ring8": "Ring(8)", "FullyConnected8": "FullyConnected(8)", "Switch8": "Switch(8)",
              "Ring4xRing4": "Ring(4) × Ring(4)"}
ALG_TITLES = {"ring": "ring", "direct": "direct", "halvingDoubling": "halving-doubling",
              "doubleBinaryTree": "double binary tree"}


def markdown_tables(table: list[dict], message: bool) -> str:
    """docs/validation.md's tables from ``compare``'s rows: the largest |deviation| per
    network, collective and algorithm (closed form, and the message model when run), and
    selected all-reduce points in µs."""
    worst: dict[tuple, list[float]] = {}
    for t in table:
        w = worst.setdefault((t["collective"], t["algorithm"], t["network"]), [0.0, -1.0])
        w[0] = max(w[0], abs(float(t["closed_form_dev_percent"])))
        if t["message_dev_percent"] != "":
            w[1] = max(w[1], abs(float(t["message_dev_percent"])))
    nets = list(dict.fromkeys(t["network"] for t in table))
    lines = ["| collective / algorithm | " + " | ".join(NET_TITLES.get(n, n) for n in nets) + " |",
             "|---" * (len(nets) + 1) + "|"]
    for coll, alg in dict.fromkeys((t["collective"], t["algorithm"]) for t in table):
        cells = []
        for n in nets:
            a, b = worst[(coll, alg, n)]
            cells.append(f"{a:.2f} %" + (f" / {b:.2f} %" if message and b >= 0 else ""))
        title = {"allreduce": "all-reduce", "reduce_scatter": "reduce-scatter", "all_gather": "all-gather"}[coll]
        lines.append(f"| {title} / {ALG_TITLES.get(alg, alg)} | " + " | ".join(cells) + " |")
    lines += ["", "| network, algorithm | 1 KiB | 1 MiB | 1 GiB |", "|---|---|---|---|"]
    for n in [n for n in nets if n in ("Ring8", "Ring4xRing4")]:
        for alg in ("ring", "halvingDoubling", "direct", "doubleBinaryTree"):
            pts = {int(t["size_bytes"]): t for t in table
                   if t["network"] == n and t["collective"] == "allreduce" and t["algorithm"] == alg}
            if not pts:
                continue
            cells = []
            for size in (1 << 10, 1 << 20, 1 << 30):
                t = pts[size]
                peer, mine = float(t["astrasim_ns"]) / 1e3, float(t["closed_form_ns"]) / 1e3
                cell, dev = f"{peer:,.3f} / {mine:,.3f}", f"{float(t['closed_form_dev_percent']):+.2f} %"
                if message and t["message_ns"] != "":
                    cell += f" / {float(t['message_ns']) / 1e3:,.3f}"
                    dev += f" / {float(t['message_dev_percent']):+.2f} %"
                cells.append(f"{cell} ({dev})")
            lines.append(f"| {NET_TITLES.get(n, n)}, {ALG_TITLES[alg]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def compare(args) -> None:
    rows = read_reference(Path(args.csv))
    head = f"{'network':16s} {'collective':15s} {'algorithm':17s} {'bytes':>11s} {'ASTRA-sim us':>13s} " \
           f"{'closed us':>11s} {'dev %':>7s}"
    if args.message:
        head += f" {'message us':>11s} {'dev %':>7s}"
    print(head + "   (1 cycle = 1 ns)")
    worst: dict[tuple, list[float]] = {}
    table = []
    for r in rows:
        peer = float(r["astrasim_cycles"])
        mine = ours(r)
        dev = 100.0 * (mine - peer) / peer
        msg = ours_message(r, args.congestion) if args.message else None
        mdev = None if msg is None else 100.0 * (msg - peer) / peer
        key = (r["network"], r["collective"], r["algorithm"])
        w = worst.setdefault(key, [0.0, 0.0])
        w[0] = max(w[0], abs(dev))
        w[1] = max(w[1], abs(mdev or 0.0))
        line = (f"{r['network']:16s} {r['collective']:15s} {r['algorithm']:17s} {int(r['size_bytes']):>11d} "
                f"{peer / 1e3:>13.3f} {mine / 1e3:>11.3f} {dev:>7.2f}")
        if args.message:
            line += "" if msg is None else f" {msg / 1e3:>11.3f} {mdev:>7.2f}"
        print(line, flush=True)
        table.append({"network": r["network"], "collective": r["collective"], "algorithm": r["algorithm"],
                      "size_bytes": r["size_bytes"], "astrasim_ns": r["astrasim_cycles"],
                      "astrasim_us": f"{peer / 1e3:.3f}", "closed_form_ns": f"{mine:.0f}",
                      "closed_form_dev_percent": f"{dev:.2f}",
                      "message_ns": "" if msg is None else f"{msg:.1f}",
                      "message_dev_percent": "" if mdev is None else f"{mdev:.2f}"})
    print("\nlargest |deviation| per network, collective and algorithm (closed form" +
          (f", message model {args.congestion}" if args.message else "") + "):")
    for k, (a, b) in worst.items():
        print(f"  {' / '.join(k):50s} {a:6.2f} %" + (f" {b:6.2f} %" if args.message else ""))
    if args.markdown:
        print()
        print(markdown_tables(table, args.message))
    if args.csv_out:
        with Path(args.csv_out).open("w", newline="") as f:
            f.write(f"# made by bench/astrasim_reference.py compare{' --message' if args.message else ''}"
                    f" --congestion {args.congestion}; 1 cycle = 1 ns; dev = (ours - ASTRA-sim) / ASTRA-sim\n")
            w = csv.DictWriter(f, fieldnames=list(table[0]))
            w.writeheader()
            w.writerows(table)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("reference")
    r.add_argument("--astrasim", required=True, help="the AstraSim_Analytical_Congestion_Unaware binary (or "
                   "_Congestion_Aware: the CSV's header names the backend)")
    r.add_argument("--out", default=str(DEFAULT_CSV))
    r.add_argument("--jobs", type=int, default=2, help="ASTRA-sim runs at once")
    r.add_argument("--sizes", type=lambda t: [int(x) for x in t.split(",")], default=None,
                   help="only these sizes in bytes, comma-separated (default: the matrix's)")
    r.add_argument("--networks", type=lambda t: t.split(","), default=None,
                   help=f"only these networks, comma-separated, of {', '.join(NETWORKS)} (the congestion-aware "
                        "backend takes one dimension)")
    c = sub.add_parser("compare")
    c.add_argument("--csv", default=str(DEFAULT_CSV))
    c.add_argument("--message", action="store_true", help="also our message-level simulator")
    c.add_argument("--congestion", choices=CONGESTION, default="unaware",
                   help="the message model's links: one per message (unaware) or shared (aware)")
    c.add_argument("--csv-out", help="write the table as CSV")
    c.add_argument("--markdown", action="store_true", help="also print docs/validation.md's tables")
    args = ap.parse_args(argv)
    reference(args) if args.cmd == "reference" else compare(args)


if __name__ == "__main__":
    main()
