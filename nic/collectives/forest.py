"""A forest of spanning trees per root on a 2D torus, packed to the throughput optimum.

Every node roots four trees, one per direction it starts in; each carries a quarter of
the node's share of the vector (flow ``4 * root + d``), reduced up the tree and broadcast
back down it. Tree ``d`` of root ``(x0, y0)``, written for ``d = +x``:

* along the root's row in +x: ``(x0, y0) -> (x0+1, y0) -> ... -> (x0-1, y0)``;
* from every node of that row, up its column in +y.

The other three are this tree turned by 90°, 180° and 270° (+y then -x, -x then -y,
-y then +x). On a k×k torus the four trees of a root use each direction class (+x, -x,
+y, -y) k²-1 times, so the N roots' trees, translated over the torus, put exactly N-1
chunks of ``M/(4N)`` bytes on every directed link and 4(N-1) chunks through every node's
NIs in each of the reduce-scatter and the all-gather: the optimum of
:func:`nic.collectives.optimal_bound` for 1 NI (the NI link binds) and for 4 NIs (the
node's four links bind), at every size. On a k1×k2 torus the classes are used
(k1-1)(k2+1) and (k2-1)(k1+1) times: the larger of the two over N-1 is the factor above
the optimum.

Steps: the edges to nodes at depth t (t = 1 .. D, D = k1+k2-2) run in as many rounds as
the most of them one link carries, one step per round, so that in every step every link
carries one chunk and a node sends at most one chunk to each neighbour (four NIs: one per
link). The reduce-scatter runs the deepest edges first, the all-gather the shallowest.
"""

from __future__ import annotations

import numpy as np

from nic.collectives.schedule import Schedule, ScheduleError
from nic.scheduler import OP_GATHER, OP_REDUCE
from noc.topology import Topology

# (first direction, second direction) of the four trees, as (dx, dy) unit steps
TREE_DIRECTIONS = (((1, 0), (0, 1)), ((0, 1), (-1, 0)), ((-1, 0), (0, -1)), ((0, -1), (1, 0)))


def tree_edges(k1: int, k2: int, root: tuple[int, int], tree: int) -> list[tuple[tuple[int, int], tuple[int, int], int]]:
    """(parent, child, child depth) of tree ``tree`` of ``root`` on a k1×k2 torus (coordinates (x, y))."""
    (ax, ay), (bx, by) = TREE_DIRECTIONS[tree]
    first_len = k1 if ax else k2  # the first leg runs along x for +x/-x, along y for +y/-y
    second_len = k2 if by else k1
    edges = []
    x0, y0 = root
    for i in range(first_len):
        px, py = (x0 + i * ax) % k1, (y0 + i * ay) % k2
        if i + 1 < first_len:
            edges.append(((px, py), ((px + ax) % k1, (py + ay) % k2), i + 1))
        for j in range(1, second_len):
            parent = ((px + (j - 1) * bx) % k1, (py + (j - 1) * by) % k2)
            child = ((px + j * bx) % k1, (py + j * by) % k2)
            edges.append((parent, child, i + j))
    return edges


def forest(topology: Topology) -> Schedule:
    """The four-trees-per-root all-reduce of a 2D torus (every dimension at least 3)."""
    if topology.family != "torus" or len(topology.dims) != 2 or min(topology.dims) < 3:
        raise ScheduleError(f"forest needs a 2D torus with every dimension >= 3, got {topology.name}")
    k1, k2 = topology.dims
    coords = topology.router_coords
    node_of = {(int(x), int(y)): r for r, (x, y) in enumerate(coords)}
    edges = []  # (depth, parent, child, flow)
    for root in range(topology.num_nodes):
        rc = (int(coords[root, 0]), int(coords[root, 1]))
        for d in range(4):
            for parent, child, depth in tree_edges(k1, k2, rc, d):
                edges.append((depth, node_of[parent], node_of[child], 4 * root + d))
    step, rounds = _rounds(edges, k1 + k2 - 2)
    rows = []
    for (depth, p, c, f), (r, g) in zip(edges, step):
        rows.append((r, c, p, f, OP_REDUCE))
        rows.append((rounds + g, p, c, f, OP_GATHER))
    return Schedule.from_transfers("forest", topology.name, topology.num_nodes, topology.nis_per_node,
                                   4 * topology.num_nodes, np.asarray(rows, dtype=np.int64),
                                   {"trees_per_root": 4, "depth": k1 + k2 - 2})


def _rounds(edges, depth_max: int) -> tuple[list[tuple[int, int]], int]:
    """Per edge, its (reduce step, gather step within the gather phase), and the phase's steps.

    Edges to depth t run in m_t rounds, m_t the most edges any link carries at depth t: the
    edges of one link take rounds 0, 1, ... in flow order, so in a step every link carries
    one chunk and a node sends at most one chunk to each neighbour. Gather rounds run depth
    1 first, reduce rounds depth D first.
    """
    rank: dict[tuple[int, int, int], int] = {}
    order = []
    for depth, p, c, f in edges:
        key = (depth, p, c)
        order.append(rank.get(key, 0))
        rank[key] = order[-1] + 1
    per_depth = [0] * (depth_max + 2)
    for (depth, _, _), n in rank.items():
        per_depth[depth] = max(per_depth[depth], n)
    gather_start = np.concatenate([[0], np.cumsum(per_depth)]).tolist()  # gather_start[t]: first round of depth t
    total = int(sum(per_depth))
    out = []
    for (depth, _, _, _), r in zip(edges, order):
        g = gather_start[depth] + r
        reduce_start = total - gather_start[depth + 1]  # depths deeper than t come first
        out.append((reduce_start + r, g))
    return out, total
