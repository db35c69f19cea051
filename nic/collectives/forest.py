"""The ``forest`` all-reduce: spanning trees per root at the throughput optimum, on any network.

:func:`forest` is the registered builder: on a square 2D torus (every side at least 3) it
is :func:`torus_forest`, below, exact at every size; on every other network it is the
tree packing of :mod:`nic.collectives.treepack`.

**The square-torus construction** (:func:`torus_forest`).

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
link); with fewer NIs a round is split by direction, so that a node sends as many chunks a
step as it has NIs. The reduce-scatter runs the deepest edges first, the all-gather the
shallowest.
"""

from __future__ import annotations

import numpy as np
from numba import njit

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


def base_forest(k1: int, k2: int) -> tuple[np.ndarray, ...]:
    """The four trees of root (0, 0) as arrays over their edges: tree, depth, parent (x, y),
    child (x, y), the edge's round within its depth (see :func:`forest`) and its direction
    (0..3: +x, -x, +y, -y)."""
    rows = [(d, depth, p[0], p[1], c[0], c[1]) for d in range(4) for p, c, depth in tree_edges(k1, k2, (0, 0), d)]
    tree, depth, px, py, cx, cy = (np.asarray(col, dtype=np.int64) for col in zip(*rows))
    # the link class of an edge: its direction (+x, -x, +y, -y)
    dx, dy = (cx - px) % k1, (cy - py) % k2
    cls = np.where(dy == 0, np.where(dx == 1, 0, 1), np.where(dy == 1, 2, 3))
    # translated over the torus, every base edge of one (depth, class) lands once on every link of
    # that class: numbering them 0, 1, ... gives each link's edges of that depth distinct rounds
    key = depth * 4 + cls
    order = np.lexsort((np.arange(key.size), key))
    first = np.searchsorted(key[order], key[order], side="left")
    rnd = np.empty_like(key)
    rnd[order] = np.arange(key.size) - first
    return tree, depth, px, py, cx, cy, rnd, cls


def forest(topology: Topology, trees: int | None = None) -> Schedule:
    """Spanning trees per root at the optimum: :func:`torus_forest` on a square 2D torus
    (every side at least 3), else :func:`nic.collectives.treepack.treepack` with ``trees``
    trees per root (default: the least count the optimum's rates allow). The registry's
    ``forest`` is :func:`nic.forest_select.forest`, which also takes the all-reduce's size."""
    return _optimum_forest(topology, trees)


def _optimum_forest(topology: Topology, trees: int | None) -> Schedule:
    dims = topology.dims
    if trees is None and topology.family == "torus" and len(dims) == 2 and dims[0] == dims[1] and dims[0] >= 3:
        return torus_forest(topology)
    from nic.collectives.treepack import treepack  # noqa: PLC0415

    return treepack(topology, trees)


def torus_forest(topology: Topology) -> Schedule:
    """The four-trees-per-root all-reduce of a 2D torus (every dimension at least 3).

    Tree ``d`` of root ``r`` carries flow ``4 r + d``. Edges to depth t run in ``m_t`` rounds,
    ``m_t`` the most edges of that depth one link carries: in a round every link carries one
    chunk and a node sends at most one chunk to each neighbour. A round is one step with 4
    NIs per node, two (x, then y) with 2 or 3, four (one direction each) with 1. The
    reduce-scatter runs the deepest edges first, the all-gather the shallowest.
    """
    if topology.family != "torus" or len(topology.dims) != 2 or min(topology.dims) < 3:
        raise ScheduleError(f"torus_forest needs a 2D torus with every dimension >= 3, got {topology.name}")
    k1, k2 = topology.dims
    tree, depth, px, py, cx, cy, rnd, cls = base_forest(k1, k2)
    depth_max = k1 + k2 - 2
    rounds = np.zeros(depth_max + 2, dtype=np.int64)
    np.maximum.at(rounds, depth, rnd + 1)
    gather_start = np.concatenate([[0], np.cumsum(rounds)])  # gather_start[t]: first round of depth t
    # with fewer NIs than links a round is split by direction: each step a node sends (and
    # receives) as many chunks as it has NIs, in ceil(4 / NIs) steps (+x and -x together
    # with 2 NIs, one direction at a time with 1)
    slots = -(-4 // topology.nis_per_node)
    slot = cls // (4 // slots)
    total = int(rounds.sum())
    gather_step = (total + gather_start[depth] + rnd) * slots + slot
    reduce_step = (total - gather_start[depth + 1] + rnd) * slots + slot  # deeper edges first
    # translate the base trees to every root: the node at coordinates (x, y) is router x + k1 y
    # (noc.topology's grid numbering, checked below)
    coords = topology.router_coords
    assert np.array_equal(coords[:, 0] + k1 * coords[:, 1], np.arange(topology.num_nodes))
    # the base edges of both halves, (step, src x, src y, dst x, dst y, tree, op), in step order;
    # the reduce half runs child -> parent, the gather half parent -> child
    base = np.concatenate([np.stack([reduce_step, cx, cy, px, py, tree, np.full_like(tree, OP_REDUCE)]),
                           np.stack([gather_step, px, py, cx, cy, tree, np.full_like(tree, OP_GATHER)])], axis=1)
    base = np.ascontiguousarray(base[:, np.argsort(base[0], kind="stable")], dtype=np.int64)
    # 32-bit columns (a 64x64 torus has 134 million transfers), written in canonical order
    n = topology.num_nodes
    m = n * base.shape[1]
    step, src, dst, flow = (np.empty(m, np.int32) for _ in range(4))
    op = np.empty(m, np.int8)
    _translate(base, k1, k2, step, src, dst, flow, op)
    return Schedule.from_columns("forest", topology.name, n, topology.nis_per_node, 4 * n, step, src, dst, flow, op,
                                 {"trees_per_root": 4, "depth": depth_max, "construction": "torus"})


@njit(cache=True)
def _translate(base, k1, k2, step, src, dst, flow, op):
    """Write the base edges ``base`` (rows step, src x, src y, dst x, dst y, tree, op; in
    step order) translated to every root of a k1×k2 torus, in the canonical order of
    :class:`Schedule` (step, src, flow, op, dst): at one step every base edge puts one
    transfer on every sender (the root is the sender less the edge's source), so each
    (step, sender) group holds one transfer per base edge of the step, sorted here."""
    nb = base.shape[1]
    n = k1 * k2
    bstep, sx, sy, dx, dy = base[0].copy(), base[1].copy(), base[2].copy(), base[3].copy(), base[4].copy()
    tree, bop = base[5].copy(), base[6].copy()
    key = np.empty(nb, np.int64)
    idx = np.empty(nb, np.int64)
    rxs = np.empty(nb, np.int64)
    rys = np.empty(nb, np.int64)
    out = 0
    a = 0
    while a < nb:
        b = a
        while b < nb and bstep[b] == bstep[a]:
            b += 1
        g = b - a
        for vy in range(k2):
            for vx in range(k1):
                for i in range(g):  # the group of sender (vx, vy), insertion-sorted by (flow, op, dst)
                    e = a + i
                    rx, ry = vx - sx[e], vy - sy[e]  # the root: the sender less the edge's source
                    rx += k1 if rx < 0 else 0
                    ry += k2 if ry < 0 else 0
                    tx, ty = dx[e] + rx, dy[e] + ry
                    tx -= k1 if tx >= k1 else 0
                    ty -= k2 if ty >= k2 else 0
                    k = ((4 * (rx + k1 * ry) + tree[e]) * 2 + bop[e]) * n + tx + k1 * ty
                    j = i
                    while j > 0 and key[j - 1] > k:
                        key[j], idx[j], rxs[j], rys[j] = key[j - 1], idx[j - 1], rxs[j - 1], rys[j - 1]
                        j -= 1
                    key[j], idx[j], rxs[j], rys[j] = k, e, rx, ry
                for i in range(g):
                    e = idx[i]
                    step[out] = bstep[e]
                    src[out] = vx + k1 * vy
                    dst[out] = key[i] % n
                    flow[out] = 4 * (rxs[i] + k1 * rys[i]) + tree[e]
                    op[out] = bop[e]
                    out += 1
        a = b
