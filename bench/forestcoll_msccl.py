"""ForestColl's own all-reduce trees as MSCCL XML, made by the peer, run on our NIC beside ours.

Peer: github.com/liangyuRain/ForestColl (Apache-2.0), unpacked outside the repo with its
own virtual environment (bench/forestcoll_reference.py says how). Making the XML:

    .venv/bin/python bench/forestcoll_msccl.py --peer PEER --peer-python PEER_VENV/bin/python \\
        [--commit SHA] --make torus:4x4 mesh:4x4 ...

runs, in the peer's interpreter, on our topology as ForestColl's graph input (the same
conversion as bench/forestcoll_reference.py):

    (U, k), (Ts, Cs) = optimal_pipeline_spanning_trees(G, compute_nodes=nodes)
    xml = construct_algo_allreduce(Ts, Cs, k, gpus, 1)        # its to_xml.py, 1 instance

with each tree of C chunks split into C one-chunk trees (its XML writer takes those) and
each path between two compute nodes (through their routers) written as one edge on
channel 0; GPU ``n`` is our node ``n``. The XML goes to
``bench/data/forestcoll_msccl/<topology>.xml`` and the peer's commit, U, k and run time to
``bench/data/forestcoll_msccl/provenance.csv``; where the peer fails (e.g. its XML writer's
108 thread blocks a GPU), its failing line, U and k go to ``not_expressible.csv`` there.
``bench/forest_table.py --algorithms forestcoll`` runs the programs in the docs' table. Running them:

    .venv/bin/python bench/forestcoll_msccl.py --run [--sizes-kib 32 1024 65536]

imports each XML with ``nic.collectives.msccl.from_msccl_xml``, verifies it on exact sums
and runs it and our ``forest`` on the co-designed NIC at message level (default network,
verifier seed 1): a markdown table of cycles and % of the exact optimum.
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from forestcoll_reference import capacity_scale, forestcoll_graph, topology_sha256  # noqa: E402

from noc.topology import parse_spec  # noqa: E402

OUT = REPO / "bench" / "data" / "forestcoll_msccl"
PROVENANCE = OUT / "provenance.csv"
NOT_EXPRESSIBLE = OUT / "not_expressible.csv"
FAILED_FIELDS = ["topology", "forestcoll_U", "forestcoll_k", "reason", "topology_sha256", "peer_commit", "settings"]
FIELDS = ["topology", "forestcoll_U", "forestcoll_k", "transfers", "steps", "forestcoll_seconds", "topology_sha256",
          "peer_commit", "settings"]
SETTINGS = ("optimal_pipeline_spanning_trees(G, compute_nodes=nodes); construct_algo_allreduce(Ts, Cs, k, gpus, 1) "
            "with C-chunk trees split into C one-chunk trees and each path one edge on channel 0")

DRIVER = r"""
import json, sys, time
import xml.etree.ElementTree as ET
sys.path.insert(0, sys.argv[1])
import networkx as nx
from pipeline_allgather import optimal_pipeline_spanning_trees
from to_xml import construct_algo_allreduce
job = json.load(sys.stdin)
G = nx.DiGraph()
for a, b, c in job["edges"]:
    G.add_edge(tuple(a), tuple(b), capacity=c)
nodes = [tuple(v) for v in job["nodes"]]
t0 = time.perf_counter()
(U, k), (Ts, Cs) = optimal_pipeline_spanning_trees(G, compute_nodes=nodes)
print(json.dumps({"U": repr(U), "k": k}), file=sys.stderr, flush=True)
gpu = {v: v[1] for v in nodes}
trees, chunks, count = {}, {}, {}
for (u, i), paths in sorted(Ts.items()):
    for _ in range(Cs[u, i]):
        j = count.get(gpu[u], 0)
        count[gpu[u]] = j + 1
        trees[gpu[u], j] = [[(gpu[p[0][0]], gpu[p[-1][1]], 0)] for p in paths]
        chunks[gpu[u], j] = 1
xml = ET.tostring(construct_algo_allreduce(trees, chunks, k, sorted(gpu.values()), 1), encoding="unicode")
print(json.dumps({"U": repr(U), "k": k, "seconds": time.perf_counter() - t0, "xml": xml}))
"""


def topology_of(name: str):
    """A network of the bench's table by its name: a ``noc`` spec or bench/forest_table.py's
    two-box machine."""
    from forest_table import two_by_eight  # noqa: PLC0415 - the table's heterogeneous machine

    het = two_by_eight()
    return het if name == het.name else parse_spec(name)


def xml_path(name: str) -> Path:
    return OUT / f"{name.replace(':', '_').replace(' ', '-')}.xml"


def _write_csv(path: Path, fields, rows: dict) -> None:
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows[k] for k in sorted(rows))


def _read_csv(path: Path) -> dict:
    return {r["topology"]: r for r in csv.DictReader(path.open())} if path.exists() else {}


def _failure(stderr: str) -> str:
    """``file:line: `source` (exception)`` of the innermost frame of the peer's traceback."""
    lines = stderr.rstrip().splitlines()
    i = max(j for j, x in enumerate(lines) if x.lstrip().startswith("File "))
    frame = lines[i].strip().split(", ")  # File "/path/to_xml.py", line 263, in f
    file, line = frame[0].split("/")[-1].strip('"'), frame[1].removeprefix("line ")
    return f"{file}:{line}: `{lines[i + 1].strip()}` ({lines[-1].strip()})"


def make(args) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    rows, failed = _read_csv(PROVENANCE), _read_csv(NOT_EXPRESSIBLE)
    commit = args.commit or (Path(args.peer) / "COMMIT").read_text().strip()
    from nic.collectives.msccl import from_msccl_xml

    for name in args.make:
        t = topology_of(name)
        edges, nodes = forestcoll_graph(t, capacity_scale(t))
        out = subprocess.run([args.peer_python, "-c", DRIVER, str(args.peer)], capture_output=True, text=True,
                             input=json.dumps({"edges": edges, "nodes": nodes}))
        if out.returncode:
            found = next((json.loads(x) for x in out.stderr.splitlines() if x.startswith('{"U"')), {})
            failed[name] = {"topology": name, "forestcoll_U": found.get("U", ""), "forestcoll_k": found.get("k", ""),
                            "reason": _failure(out.stderr), "topology_sha256": topology_sha256(t),
                            "peer_commit": commit, "settings": SETTINGS}
            rows.pop(name, None)
            xml_path(name).unlink(missing_ok=True)
            print(f"{name}: not expressible: {failed[name]['reason']}", flush=True)
        else:
            res = json.loads(out.stdout)
            s = from_msccl_xml(res["xml"], topology=t.name, nis_per_node=t.nis_per_node, algorithm="forestcoll")
            xml_path(name).write_text(res["xml"] + "\n")
            rows[name] = {"topology": name, "forestcoll_U": res["U"], "forestcoll_k": res["k"],
                          "transfers": s.num_transfers, "steps": s.num_steps,
                          "forestcoll_seconds": f"{res['seconds']:.2f}", "topology_sha256": topology_sha256(t),
                          "peer_commit": commit, "settings": SETTINGS}
            failed.pop(name, None)
            print(f"{name}: U={res['U']} k={res['k']}, {s.num_transfers} transfers, {s.num_steps} steps, "
                  f"{res['seconds']:.1f} s", flush=True)
        _write_csv(PROVENANCE, FIELDS, rows)
        _write_csv(NOT_EXPRESSIBLE, FAILED_FIELDS, failed)


def not_expressible() -> dict[str, str]:
    """Network name -> why the peer's run on it wrote no program (its failing line)."""
    return {k: (f"k = {r['forestcoll_k']} trees per root; " if r.get("forestcoll_k") else "") + r["reason"]
            for k, r in _read_csv(NOT_EXPRESSIBLE).items()}


def forestcoll_schedule(name: str):
    """ForestColl's program for the network ``name`` as a Schedule, or None if none is stored."""
    from nic.collectives.msccl import from_msccl_xml

    if not xml_path(name).exists():
        return None
    t = topology_of(name)
    return from_msccl_xml(xml_path(name).read_text(), topology=t.name, nis_per_node=t.nis_per_node,
                          algorithm="forestcoll")


def run(args) -> None:
    from nic.allreduce import simulate_allreduce
    from nic.collectives import build, optimal_bound, verify

    print("| network | size | ForestColl's trees: cycles (% of optimum) | forest: cycles (% of optimum) |")
    print("|---|---:|---:|---:|")
    for spec in _read_csv(PROVENANCE):
        t = topology_of(spec)
        theirs, ours = forestcoll_schedule(spec), build(t, "forest")
        verify(theirs, seed=1)
        ob = optimal_bound(t)
        for kib in args.sizes_kib:
            size = kib * 1024
            opt = float(ob.all_reduce_cycles(size))
            cells = []
            for s in (theirs, ours):
                r = simulate_allreduce(t, s, size_bytes=size, model="message", seed=1)
                cells.append(f"{r.total_cycles:,.0f} ({100 * opt / r.total_cycles:.1f} %)")
            label = f"{kib // 1024} MiB" if kib >= 1024 else f"{kib} KiB"
            print(f"| `{spec}` | {label} | " + " | ".join(cells) + " |", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--peer")
    ap.add_argument("--peer-python")
    ap.add_argument("--commit")
    ap.add_argument("--make", nargs="*")
    ap.add_argument("--run", action="store_true")
    ap.add_argument("--sizes-kib", nargs="*", type=int, default=[32, 1024, 65536])
    args = ap.parse_args(argv)
    if args.make:
        make(args)
    if args.run:
        run(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
