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

The construction loop is a Numba kernel. Two observations make it fast without changing
its result: within a step a parent that cannot add a child never can again (send slots,
receive slots and links are only consumed, trees only grow), so each tree keeps a scan
pointer per step; and a parent whose candidates are all in the tree is dropped from the
tree's frontier for good.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from nic.collectives.schedule import Schedule, ScheduleError
from nic.scheduler import OP_GATHER, OP_REDUCE
from noc.routing import route
from noc.topology import Topology


@njit(cache=True)
def _links_free(links, lo, hi, used, stamp):
    for k in range(lo, hi):
        if used[links[k]] == stamp:
            return False
    return True


@njit(cache=True)
def _mark(links, lo, hi, used, stamp):
    for k in range(lo, hi):
        used[links[k]] = stamp


@njit(cache=True)
def _has_outside_candidate(p, in_tree_row, cand_off, cand_node):
    for j in range(cand_off[p], cand_off[p + 1]):
        if not in_tree_row[cand_node[j]]:
            return True
    return False


@njit(cache=True)
def build_trees(n, cand_off, cand_node, fwd_off, fwd_links, rev_off, rev_links, num_links, kary, max_steps):
    """Grow the N trees. Returns (edge_tree, edge_child, edge_parent, edge_step, steps).

    Edges come out in the order they were added. ``steps`` < 0 means the construction
    stalled (a step added nothing: the topology is disconnected) or hit ``max_steps``.
    """
    total = n * (n - 1)
    e_tree = np.empty(total, np.int32)
    e_child = np.empty(total, np.int32)
    e_parent = np.empty(total, np.int32)
    e_step = np.empty(total, np.int32)
    ne = 0
    in_tree = np.zeros((n, n), np.bool_)
    front = np.empty((n, n), np.int32)  # per tree: parents that may still have children
    front_len = np.zeros(n, np.int32)
    new_nodes = np.empty((n, n), np.int32)  # per tree: nodes added in the current step
    new_len = np.zeros(n, np.int32)
    size = np.ones(n, np.int32)
    for t in range(n):
        in_tree[t, t] = True
        front[t, 0] = t
        front_len[t] = 1 if n > 1 else 0
    ptr = np.zeros(n, np.int32)
    send_cnt = np.zeros(n, np.int32)
    recv_cnt = np.zeros(n, np.int32)
    used = np.full(num_links, -1, np.int32)
    complete = 1 if n == 1 else 0
    if n == 1:
        return e_tree[:0], e_child[:0], e_parent[:0], e_step[:0], 0
    step = 0
    cap = kary - 1
    while complete < n:
        if step >= max_steps:
            return e_tree[:ne], e_child[:ne], e_parent[:ne], e_step[:ne], -1
        # frontier at the start of the step: old live parents, then last step's new nodes
        for t in range(n):
            if size[t] == n:
                front_len[t] = 0
                continue
            k = 0
            for i in range(front_len[t]):
                p = front[t, i]
                if _has_outside_candidate(p, in_tree[t], cand_off, cand_node):
                    front[t, k] = p
                    k += 1
            for i in range(new_len[t]):
                p = new_nodes[t, i]
                if _has_outside_candidate(p, in_tree[t], cand_off, cand_node):
                    front[t, k] = p
                    k += 1
            front_len[t] = k
            new_len[t] = 0
            ptr[t] = 0
        send_cnt[:] = 0
        recv_cnt[:] = 0
        added_in_step = 0
        while True:
            added_in_pass = 0
            for t in range(n):
                if size[t] == n:
                    continue
                i = ptr[t]
                found = False
                while i < front_len[t]:
                    p = front[t, i]
                    if send_cnt[p] < cap:
                        for j in range(cand_off[p], cand_off[p + 1]):
                            c = cand_node[j]
                            if in_tree[t, c] or recv_cnt[c] >= cap:
                                continue
                            if not _links_free(fwd_links, fwd_off[j], fwd_off[j + 1], used, step):
                                continue
                            if not _links_free(rev_links, rev_off[j], rev_off[j + 1], used, step):
                                continue
                            _mark(fwd_links, fwd_off[j], fwd_off[j + 1], used, step)
                            _mark(rev_links, rev_off[j], rev_off[j + 1], used, step)
                            send_cnt[p] += 1
                            recv_cnt[c] += 1
                            in_tree[t, c] = True
                            size[t] += 1
                            new_nodes[t, new_len[t]] = c
                            new_len[t] += 1
                            e_tree[ne] = t
                            e_child[ne] = c
                            e_parent[ne] = p
                            e_step[ne] = step
                            ne += 1
                            found = True
                            break
                    if found:
                        break
                    i += 1
                ptr[t] = i
                if found:
                    added_in_pass += 1
                    if size[t] == n:
                        complete += 1
            added_in_step += added_in_pass
            if added_in_pass == 0:
                break
        if added_in_step == 0:
            return e_tree[:ne], e_child[:ne], e_parent[:ne], e_step[:ne], -1
        step += 1
    return e_tree[:ne], e_child[:ne], e_parent[:ne], e_step[:ne], step


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
    return (np.asarray(cand_off, np.int32), np.asarray(cand_node, np.int32), fwd_off, fwd_links, rev_off, rev_links)


def multitree_trees(topology: Topology, nis: int | None = None):
    """The trees: arrays (tree, child, parent, construction step) and the number of steps T."""
    n = topology.num_nodes
    nis = topology.nis_per_node if nis is None else int(nis)
    if nis < 1:
        raise ScheduleError(f"nis={nis}: a node needs at least one NI")
    kary = nis + 1
    arrays = candidates(topology)
    tree, child, parent, tstep, steps = build_trees(n, *arrays, topology.num_links, kary, max(4 * n * n, 16))
    if steps < 0:
        raise ScheduleError(f"MultiTree construction stalled on {topology.name}: the topology is not connected")
    return tree, child, parent, tstep, int(steps)


def multitree(topology: Topology, nis: int | None = None) -> Schedule:
    """MultiTree all-reduce on ``topology`` with ``nis`` NIs per node (default: the topology's)."""
    n = topology.num_nodes
    nis_eff = topology.nis_per_node if nis is None else int(nis)
    tree, child, parent, tstep, steps = multitree_trees(topology, nis_eff)
    red = np.stack([steps - 1 - tstep, child, parent, tree, np.full_like(tree, OP_REDUCE)], axis=1)
    gat = np.stack([steps + tstep, parent, child, tree, np.full_like(tree, OP_GATHER)], axis=1)
    per_step = np.bincount(tstep, minlength=steps).tolist() if steps else []
    return Schedule.from_transfers(
        "multitree", topology.name, n, nis_eff, n, np.concatenate([red, gat]),
        params={"construction_steps": steps, "edges_per_step": per_step, "kary": nis_eff + 1},
    )
