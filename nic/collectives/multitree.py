"""MultiTree (ISCA 2021): one spanning tree per root, grown together step by step.

Construction, exactly as the paper's Algorithm 1 (docs/collectives.md has the prose):

* Tree ``r`` is rooted at node ``r`` and will carry flow ``r`` (1/N of the vector).
* Trees grow one time step at a time. In a step every directed link may be used once,
  and each node may send at most ``kary-1`` and receive at most ``kary-1`` messages
  (``kary`` = NIs per node + 1).
* Roots take round-robin turns (0, 1, ..., N-1, 0, ...). A turn adds at most one edge to
  the root's tree: the parents are the nodes that were in the tree at the start of the
  step, scanned in insertion (breadth-first) order; the first parent with a free send slot
  that reaches a node not yet in the tree, with a free receive slot, over free links, gets
  it as a child. On a direct network the child is a one-hop neighbour (the parent's
  outgoing links in link order); on a switched network any endpoint, nearest first, whose
  routed path (and the reverse path the reduce will use) is entirely free this step.
* Turns continue until a whole pass over the roots adds nothing; then the step advances.

The all-reduce runs the edges twice: reduce-scatter in reverse (an edge added at
construction step ``t`` of ``T`` is sent child -> parent at step ``T-1-t``, leaves first;
each send waits for that node's children in the tree) and all-gather forward (parent ->
child at step ``T+t``). Steps are 0-based; the paper's 1-based numbering writes them as
``T-t`` and ``T+t+1``.

``tree_order="paper"`` instead grows the trees exactly as the public implementation of
the paper does (2D tori and meshes only; :func:`multitree` lists the rules that differ,
docs/collectives.md compares the two). Both orders run through the same kernel, which
takes the roots' turn order and the rule that ends a step as arguments.

The construction loop and the layout of the schedule's columns are Numba kernels
(:mod:`nic.collectives.multitree_growth`); this module turns a topology into their inputs.
"""

from __future__ import annotations

import numpy as np

from nic.collectives.multitree_growth import Candidates, Rules, Scratch, build_trees, schedule_columns
from nic.collectives.schedule import Schedule, ScheduleError
from noc.routing import route
from noc.topology import Topology


def _is_reversal(topology: Topology, there: list[int], back: list[int]) -> bool:
    src, dst = topology.link_src, topology.link_dst
    hops_there = [(int(src[l]), int(dst[l])) for l in there]
    hops_back = [(int(dst[l]), int(src[l])) for l in reversed(back)]
    return hops_there == hops_back


def candidates(topology: Topology):
    """CSR candidate children per node with the links each edge reserves (both directions)."""
    n = topology.num_nodes
    cand_off = [0]
    cand_node: list[int] = []
    fwd: list[list[int]] = []
    rev: list[list[int]] = []
    if topology.is_direct:
        offsets, links = topology.router_out_links
        e = topology.num_endpoints
        for p in range(n):
            for l in links[offsets[p]:offsets[p + 1]].tolist():
                cand_node.append(int(topology.link_dst[l]) - e)
                fwd.append([l])
                rev.append([])  # the reversed edges of a step are distinct links too
            cand_off.append(len(cand_node))
    else:
        routes = route(topology)
        ep = topology.node_endpoints[:, 0]
        dist = topology.endpoint_distances
        for p in range(n):
            others = [c for c in range(n) if c != p]
            others.sort(key=lambda c: (int(dist[ep[p], ep[c]]), c))
            for c in others:
                cand_node.append(c)
                there = routes.path(int(ep[p]), int(ep[c])).tolist()
                back = routes.path(int(ep[c]), int(ep[p])).tolist()
                fwd.append(there)
                # Reversing a step's edges maps distinct links to distinct links only when
                # the way back is the way there reversed; otherwise reserve it as well.
                rev.append([] if _is_reversal(topology, there, back) else back)
            cand_off.append(len(cand_node))

    def csr(lists):
        off = np.zeros(len(lists) + 1, dtype=np.int32)
        np.cumsum([len(x) for x in lists], out=off[1:])
        flat = np.fromiter((x for sub in lists for x in sub), dtype=np.int32, count=int(off[-1]))
        return off, flat

    fwd_off, fwd_links = csr(fwd)
    rev_off, rev_links = csr(rev)
    return Candidates(np.asarray(cand_off, np.int32), np.asarray(cand_node, np.int32), fwd_off, fwd_links, rev_off,
                      rev_links)


TREE_ORDERS = ("ours", "paper")


def _check_tree_order(topology: Topology, tree_order: str) -> None:
    if tree_order not in TREE_ORDERS:
        raise ScheduleError(f"tree_order={tree_order!r}: choose one of {', '.join(map(repr, TREE_ORDERS))}")
    if tree_order == "paper" and not (topology.family in ("torus", "mesh") and len(topology.dims) == 2):
        raise ScheduleError(f"tree_order='paper' needs a 2D torus or mesh (the public implementation's trees "
                            f"are reproduced there only); {topology.name} is not one, use tree_order='ours'")


def paper_candidates(topology: Topology):
    """Candidates as the public implementation scans them: north, south, west, east.

    Node ``x + X*y`` (``noc.topology``) is its node ``row*k + col`` with row = y and
    col = x, so its north (``n - k``) is our -y neighbour, south +y, west -x, east +x,
    wrapping on the torus. A neighbour reached twice (a torus side of 2, where the + and
    the wrap-around link meet the same node) is listed once, as in its model, which has
    one link per neighbour pair. Same CSR layout as :func:`candidates`.
    """
    n, e = topology.num_nodes, topology.num_endpoints
    offsets, links = topology.router_out_links
    cand_off, cand_node, fwd = [0], [], []
    for p in range(n):
        out = links[offsets[p]:offsets[p + 1]].tolist()
        seen: set[int] = set()
        for dim, sign in ((1, -1), (1, +1), (0, -1), (0, +1)):  # N, S, W, E
            for l in out:
                c = int(topology.link_dst[l]) - e
                if topology.link_dim[l] == dim and topology.link_sign[l] == sign and c not in seen:
                    seen.add(c)
                    cand_node.append(c)
                    fwd.append(l)
        cand_off.append(len(cand_node))
    fwd_off = np.arange(len(fwd) + 1, dtype=np.int32)
    empty = np.zeros(len(fwd) + 1, dtype=np.int32)
    return Candidates(np.asarray(cand_off, np.int32), np.asarray(cand_node, np.int32), fwd_off,
                      np.asarray(fwd, np.int32), empty, np.zeros(0, np.int32))


def paper_priority(topology: Topology) -> np.ndarray:
    """int64[N]: the public implementation's root priority (higher takes its turn first).

    Torus: 0 everywhere. Mesh: the largest distance to a corner, computed as its code does,
    ``|row - corner_row| + |corner_row - corner_col|``: the second term should be the
    column distance, so the priority depends on the row only (on 4x4: 6 on rows 0 and 3,
    5 on rows 1 and 2). Reproduced as it is so the trees match edge for edge. Its code
    covers k x k grids; on an X x Y grid the same formula is used with rows along y.
    """
    n = topology.num_nodes
    if topology.family != "mesh":
        return np.zeros(n, dtype=np.int64)
    nx, ny = topology.dims
    row = topology.router_coords[:, 1].astype(np.int64)
    corners = [(cr, cc) for cr in (0, ny - 1) for cc in (0, nx - 1)]
    return np.max([np.abs(row - cr) + abs(cr - cc) for cr, cc in corners], axis=0)


def _root_orders(topology: Topology, tree_order: str) -> tuple[np.ndarray, np.ndarray]:
    """(first round's order, every later round's order) of the roots' turns."""
    n = topology.num_nodes
    first = np.arange(n, dtype=np.int32)
    if tree_order == "ours":
        return first, first
    prio = paper_priority(topology)
    # its sorted(zip(priority, roots), reverse=True): descending priority, then descending id
    later = sorted(range(n), key=lambda v: (int(prio[v]), v), reverse=True)
    return first, np.asarray(later, dtype=np.int32)


def multitree_trees(topology: Topology, nis: int | None = None, tree_order: str = "ours"):
    """The trees: arrays (tree, child, parent, construction step) and the number of steps T.

    ``tree_order="paper"`` builds them as the public implementation of the paper does
    (see :func:`multitree`).
    """
    nis = topology.nis_per_node if nis is None else int(nis)
    if nis < 1:
        raise ScheduleError(f"nis={nis}: a node needs at least one NI")
    _check_tree_order(topology, tree_order)
    edges, steps = _grow(topology, nis, tree_order)
    return edges.tree, edges.child, edges.parent, edges.step, steps


def _grow(topology: Topology, nis: int, tree_order: str):
    """(Edges, construction steps) of the trees (``nis`` checked by the caller)."""
    n = topology.num_nodes
    cand = candidates(topology) if tree_order == "ours" else paper_candidates(topology)
    first, later = _root_orders(topology, tree_order)
    rules = Rules(n, topology.num_links, nis + 1, max(4 * n * n, 16), first, later, tree_order == "paper")
    # (allocated here, where large arrays get huge pages: each tree's row is reached at random)
    node_t = np.int16 if n < 2**15 else np.int32
    scratch = Scratch(np.empty((n, n), node_t), np.empty((n, n), node_t))
    edges, steps = build_trees(cand, rules, scratch)
    if steps < 0:
        raise ScheduleError(f"MultiTree construction stalled on {topology.name}: the topology is not connected")
    return edges, int(steps)


def multitree(topology: Topology, nis: int | None = None, tree_order: str = "ours") -> Schedule:
    """MultiTree all-reduce on ``topology`` with ``nis`` NIs per node (default: the topology's).

    ``tree_order`` picks how the trees grow:

    * ``"ours"`` (default): the rules in the module docstring.
    * ``"paper"``: exactly as the public implementation of the paper (commit b241ca1...,
      its ``compute_trees(kary, alternate=True, sort=True)``), on 2D tori and meshes only:
      neighbours scanned north, south, west, east; roots take turns 0..N-1 in the first
      round and, after every round, by descending priority then descending node id (torus:
      N-1..0; mesh: :func:`paper_priority`, including its row-only corner distance); a step
      ends as soon as the last root of a round adds nothing. Checked edge for edge against
      its trees (bench/data/multitree_paper_trees.json).
    """
    n = topology.num_nodes
    nis_eff = topology.nis_per_node if nis is None else int(nis)
    if nis_eff < 1:
        raise ScheduleError(f"nis={nis_eff}: a node needs at least one NI")
    _check_tree_order(topology, tree_order)
    edges, steps = _grow(topology, nis_eff, tree_order)
    # reduce-scatter: each edge child -> parent at step T-1-t; all-gather: parent -> child at T+t
    columns = schedule_columns(edges, steps, n)  # already in canonical order
    per_step = np.bincount(edges.step, minlength=steps).tolist() if steps else []
    return Schedule.from_columns(
        "multitree", topology.name, n, nis_eff, n, *columns,
        params={"construction_steps": steps, "edges_per_step": per_step, "kary": nis_eff + 1,
                "tree_order": tree_order},
    )
