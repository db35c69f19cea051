"""The baseline all-reduce schedules: ring, bidirectional ring, 2D ring (hierarchical, and
in four directions at once), double binary tree and halving-doubling.

Each is expressed in the same vocabulary as MultiTree (docs/collectives.md): flows that
own equal parts of the vector and move over trees, REDUCE towards the flow's root and
GATHER away from it, one transfer per (step, sender, flow).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from nic.collectives.schedule import Schedule, ScheduleError
from nic.scheduler import OP_GATHER, OP_REDUCE
from noc.topology import Topology

R, G = OP_REDUCE, OP_GATHER


# --------------------------------------------------------------------------------------
# Node orders
# --------------------------------------------------------------------------------------


def _snake(dims: tuple[int, ...]) -> list[tuple[int, ...]]:
    """Boustrophedon (reflected mixed-radix) order of a grid; dimension 0 varies fastest."""
    if len(dims) == 1:
        return [(x,) for x in range(dims[0])]
    inner = _snake(dims[:-1])
    out = []
    for y in range(dims[-1]):
        out += [c + (y,) for c in (inner if y % 2 == 0 else inner[::-1])]
    return out


def _grid_cycle(nx: int, ny: int) -> list[tuple[int, int]] | None:
    """A Hamiltonian cycle of an nx x ny mesh (x fastest) when one side is even, else None."""
    if ny % 2 == 0 and nx >= 2:
        cyc = [(x, 0) for x in range(nx)]
        for y in range(1, ny):
            xs = range(nx - 1, 0, -1) if y % 2 == 1 else range(1, nx)
            cyc += [(x, y) for x in xs]
        cyc += [(0, y) for y in range(ny - 1, 0, -1)]
        return cyc
    if nx % 2 == 0 and ny >= 2:
        swapped = _grid_cycle(ny, nx)
        return [(x, y) for (y, x) in swapped] if swapped else None
    return None


def ring_order(topology: Topology) -> list[int]:
    """Nodes in the order a ring all-reduce visits them.

    Meshes and tori: a Hamiltonian cycle of one-hop links when a 2D grid has an even side,
    otherwise the boustrophedon (snake) order; hypercubes: the Gray code; switched and
    other networks: node order (endpoints of one leaf switch are consecutive).
    """
    n = topology.num_nodes
    dims = topology.dims if topology.is_direct else ()
    if not dims or int(np.prod(dims)) != n:
        return list(range(n))
    strides = [int(np.prod(dims[:i])) for i in range(len(dims))]
    if len(dims) == 2:
        cyc = _grid_cycle(dims[0], dims[1])
        if cyc is not None:
            return [x * strides[0] + y * strides[1] for x, y in cyc]
    return [sum(c * s for c, s in zip(coord, strides)) for coord in _snake(tuple(dims))]


# --------------------------------------------------------------------------------------
# Rings
# --------------------------------------------------------------------------------------


def _ring_columns(order: list[int], flow_base: int, direction: int) -> tuple[np.ndarray, ...]:
    """Ring all-reduce of len(order) flows ``flow_base + c`` (flow c owned by order[c]), as
    (step, src, dst, flow, op) columns: flow c's reduce-scatter chain ends at c's owner in
    step n - 2; its all-gather runs from the owner onwards in steps n - 1 .. 2n - 3. One
    transfer per (step, sender), in the schedule's canonical order (by step, then sender)
    and its column types, so that :meth:`Schedule.from_columns` has nothing to reorder."""
    ring = np.asarray(order, np.int64)
    n = len(ring)
    pos = np.empty(n, np.int64)
    pos[ring] = np.arange(n, dtype=np.int64)  # each node's place on the ring
    t = 2 * n * (n - 1)
    cols = (np.empty(t, np.int32), np.empty(t, np.int32), np.empty(t, np.int32), np.empty(t, np.int32),
            np.empty(t, np.int8))
    _fill_ring(ring, pos, flow_base, direction, R, G, *cols)
    return cols


@njit(cache=True)
def _fill_ring(ring, pos, flow_base, direction, op_rs, op_ag, step, src, dst, flow, op):
    """The ring's transfers, step by step and within a step by sender: in reduce-scatter
    step s (< n - 1) the node at place p sends flow (p - direction (1 + s)) mod n on to the
    next place; in all-gather step n - 1 + s, flow (p - direction s) mod n."""
    n = ring.shape[0]
    k = 0
    for st in range(2 * (n - 1)):
        ag = st >= n - 1
        s = st - (n - 1) if ag else st
        back = direction * s if ag else direction * (1 + s)
        for v in range(n):
            p = pos[v]
            step[k] = st
            src[k] = v
            dst[k] = ring[(p + direction) % n]
            flow[k] = flow_base + (p - back) % n
            op[k] = op_ag if ag else op_rs
            k += 1


def _need_nodes(topology: Topology, k: int, what: str) -> int:
    n = topology.num_nodes
    if n < k:
        raise ScheduleError(f"{what} needs at least {k} nodes; {topology.name} has {n}")
    return n


def ring(topology: Topology) -> Schedule:
    """Ring all-reduce: N flows, reduce-scatter then all-gather around ``ring_order``."""
    n = _need_nodes(topology, 2, "ring")
    order = ring_order(topology)
    return Schedule.from_columns("ring", topology.name, n, topology.nis_per_node, n, *_ring_columns(order, 0, +1),
                                 params={"order": order})


def bidir_ring(topology: Topology) -> Schedule:
    """Bidirectional ring: two rings in opposite directions, each carrying half the data."""
    n = _need_nodes(topology, 2, "bidirectional ring")
    order = ring_order(topology)
    cols = [np.concatenate(pair) for pair in zip(_ring_columns(order, 0, +1), _ring_columns(order, n, -1))]
    return Schedule.from_columns("bidir_ring", topology.name, n, topology.nis_per_node, 2 * n, *cols,
                                 params={"order": order})


def ring2d(topology: Topology) -> Schedule:
    """Hierarchical 2D ring: reduce-scatter along dimension 0, all-reduce along dimension 1
    of the owned chunk, all-gather along dimension 0 (meshes and tori with two dimensions)."""
    dims = topology.dims
    if not topology.is_direct or len(dims) != 2 or min(dims) < 2:
        raise ScheduleError(f"ring2d needs a 2D mesh or torus with both sides >= 2; {topology.name} is not one")
    nx, ny = dims
    n = nx * ny

    def node(x: int, y: int) -> int:
        return x + nx * y

    t = []
    for c in range(nx):  # coarse chunk c: owned along each row by x = c
        for a in range(ny):  # its sub-chunk a: owned along column c by y = a
            f = c * ny + a
            for y in range(ny):
                for s in range(nx - 1):  # row reduce-scatter
                    t.append((s, node((c + 1 + s) % nx, y), node((c + 2 + s) % nx, y), f, R))
            for s in range(ny - 1):  # column reduce-scatter
                t.append((nx - 1 + s, node(c, (a + 1 + s) % ny), node(c, (a + 2 + s) % ny), f, R))
            for s in range(ny - 1):  # column all-gather
                t.append((nx + ny - 2 + s, node(c, (a + s) % ny), node(c, (a + s + 1) % ny), f, G))
            for y in range(ny):
                for s in range(nx - 1):  # row all-gather
                    t.append((nx + 2 * ny - 3 + s, node((c + s) % nx, y), node((c + s + 1) % nx, y), f, G))
    return Schedule.from_transfers("ring2d", topology.name, n, topology.nis_per_node, n, t,
                                   params={"dims": [nx, ny]})


def _chain(nx: int, ny: int, root: tuple[int, int], dim: int, sign: int, flow: int, op: int, base: int) -> list[tuple]:
    """One chain of a line of the grid: the nodes ``root + sign*d`` (d = 0..L-1, modulo the
    side L) along dimension ``dim``. REDUCE runs from the far end to the root (distance d
    sends to d-1 at step ``base + L-1-d``); GATHER back out (d-1 to d at ``base + d-1``)."""
    length = (nx, ny)[dim]

    def node(d: int) -> int:
        xy = list(root)
        xy[dim] = (xy[dim] + sign * d) % length
        return xy[0] + nx * xy[1]

    if op == R:
        return [(base + length - 1 - d, node(d), node(d - 1), flow, R) for d in range(1, length)]
    return [(base + d - 1, node(d - 1), node(d), flow, G) for d in range(1, length)]


def ring2d_4dir(topology: Topology) -> Schedule:
    """2D ring in four directions at once, the 2D ring of the MultiTree paper's public
    implementation, completed to a full all-reduce.

    Half A of the vector goes rows first, half B columns first, so every step uses the
    east, west, south and north links of every node (four NIs):

    1. steps 0..X-2 (A) / 0..Y-2 (B): ring reduce-scatter along the rows (A) and columns
       (B). Half A is cut into 2X row pieces ``(c, east|west)``; in every row, piece
       ``(c, east)`` runs along the chain c, c+1, ..., c-1 (modulo X) to the row's node
       in column c, piece ``(c, west)`` along c, c-1, ..., c+1. Likewise B in columns.
    2. the other dimension reduce-scatters the piece each node now owns (A: column c
       reduces piece ``(c, *)``, cut into 2Y parts ``(r, south|north)`` owned by row r);
    3. the mirror all-gather of 2, then 4. the mirror all-gather of 1.

    Flows: (half, piece, part) -> 8N flows of M/(8N) each (the vector in equal parts).
    Steps: 2(X-1) + 2(Y-1). On a k x k grid, steps 0..k-2 are exactly the public
    implementation's reduce-scatter and steps 3(k-1)..4(k-1)-1 its all-gather (same
    sender, receiver and size M/(4k) per message, docs/collectives.md); steps k-1..3k-4
    are stages 2 and 3, which its simulator does not run (it doubles the time of 1 and 4
    instead); their messages carry 1/k of that size. Needs a 2D torus or mesh; on a mesh
    the wrap-around hop of a chain is a multi-hop route, as there.
    """
    dims = topology.dims
    if not topology.is_direct or len(dims) != 2 or topology.family not in ("torus", "mesh"):
        raise ScheduleError(f"ring2d_4dir needs a 2D mesh or torus; {topology.name} is not one")
    nx, ny = dims
    n = nx * ny
    signs = (+1, -1)  # east/south chains (extend in +x/+y), then west/north
    # Flow numbers interleave the four directions: a node's transfers of a step, in flow
    # order, go east, west, south, north, east, ... so its k-th transfer of the step (NI
    # k mod 4) and a send-when-ready NI's next one alternate over its four links instead of
    # queueing all of one direction's on every NI at once; and with receiving NIs dealt in
    # flow order (params recv_ni_order), the four transfers a node receives at once arrive
    # at four NIs rather than all at its first.
    t = []
    for c in range(nx):  # half A, rows first: flow ((c, s1), (r, s2)), direction s1
        for i1, s1 in enumerate(signs):
            for r in range(ny):
                for i2, s2 in enumerate(signs):
                    f = ((r * 2 + i2) * nx + c) * 4 + i1
                    for y in range(ny):
                        t += _chain(nx, ny, (c, y), 0, s1, f, R, 0)
                        t += _chain(nx, ny, (c, y), 0, s1, f, G, nx + 2 * ny - 3)
                    t += _chain(nx, ny, (c, r), 1, s2, f, R, nx - 1)
                    t += _chain(nx, ny, (c, r), 1, s2, f, G, nx + ny - 2)
    for r in range(ny):  # half B, columns first: flow ((r, s2), (c, s1)), direction s2
        for i2, s2 in enumerate(signs):
            for c in range(nx):
                for i1, s1 in enumerate(signs):
                    f = ((c * 2 + i1) * ny + r) * 4 + 2 + i2
                    for x in range(nx):
                        t += _chain(nx, ny, (x, r), 1, s2, f, R, 0)
                        t += _chain(nx, ny, (x, r), 1, s2, f, G, 2 * nx + ny - 3)
                    t += _chain(nx, ny, (c, r), 0, s1, f, R, ny - 1)
                    t += _chain(nx, ny, (c, r), 0, s1, f, G, nx + ny - 2)
    return Schedule.from_transfers("ring2d_4dir", topology.name, n, topology.nis_per_node, 8 * n, t,
                                   params={"dims": [nx, ny], "halves": ["rows first", "columns first"],
                                           "recv_ni_order": "flow"})


# --------------------------------------------------------------------------------------
# Double binary tree
# --------------------------------------------------------------------------------------


def _lowbit_tree(n: int) -> list[int]:
    """Parent of each rank (root: -1) of the in-order "lowbit" binary tree NCCL uses.

    Label ``v = rank + 1``; the root is the largest power of two <= n; ``v`` with lowest set
    bit ``b > 1`` has children ``v - b/2`` and ``v + h`` (``h`` the largest of b/2, b/4, ...
    with ``v + h <= n``). Odd labels (even ranks) are leaves.
    """
    parent = [-1] * n
    root = 1 << (n.bit_length() - 1)
    stack = [root]
    while stack:
        v = stack.pop()
        b = v & -v
        if b == 1:
            continue
        kids = [v - b // 2]
        h = b // 2
        while h >= 1 and v + h > n:
            h //= 2
        if h >= 1:
            kids.append(v + h)
        for k in kids:
            parent[k - 1] = v - 1
            stack.append(k)
    return parent


def _depths(parent: list[int]) -> list[int]:
    depth = [-1] * len(parent)

    def d(v: int) -> int:
        if depth[v] < 0:
            depth[v] = 0 if parent[v] < 0 else d(parent[v]) + 1
        return depth[v]

    return [d(v) for v in range(len(parent))]


def dbtree(topology: Topology, pipeline_chunks: int = 8) -> Schedule:
    """Double binary tree (NCCL-style): two complementary binary trees, each carrying half
    the vector in ``pipeline_chunks`` pipelined chunks.

    Ranks follow ``ring_order``. Tree B is tree A with every rank shifted by one, so (for
    an even N) the inner nodes of one tree are the leaves of the other. A node at depth d
    of a tree of height H sends chunk p up at step p + H - d and down at step p + H + d.
    """
    n = _need_nodes(topology, 2, "double binary tree")
    p_chunks = int(pipeline_chunks)
    if p_chunks < 1:
        raise ScheduleError(f"pipeline_chunks={pipeline_chunks}: must be >= 1")
    order = ring_order(topology)
    base = _lowbit_tree(n)
    trees = [base, [-1] * n]
    for r, p in enumerate(base):
        trees[1][(r + 1) % n] = -1 if p < 0 else (p + 1) % n
    t = []
    for b, parent in enumerate(trees):
        depth = _depths(parent)
        height = max(depth)
        for p in range(p_chunks):
            f = b * p_chunks + p
            for r in range(n):
                if parent[r] < 0:
                    continue
                up, down = order[r], order[parent[r]]
                t.append((p + height - depth[r], up, down, f, R))
                t.append((p + height + depth[parent[r]], down, up, f, G))
    return Schedule.from_transfers("dbtree", topology.name, n, topology.nis_per_node, 2 * p_chunks, t,
                                   params={"pipeline_chunks": p_chunks, "order": order})


# --------------------------------------------------------------------------------------
# Halving-doubling
# --------------------------------------------------------------------------------------


def halving_doubling(topology: Topology) -> Schedule:
    """Recursive halving (reduce-scatter) then recursive doubling (all-gather), Rabenseifner.

    Rank mapping: rank i is node i, which on switched topologies keeps the endpoints of a
    leaf switch in consecutive ranks, so the first and largest exchanges (partners
    ``r ^ 1``, ``r ^ 2``, ...) stay under one switch; on grids they are nearest neighbours
    along dimension 0 first. With N not a power of two, the N - 2^k extra nodes first hand
    their whole vector to a partner and get the result back at the end.
    """
    n = _need_nodes(topology, 2, "halving-doubling")
    k = n.bit_length() - 1
    p = 1 << k
    extra = n - p
    off = 1 if extra else 0  # step offset of the core when extra nodes fold in first
    t = []

    def bit(x: int, i: int) -> int:
        return (x >> i) & 1

    for q in range(p):  # part q, owned at the end by bitreverse(q)
        for s in range(k):
            for r in range(p):
                in_range = all(bit(q, k - 1 - s2) == bit(r, s2) for s2 in range(s))
                if in_range and bit(q, k - 1 - s) != bit(r, s):
                    partner = r ^ (1 << s)
                    t.append((off + s, r, partner, q, R))
                    t.append((off + 2 * k - 1 - s, partner, r, q, G))
        for e in range(p, n):
            t.append((0, e, e - p, q, R))
            t.append((off + 2 * k, e - p, e, q, G))
    return Schedule.from_transfers("halving_doubling", topology.name, n, topology.nis_per_node, p, t,
                                   params={"core_nodes": p, "extra_nodes": extra})
