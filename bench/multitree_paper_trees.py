"""Reference MultiTree trees from the public implementation of the paper.

    .venv/bin/python bench/multitree_paper_trees.py --peer PATH/TO/accelerator [--out FILE]

Runs the tree construction of the public implementation of the MultiTree paper (ISCA
2021; repository commit b241ca1...) in that checkout's own Python environment, on the 4x4
and 8x8 torus and mesh with kary 2 (one NI per node) and kary 5 (four NIs), exactly as its
simulator calls it (``compute_schedule(kary)``: alternating trees, roots sorted by the
network's priority). Every edge is stored (tree root, parent, child, construction
timestep, in the order it was added) with the peer commit and the settings, in
bench/data/multitree_paper_trees.json. tests/nic/test_collectives_paper.py compares
``multitree(topology, tree_order="paper")`` with this file edge for edge.

The file also holds the chains of its 2D ring (``ring2d``) on the 4x4 torus and mesh and
the 8x8 torus, which tests/nic/test_collectives_paper.py compares with the outer stages
of ``ring2d_4dir``.

Nothing of the peer's code is copied here: a small driver, run by the peer's interpreter,
imports its modules and prints the trees as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "bench" / "data" / "multitree_paper_trees.json"
CASES = [(network, k, kary) for k in (4, 8) for network in ("torus", "mesh") for kary in (2, 5)]

# Run by the peer's interpreter: build its network and MultiTree trees, print them as JSON.
DRIVER = r"""
import argparse, contextlib, io, json, os, sys
src = os.path.join(os.environ["SIMHOME"], "src")
sys.path[:0] = [os.path.join(src, "allreduce"), os.path.join(src, "allreduce", "network")]
from allreduce import construct_allreduce  # as its simulate.py does
network_name, nodes, kary = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
args = argparse.Namespace(num_hmcs=nodes, booksim_network=network_name, allreduce="multitree",
                          kary=kary, radix=kary - 1)
with contextlib.redirect_stdout(io.StringIO()):  # build_graph prints its ring
    ar = construct_allreduce(args)
    ar.compute_trees(kary, alternate=True, sort=True)  # what compute_schedule(kary) does
net = ar.network
edges = [[root, parent, child, step] for root in range(nodes) for child, parent, step in ar.trees[root]]
print(json.dumps({"timesteps": ar.timesteps, "priority": list(net.priority), "edges": edges}))
"""

# Its 2D ring (ring2d_allreduce.py): 4N chains, flow = 4 * root + (0 east, 1 west, 2 south, 3 north).
RING2D_DRIVER = r"""
import argparse, contextlib, io, json, os, sys
src = os.path.join(os.environ["SIMHOME"], "src")
sys.path[:0] = [os.path.join(src, "allreduce"), os.path.join(src, "allreduce", "network")]
from allreduce import construct_allreduce
network_name, nodes = sys.argv[1], int(sys.argv[2])
args = argparse.Namespace(num_hmcs=nodes, booksim_network=network_name, allreduce="ring2d", kary=5, radix=4)
with contextlib.redirect_stdout(io.StringIO()):
    ar = construct_allreduce(args)
    ar.compute_schedule(args.kary)
flow = next(iter(ar.reduce_scatter_schedule[0][0].values()))
edges = [[f, parent, child, step] for f in range(ar.num_flows) for child, parent, step in ar.trees[f]]
print(json.dumps({"timesteps": ar.timesteps, "num_flows": ar.num_flows, "base_chunks_per_flow": flow[2],
                  "edges": edges}))
"""
RING2D_CASES = [("torus", 4), ("mesh", 4), ("torus", 8)]


def peer_commit(peer: Path) -> str:
    out = subprocess.run(["git", "-C", str(peer), "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def run_driver(peer: Path, python: Path, driver: str, *argv) -> dict:
    """Run ``driver`` with the peer's interpreter and environment; its last output line, parsed."""
    env = dict(os.environ, SIMHOME=str(peer), BOOKSIMSRC=str(peer / "src" / "booksim2" / "src"), PYTHONHASHSEED="0")
    out = subprocess.run([str(python), "-c", driver, *map(str, argv)], capture_output=True, text=True, env=env,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_case(peer: Path, python: Path, network: str, k: int, kary: int) -> dict:
    """The peer's MultiTree trees on a k x k ``network`` with ``kary``."""
    res = run_driver(peer, python, DRIVER, network, k * k, kary)
    return {"network": network, "dims": [k, k], "nodes": k * k, "kary": kary, "nis": kary - 1, **res}


def run_ring2d_case(peer: Path, python: Path, network: str, k: int) -> dict:
    """The peer's 2D-ring chains on a k x k ``network`` (its simulator runs them with 4 NIs)."""
    res = run_driver(peer, python, RING2D_DRIVER, network, k * k)
    return {"network": network, "dims": [k, k], "nodes": k * k, **res}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--peer", type=Path, required=True,
                    help="checkout of the public implementation (its commit is recorded in the output)")
    ap.add_argument("--python", type=Path, default=None, help="its interpreter (default: PEER/.venv/bin/python)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args()
    python = args.python or args.peer / ".venv" / "bin" / "python"
    cases = []
    for network, k, kary in CASES:
        case = run_case(args.peer, python, network, k, kary)
        print(f"{network} {k}x{k} kary {kary}: {case['timesteps']} timesteps, {len(case['edges'])} edges",
              file=sys.stderr)
        cases.append(case)
    ring2d = []
    for network, k in RING2D_CASES:
        case = run_ring2d_case(args.peer, python, network, k)
        print(f"ring2d {network} {k}x{k}: {case['num_flows']} flows, {case['timesteps']} timesteps", file=sys.stderr)
        ring2d.append(case)
    doc = {
        "source": "public implementation of the MultiTree paper (ISCA 2021), "
                  "allreduce/multitree_allreduce.py and allreduce/network/kncube.py",
        "peer_commit": peer_commit(args.peer),
        "settings": {"call": "MultiTreeAllreduce.compute_trees(kary, alternate=True, sort=True)",
                     "node_numbering": "node = row * k + col; north = node - k, south = node + k, "
                                       "west = node - 1, east = node + 1",
                     "edge": "[tree root, parent, child, construction timestep], in the order added",
                     "ring2d": "Ring2DAllreduce.compute_schedule(5) (radix 4); edge = [flow, parent, child, "
                               "timestep], flow = 4 * root + (0 east, 1 west, 2 south, 3 north); every flow "
                               "carries base_chunks_per_flow chunks of 1/N of the data; reduce-scatter sends "
                               "child -> parent at timesteps - 1 - timestep, all-gather parent -> child at "
                               "timesteps + timestep (0-based); its simulator runs this once and doubles the time"},
        "cases": cases,
        "ring2d": ring2d,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, separators=(",", ":")) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
