"""ForestColl's throughput optimum on our topologies, stored for tests/nic/test_forestcoll_reference.py.

Peer: github.com/liangyuRain/ForestColl (Apache-2.0, pure Python, networkx), unpacked outside
the repo with its own virtual environment:

    git clone https://github.com/liangyuRain/ForestColl PEER && git -C PEER rev-parse HEAD > PEER/COMMIT
    python3 -m venv PEER_VENV && PEER_VENV/bin/pip install networkx
    .venv/bin/python bench/forestcoll_reference.py --peer PEER --peer-python PEER_VENV/bin/python \\
        [--commit SHA] [--out CSV] [--only NAME ...]
    .venv/bin/python bench/forestcoll_reference.py --table    # the docs' table, from the CSV

Each topology of :func:`topologies` is turned into ForestColl's graph input: a networkx
DiGraph whose compute vertex ``("node", n)`` is a node (on a direct network its NIs merged,
its link to and from its router carrying the sum of the NIs' links) and whose switch
vertices ``("router", r)`` are the routers/switches; parallel links are summed into one
edge; capacities are the links' bytes/cycle times one integer scale (ForestColl wants
integers). The peer then runs, in its own interpreter,

    algo = OptimalBranchingsAlgo(G, capacitated=True, compute_nodes=[("node", n) ...])
    U, k = algo.binary_search()
    runtime = algo.convertToRuntime(U, k)        # all-gather time per byte of M

once on G (all-gather) and once on G with every edge reversed (reduce-scatter). A row per
(topology, collective) goes to the CSV: the peer's U, k and runtime, its optimum as an
exact fraction of cycles per byte (U / (k N), times the capacity scale), its run time, the
peer commit, and a digest of our topology's JSON so the test notices a changed builder.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import hashlib
import json
import math
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from noc.topology import Topology, parse_spec  # noqa: E402

DEFAULT_CSV = REPO / "bench" / "data" / "forestcoll_reference.csv"
FIELDS = ["topology", "collective", "nodes", "nis_per_node", "capacity_scale", "forestcoll_U", "forestcoll_k",
          "forestcoll_runtime", "forestcoll_cycles_per_byte", "forestcoll_seconds", "topology_sha256",
          "peer_commit", "settings"]
SETTINGS = "OptimalBranchingsAlgo(G, capacitated=True, compute_nodes=nodes).binary_search(); convertToRuntime(U, k)"


def _router_links(t: Topology, a: int, b: int) -> np.ndarray:
    e = t.num_endpoints
    s, d = t.link_src, t.link_dst
    return np.nonzero(((s == e + a) & (d == e + b)) | ((s == e + b) & (d == e + a)))[0]


def _with_bandwidths(t: Topology, bw: np.ndarray, name: str) -> Topology:
    return dataclasses.replace(t, name=name, link_bytes_per_cycle=np.asarray(bw, dtype=np.float64))


def thin_ring() -> Topology:
    """ring:8:c4 whose links between routers 1-2 and 5-6 carry 4 B/cycle: a cut binds beyond
    the injection and bisection bounds."""
    t = parse_spec("ring:8:c4")
    bw = t.link_bytes_per_cycle.copy()
    bw[_router_links(t, 1, 2)] = 4.0
    bw[_router_links(t, 5, 6)] = 4.0
    return _with_bandwidths(t, bw, "ring:8:c4 thin 1-2,5-6 at 4")


def fast_x_torus() -> Topology:
    """torus:4x4:c2 with 32 B/cycle x links, 16 B/cycle y links and 24 B/cycle NI links."""
    t = parse_spec("torus:4x4:c2")
    bw = np.where(t.link_dim == 0, 32.0, np.where(t.link_dim == 1, 16.0, 24.0))
    return _with_bandwidths(t, bw, "torus:4x4:c2 x32 y16 ni24")


def lopsided_mesh() -> Topology:
    """mesh:4x4 whose + links carry 16 B/cycle and - links 6; NIs send at 16 and receive at 8.
    Not symmetric: all-gather and reduce-scatter optima differ."""
    t = parse_spec("mesh:4x4")
    e = t.num_endpoints
    bw = np.where(t.link_sign > 0, 16.0, 6.0)
    bw = np.where(t.link_src < e, 16.0, np.where(t.link_dst < e, 8.0, bw))
    return _with_bandwidths(t, bw, "mesh:4x4 plus16 minus6 ni16/8")


SPECS = ["torus:4x4", "torus:4x4:c4", "torus:8x8", "torus:8x8:c4", "mesh:4x4", "mesh:4x4:c4", "ring:8",
         "hypercube:d4", "fattree:k4:l2", "bigraph:4x4", "switch:8", "full:8"]


def topologies() -> dict[str, Topology]:
    out = {s: parse_spec(s) for s in SPECS}
    for t in (thin_ring(), fast_x_torus(), lopsided_mesh()):
        out[t.name] = t
    return out


def topology_sha256(t: Topology) -> str:
    return hashlib.sha256(t.to_json().encode()).hexdigest()


def capacity_scale(t: Topology) -> int:
    """The least integer that makes every link's bytes/cycle an integer."""
    return math.lcm(*(Fraction(float(b)).denominator for b in t.link_bytes_per_cycle))


def forestcoll_graph(t: Topology, scale: int, *, reverse: bool = False) -> tuple[list, list]:
    """(edges [[a, b, capacity]], compute nodes) in ForestColl's terms, vertices as JSON lists."""
    e = t.num_endpoints

    def vertex(v: int) -> list:
        return ["node", int(t.endpoint_node[v])] if v < e else ["router", v - e]

    cap: dict[tuple, Fraction] = {}
    for s, d, b in zip(t.link_src.tolist(), t.link_dst.tolist(), t.link_bytes_per_cycle.tolist()):
        a, z = tuple(vertex(s)), tuple(vertex(d))
        if reverse:
            a, z = z, a
        cap[a, z] = cap.get((a, z), Fraction(0)) + Fraction(b) * scale
    edges = [[list(a), list(z), int(c)] for (a, z), c in cap.items()]
    assert all(Fraction(c) == cap[tuple(a), tuple(z)] for a, z, c in edges)
    return edges, [["node", n] for n in range(t.num_nodes)]


DRIVER = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
import networkx as nx
from pipeline_allgather import OptimalBranchingsAlgo
job = json.load(sys.stdin)
G = nx.DiGraph()
for a, b, c in job["edges"]:
    G.add_edge(tuple(a), tuple(b), capacity=c)
nodes = [tuple(v) for v in job["nodes"]]
t0 = time.perf_counter()
algo = OptimalBranchingsAlgo(G, capacitated=True, compute_nodes=nodes)
U, k = algo.binary_search()
runtime = algo.convertToRuntime(U, k)
print(json.dumps({"U": repr(U), "k": repr(k), "runtime": repr(runtime), "seconds": time.perf_counter() - t0}))
"""


def run_peer(peer: Path, python: str, edges: list, nodes: list) -> dict:
    out = subprocess.run([python, "-c", DRIVER, str(peer)], input=json.dumps({"edges": edges, "nodes": nodes}),
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def peer_cycles_per_byte(U: str, k: str, nodes: int, scale: int) -> Fraction:
    """ForestColl's all-gather time per byte, U / (k N) in scaled capacities, back in cycles."""
    return Fraction(U) / (Fraction(k) * nodes) * scale


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--peer", type=Path, help="ForestColl source tree (pipeline_allgather.py)")
    ap.add_argument("--table", action="store_true",
                    help="print the stored optima beside ours and the injection/bisection bounds (markdown)")
    ap.add_argument("--peer-python", default=sys.executable, help="an interpreter with networkx")
    ap.add_argument("--commit", default=None, help="the peer's commit (default: the COMMIT file beside its sources)")
    ap.add_argument("--out", type=Path, default=DEFAULT_CSV)
    ap.add_argument("--only", nargs="*", default=None, help="topology names to run (default: all)")
    args = ap.parse_args(argv)
    if args.table:
        print(table(read_reference(args.out)))
        return 0
    if args.peer is None:
        ap.error("--peer is required unless --table")
    commit = args.commit or (args.peer / "COMMIT").read_text().strip()
    # resumable: rows already stored for the same topology (same digest) and peer commit are kept
    done = {(r["topology"], r["collective"]): r for r in (read_reference(args.out) if args.out.exists() else [])
            if r["peer_commit"] == commit}
    rows = []
    for name, t in topologies().items():
        if args.only and name not in args.only:
            continue
        scale = capacity_scale(t)
        digest = topology_sha256(t)
        for collective, reverse in (("all_gather", False), ("reduce_scatter", True)):
            old = done.get((name, collective))
            if old is not None and old["topology_sha256"] == digest:
                rows.append(old)
                print(f"{name:32s} {collective:15s} stored: {old['forestcoll_cycles_per_byte']} cycles/byte")
                continue
            edges, nodes = forestcoll_graph(t, scale, reverse=reverse)
            res = run_peer(args.peer, args.peer_python, edges, nodes)
            exact = peer_cycles_per_byte(res["U"], res["k"], t.num_nodes, scale)
            print(f"{name:32s} {collective:15s} U={res['U']:>8s} k={res['k']:>4s} "
                  f"{exact} cycles/byte  ({res['seconds']:.1f} s)", flush=True)
            rows.append({
                "topology": name, "collective": collective, "nodes": t.num_nodes, "nis_per_node": t.nis_per_node,
                "capacity_scale": scale, "forestcoll_U": res["U"], "forestcoll_k": res["k"],
                "forestcoll_runtime": res["runtime"], "forestcoll_cycles_per_byte": str(exact),
                "forestcoll_seconds": f"{res['seconds']:.2f}", "topology_sha256": digest,
                "peer_commit": commit, "settings": SETTINGS,
            })
            _write(args.out, _merged(rows, done))
    _write(args.out, _merged(rows, done))
    print(f"wrote {len(_merged(rows, done))} rows to {args.out}")
    return 0


def _merged(rows: list[dict], done: dict) -> list[dict]:
    """This run's rows, then the stored ones it did not visit (other topologies, an interrupted run's rest)."""
    seen = {(r["topology"], r["collective"]) for r in rows}
    return rows + [r for key, r in done.items() if key not in seen]


def _write(path: Path, rows: list[dict]) -> None:
    """Replace ``path`` atomically, so an interrupted run keeps every finished row."""
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    tmp.replace(path)


def table(rows: list[dict]) -> str:
    """Markdown: per topology, ForestColl's and our all-gather / reduce-scatter optimum, and the
    all-reduce optimum against the injection and bisection bounds (nic.collectives.bounds)."""
    from nic.collectives import bounds, optimal_bound

    size = 64 << 20
    tops = topologies()
    by = {(r["topology"], r["collective"]): r for r in rows}
    out = ["| topology | nodes | NIs/node | AG, ForestColl (cycles/byte) | AG, ours | RS, ForestColl | RS, ours "
           "| all-reduce 64 MiB (cycles) | injection bound | bisection bound |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, t in tops.items():
        ob = optimal_bound(t)
        b = bounds(t, size)
        ag, rs = by[name, "all_gather"], by[name, "reduce_scatter"]
        out.append(f"| `{name}` | {t.num_nodes} | {t.nis_per_node} | {ag['forestcoll_cycles_per_byte']} "
                   f"| {ob.all_gather_cycles_per_byte} | {rs['forestcoll_cycles_per_byte']} "
                   f"| {ob.reduce_scatter_cycles_per_byte} | {float(ob.all_reduce_cycles(size)):,.0f} "
                   f"| {b.injection_cycles:,.0f} | {b.bisection_cycles:,.0f} |")
    return "\n".join(out)


def read_reference(path: Path = DEFAULT_CSV) -> list[dict]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


if __name__ == "__main__":
    raise SystemExit(main())
