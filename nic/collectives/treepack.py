"""Spanning trees per root packed onto any network, near the throughput optimum.

The all-reduce is reduce-scatter then all-gather over ``K`` spanning trees per root: flow
``K r + j`` is root ``r``'s ``j``-th tree and owns ``1/(K N)`` of the vector; it is
reduced up its tree to ``r`` and broadcast back down it. A tree edge ``p -> c`` is a
transfer from node ``p`` to node ``c`` (gather) and one from ``c`` to ``p`` (reduce), each
routed by the network's routing, so it loads the links of both routes and the NIs of both
nodes (:func:`edge_resources`).

**Trees per root** (:func:`trees_per_root`): the optimum's rate ``x*`` per node
(:func:`nic.collectives.optimal_bound`) is met exactly by trees of rate ``x*/K`` only if
every resource's bandwidth is a whole number of tree rates; ``K`` is the least such count,
capped at :data:`MAX_TREES_PER_ROOT`. It is a multiple of ForestColl's ``k`` (the least
count a packing at the optimum needs, which may leave a link that does not bind partly
idle) on every network of bench/data/forestcoll_reference.csv, equal to it on all but one.

**Packing** (:func:`pack`): an integral multiplicative-weights packing. Every tree is
grown from its root by a greedy (Prim-like) arborescence: the next edge is the one from the
tree to a new node whose resources' loads rise least under a steep convex price
``(load / capacity)^p``, the loads updated edge by edge; then every tree is in turn torn out
and regrown against the others' loads, for a few rounds, and the packing with the least
busiest resource is kept. Candidate edges are the router links' neighbours on a direct
network and every pair of nodes on a switched one. The ring's path trees
(:func:`ring_trees`) are one more packing, tried first; of all, the one with the least
lockstep time (:func:`nic.collectives.ideal_cycles`) is kept, and the search stops at one
whose lockstep time is the optimum.

**Steps** (:func:`schedule_steps`): list scheduling under the co-designed NIC's lockstep:
a transfer is placed in the first step after its dependencies' in which its sender has a
free send slot, its receiver a free receive slot and each link of its route a free slot
(one chunk per step per link of the slowest bandwidth; a faster link holds more), the
ready transfer with the longest remaining path through its flow first. The packing kept
has each step split by the speed of its transfers' ways, the slowest first
(:func:`split_by_speed`; networks with links of different bandwidths only).
"""

from __future__ import annotations

import math
from collections import namedtuple
from fractions import Fraction

import networkx as nx
import numpy as np
from numba import njit

from nic.collectives.schedule import Schedule, ScheduleError
from nic.scheduler import OP_GATHER, OP_REDUCE
from noc.routing import route_pairs
from noc.topology import Topology

MAX_TREES_PER_ROOT = 8
PACKING_ROUNDS = 8
PRICE_EXPONENT = 8.0
DEPTH_WEIGHTS = (0.1, 0.3, 1.0)
"""The packings tried: the premium per level of depth a tree's next edge pays (deeper trees
pack closer to the optimum's loads, shallower ones leave the steps more to choose from);
the one whose lockstep time is least is kept."""


def resource_capacities(topology: Topology) -> np.ndarray:
    """float64[L + 2N]: bytes/cycle of every link, then each node's send and receive
    bandwidth (its NIs' links, summed). On a direct network the NI links are left to the
    node's send/receive resources (the routes' NI hops are not counted, as in
    :func:`nic.collectives.transfer_paths`); on a switched network they are links of the
    routes and the node resources duplicate them."""
    ep = topology.node_endpoints
    send = topology.link_bytes_per_cycle[topology.inject_link[ep]].sum(axis=1)
    recv = topology.link_bytes_per_cycle[topology.eject_link[ep]].sum(axis=1)
    return np.concatenate([topology.link_bytes_per_cycle, send, recv]).astype(np.float64)


def candidate_pairs(topology: Topology) -> tuple[np.ndarray, np.ndarray]:
    """(parent, child) node pairs a tree edge may join: router-link neighbours on a direct
    network, every ordered pair on a switched one."""
    n = topology.num_nodes
    if topology.is_direct:
        e = topology.num_endpoints
        links = np.nonzero(topology.is_router_link)[0]
        pairs = np.unique(np.stack([topology.link_src[links] - e, topology.link_dst[links] - e], axis=1), axis=0)
        pairs = pairs[pairs[:, 0] != pairs[:, 1]]
        return pairs[:, 0].astype(np.int64), pairs[:, 1].astype(np.int64)
    a, b = np.nonzero(~np.eye(n, dtype=bool))
    return a.astype(np.int64), b.astype(np.int64)


def route_links(topology: Topology, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CSR (offsets, link ids) of the links the transfers ``src[i] -> dst[i]`` (nodes) load,
    as :func:`nic.collectives.transfer_paths` counts them."""
    ep = topology.node_endpoints[:, 0]
    links = route_pairs(topology, ep[src], ep[dst]).links
    valid = links >= 0
    if topology.is_direct:
        valid &= topology.is_router_link[np.maximum(links, 0)]
    off = np.zeros(len(src) + 1, dtype=np.int64)
    np.cumsum(valid.sum(axis=1), out=off[1:])
    return off, links[valid].astype(np.int64)


def edge_resources(topology: Topology, parent: np.ndarray, child: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CSR (offsets, resource ids) of what one tree edge ``parent -> child`` loads over the
    whole all-reduce: the gather's route and the reduce's route back, the sends of both
    nodes and the receives of both (resource ids as :func:`resource_capacities`)."""
    nl, n = topology.num_links, topology.num_nodes
    g_off, g_links = route_links(topology, parent, child)
    r_off, r_links = route_links(topology, child, parent)
    rows = []
    for i in range(len(parent)):
        p, c = int(parent[i]), int(child[i])
        rows.append(np.concatenate([g_links[g_off[i]:g_off[i + 1]], r_links[r_off[i]:r_off[i + 1]],
                                    [nl + p, nl + c, nl + n + c, nl + n + p]]))
    off = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum([len(r) for r in rows], out=off[1:])
    return off, np.concatenate(rows).astype(np.int64) if rows else np.zeros(0, np.int64)


def trees_per_root(topology: Topology, bound=None) -> int:
    """The least ``K`` for which every resource's bandwidth is a whole number of tree rates
    ``x*/K`` (``x*``: the optimum's all-gather and reduce-scatter rates per node), at most
    :data:`MAX_TREES_PER_ROOT`."""
    from nic.collectives.optimum import optimal_bound  # noqa: PLC0415

    ob = optimal_bound(topology) if bound is None else bound
    n = topology.num_nodes
    k = 1
    bws = {Fraction(float(b)) for b in resource_capacities(topology)}
    for per_byte in (ob.all_gather_cycles_per_byte, ob.reduce_scatter_cycles_per_byte):
        if per_byte == 0:
            continue
        rate = 1 / (n * per_byte)  # x*: bytes/cycle each node's trees carry
        for b in bws:
            k = math.lcm(k, (b / rate).denominator)
            if k > MAX_TREES_PER_ROOT:
                return MAX_TREES_PER_ROOT
    return k


# the load price of an edge: sum over its links of (u + du)^power - u^power with u the
# link's load x inv_cap x scale, times 1 + depth_weight x the edge's depth
Price = namedtuple("Price", "scale power depth_weight")


@njit(cache=True)
def _grow_tree(root, n, e_src, e_dst, r_off, r_ids, load, inv_cap, price, parent, depth):
    """Grow root's arborescence edge by edge (the cheapest marginal price first); add its
    loads to ``load``; fill ``parent`` (-1 at the root) and ``depth``. Returns the edges
    taken (their candidate index, in order)."""
    scale, power, depth_weight = price.scale, price.power, price.depth_weight
    in_tree = np.zeros(n, np.bool_)
    in_tree[root] = True
    parent[:] = -1
    depth[:] = 0
    taken = np.empty(n - 1, np.int64)
    ne = e_src.shape[0]
    for it in range(n - 1):
        best = -1
        best_cost = np.inf
        for e in range(ne):
            if in_tree[e_src[e]] and not in_tree[e_dst[e]]:
                cost = 0.0
                for k in range(r_off[e], r_off[e + 1]):
                    r = r_ids[k]
                    u = load[r] * inv_cap[r] * scale
                    du = inv_cap[r] * scale
                    cost += (u + du) ** power - u ** power
                cost *= 1.0 + depth_weight * depth[e_src[e]]  # the shallower edge, at a small premium
                if cost < best_cost:
                    best_cost = cost
                    best = e
        if best < 0:
            return taken[:it]
        for k in range(r_off[best], r_off[best + 1]):
            load[r_ids[k]] += 1.0
        c = e_dst[best]
        in_tree[c] = True
        parent[c] = e_src[best]
        depth[c] = depth[e_src[best]] + 1
        taken[it] = best
    return taken


@njit(cache=True)
def _remove_tree(taken, r_off, r_ids, load):
    for i in range(taken.shape[0]):
        e = taken[i]
        for k in range(r_off[e], r_off[e + 1]):
            load[r_ids[k]] -= 1.0


def pack(topology: Topology, k: int, depth_weight: float, rounds: int = PACKING_ROUNDS) -> np.ndarray:
    """int64[K N, N]: the parent of every node in each flow's tree (-1 at its root); flow
    ``K r + j`` is rooted at node ``r``."""
    n = topology.num_nodes
    e_src, e_dst = candidate_pairs(topology)
    r_off, r_ids = edge_resources(topology, e_src, e_dst)
    cap = resource_capacities(topology)
    inv_cap = np.where(cap > 0, 1.0 / np.where(cap > 0, cap, 1.0), 0.0)
    # price scale: a resource at the average load of a perfect packing sits near u = 1
    total = float(k * n * (n - 1)) * np.diff(r_off).mean()
    scale = float(np.sum(cap > 0)) / max(total * inv_cap[inv_cap > 0].mean(), 1e-12)
    load = np.zeros(cap.shape[0])
    parent = np.full((k * n, n), -1, np.int64)
    depth = np.zeros(n, np.int64)
    taken: list[np.ndarray | None] = [None] * (k * n)
    best, best_peak = None, np.inf
    for _ in range(rounds):
        for f in range(k * n):
            if taken[f] is not None:
                _remove_tree(taken[f], r_off, r_ids, load)
            taken[f] = _grow_tree(f // k, n, e_src, e_dst, r_off, r_ids, load, inv_cap,
                                  Price(float(scale), float(PRICE_EXPONENT), float(depth_weight)), parent[f], depth)
            if taken[f].shape[0] != n - 1:
                raise ScheduleError(f"{topology.name}: node {f // k} reaches only {taken[f].shape[0] + 1} of {n} "
                                    "nodes over the network's links")
        peak = float((load * inv_cap).max())
        if peak < best_peak - 1e-12:
            best, best_peak = parent.copy(), peak
    return best


def ring_trees(topology: Topology, k: int) -> np.ndarray | None:
    """The ring's trees as a packing: root ``r``'s ``j``-th tree is the path from ``r``
    around :func:`nic.collectives.ring_order`, forwards for even ``j``, backwards for odd
    (K = 1 is the ring all-reduce, K = 2 the bidirectional ring). None when consecutive
    nodes of the order are not candidate pairs (no one-hop link on a direct network)."""
    from nic.collectives.baselines import ring_order  # noqa: PLC0415

    order = np.asarray(ring_order(topology), np.int64)
    n = len(order)
    a, b = candidate_pairs(topology)
    pairs = set(zip(a.tolist(), b.tolist()))
    nxt = np.roll(order, -1)
    if not all((int(u), int(v)) in pairs and (int(v), int(u)) in pairs for u, v in zip(order, nxt)):
        return None
    parents = np.full((k * n, n), -1, np.int64)
    pos = np.empty(n, np.int64)
    pos[order] = np.arange(n)
    for r in range(n):
        for j in range(k):
            step = 1 if j % 2 == 0 else -1
            for d in range(1, n):
                child = order[(pos[r] + step * d) % n]
                parents[k * r + j, child] = order[(pos[r] + step * (d - 1)) % n]
    return parents


def _depths(parents: np.ndarray) -> np.ndarray:
    """int64[F, N]: each node's depth in each flow's tree."""
    f, n = parents.shape
    depth = np.zeros((f, n), np.int64)
    for _ in range(n):
        p = parents
        new = np.where(p >= 0, np.take_along_axis(depth, np.maximum(p, 0), axis=1) + 1, 0)
        if np.array_equal(new, depth):
            break
        depth = new
    return depth


def _subtree_heights(parents: np.ndarray, depth: np.ndarray) -> np.ndarray:
    """int64[F, N]: the longest path from each node down to a leaf of its subtree."""
    f_count, n = parents.shape
    height = np.zeros((f_count, n), np.int64)
    flows, child = np.nonzero(parents >= 0)
    order = np.argsort(-depth[flows, child], kind="stable")  # deepest first
    for fl, c in zip(flows[order].tolist(), child[order].tolist()):
        p = parents[fl, c]
        height[fl, p] = max(height[fl, p], height[fl, c] + 1)
    return height


def gather_steps(topology: Topology, parents: np.ndarray, reverse: bool = False) -> tuple[np.ndarray, ...]:
    """(step, parent, child, flow) of every tree's all-gather edges, placed by list
    scheduling: each step, the ready edges with the longest path still below them first,
    each into the step if its sender, receiver and route's links have a free slot.
    ``reverse``: the edges are the reduce-scatter's, run backwards in time (each loads
    the route child -> parent, the child's send and the parent's receive)."""
    f_count, n = parents.shape
    depth = _depths(parents)
    below = _subtree_heights(parents, depth)
    flows, child = np.nonzero(parents >= 0)
    par = parents[flows, child]
    m = len(flows)
    priority = below[flows, child]
    off, links = route_links(topology, child, par) if reverse else route_links(topology, par, child)
    cap = resource_capacities(topology)
    if reverse:  # the sender's send slots are the child's, the receiver's the parent's
        cap = np.concatenate([cap[:topology.num_links], cap[topology.num_links + n:], cap[topology.num_links:][:n]])
    nl = topology.num_links
    unit = float(cap[np.nonzero(topology.is_router_link)[0] if topology.is_direct else np.arange(nl)].min())
    slots = np.maximum(1, np.floor(cap / unit + 1e-9)).astype(np.int64)
    # an NI sends (and receives) one transfer at a time: a node's slots are at most its NIs
    slots[nl:] = np.minimum(slots[nl:], topology.nis_per_node)
    edge_of = np.full((f_count, n), -1, np.int64)  # the gather edge into (flow, child)
    edge_of[flows, child] = np.arange(m)
    # children of each (flow, node): CSR over edges sorted by (flow, parent)
    by_parent = np.lexsort((child, par, flows))
    key = flows[by_parent] * n + par[by_parent]
    first = np.searchsorted(key, np.arange(f_count * n), side="left")
    last = np.searchsorted(key, np.arange(f_count * n), side="right")
    step = np.full(m, -1, np.int64)
    ready = [i for i in range(m) if parents[flows[i], par[i]] < 0]
    pair_slots = _pair_slots(topology, slots, nl)
    routes = None if topology.is_direct else [links[off[i]:off[i + 1]] for i in range(m)]
    placed, s = 0, 0
    while placed < m:
        chosen = _match_step(ready, par, child, priority, slots, nl, n, pair_slots, routes)
        taken = set(chosen)
        nxt = [i for i in ready if i not in taken]
        for i in chosen:
            step[i] = s
            placed += 1
            g = flows[i] * n + child[i]
            nxt.extend(by_parent[first[g]:last[g]].tolist())
        ready = nxt
        s += 1
        if not chosen:  # pragma: no cover - a bug
            raise AssertionError("list scheduling placed nothing in a step")
    return step, par, child, flows


def _pair_slots(topology: Topology, slots: np.ndarray, nl: int) -> dict[tuple[int, int], int]:
    """Per-step slots of a one-hop node pair on a direct network (the link between them);
    empty on a switched network (its routes share links: only the NIs are matched)."""
    if not topology.is_direct:
        return {}
    e = topology.num_endpoints
    out: dict[tuple[int, int], int] = {}
    for li in np.nonzero(topology.is_router_link)[0].tolist():
        key = (int(topology.link_src[li]) - e, int(topology.link_dst[li]) - e)
        out[key] = out.get(key, 0) + int(slots[li])
    return out


def _match_step(ready: list[int], par, child, priority, slots, nl: int, n: int,
                pair_slots: dict, route_links: list | None = None) -> list[int]:
    """The ready edges one step carries: a most-transfers matching of senders' send slots
    to receivers' receive slots (and each pair's link slots), the most urgent first."""
    if not ready:
        return []
    by_pair: dict[tuple[int, int], list[int]] = {}
    urgent = sorted(ready, key=lambda i: (-int(priority[i]), i))
    for i in urgent:
        by_pair.setdefault((int(par[i]), int(child[i])), []).append(i)
    # the most urgent first, greedily: a most-transfers matching already when it fills every
    # sender's or every receiver's slots that the ready transfers can use
    sends: dict[int, int] = {}
    recvs: dict[int, int] = {}
    pairs: dict[tuple[int, int], int] = {}
    for (u, v), edges in by_pair.items():
        sends[u] = sends.get(u, 0) + len(edges)
        recvs[v] = recvs.get(v, 0) + len(edges)
    most = min(sum(min(c, int(slots[nl + u])) for u, c in sends.items()),
               sum(min(c, int(slots[nl + n + v])) for v, c in recvs.items()))
    sent: dict[int, int] = {}
    got: dict[int, int] = {}
    greedy = []
    for i in urgent:
        u, v = int(par[i]), int(child[i])
        if (sent.get(u, 0) < slots[nl + u] and got.get(v, 0) < slots[nl + n + v]
                and pairs.get((u, v), 0) < pair_slots.get((u, v), 1 << 30)):
            sent[u] = sent.get(u, 0) + 1
            got[v] = got.get(v, 0) + 1
            pairs[u, v] = pairs.get((u, v), 0) + 1
            greedy.append(i)
    if len(greedy) == most and not route_links:
        return greedy
    g = nx.DiGraph()
    for (u, v), edges in by_pair.items():
        cap = min(len(edges), pair_slots.get((u, v), len(edges)))
        g.add_edge("s", ("u", u), capacity=int(slots[nl + u]), weight=0)
        g.add_edge(("v", v), "t", capacity=int(slots[nl + n + v]), weight=0)
        g.add_edge(("u", u), ("v", v), capacity=cap, weight=-int(priority[edges[0]]))
    flow = nx.max_flow_min_cost(g, "s", "t")
    matched = [i for (u, v), edges in by_pair.items() for i in edges[:flow[("u", u)][("v", v)]]]
    if not route_links:  # a direct network: one link per pair, matched already
        return matched
    # a switched network: routes share links; keep the matched transfers whose links are free
    # (the most urgent first), then fill the step with any ready transfer that still fits
    used = np.zeros(slots.shape[0], np.int64)
    out = []
    rest = sorted(set(ready) - set(matched), key=lambda i: (-int(priority[i]), i))
    for i in sorted(matched, key=lambda i: (-int(priority[i]), i)) + rest:
        res = np.concatenate([route_links[i], [nl + int(par[i]), nl + n + int(child[i])]])
        if np.all(used[res] < slots[res]):
            used[res] += 1
            out.append(i)
    return out


def schedule_steps(topology: Topology, parents: np.ndarray) -> tuple[np.ndarray, ...]:
    """(step, src, dst, flow, op) of the reduce and gather transfers of every tree: the
    all-gather by :func:`gather_steps` in steps ``T .. 2T-1``, the reduce-scatter its
    mirror in steps ``0 .. T-1`` (the gather of step ``T + s`` reversed at step
    ``T - 1 - s``), so a node reduces what arrives from its children before it sends up.
    On a switched network a route back is not the way out reversed: the reduce-scatter
    is scheduled on its own routes, backwards in time."""
    g_step, par, child, flows = gather_steps(topology, parents)
    r_step = gather_steps(topology, parents, reverse=True)[0] if not topology.is_direct else g_step
    t = int(r_step.max()) + 1
    step = np.concatenate([t - 1 - r_step, t + g_step])
    src = np.concatenate([child, par])
    dst = np.concatenate([par, child])
    flow = np.concatenate([flows, flows])
    op = np.concatenate([np.full(len(par), OP_REDUCE), np.full(len(par), OP_GATHER)])
    return step, src, dst, flow, op


def transfer_rates(topology: Topology, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """float64[T]: the least bandwidth on each transfer's way (node ``src[i]`` to ``dst[i]``):
    its route's links (as :func:`route_links` counts them), the sender's and the receiver's
    NI link."""
    bw = topology.link_bytes_per_cycle
    ep = topology.node_endpoints[:, 0]
    rate = np.minimum(bw[topology.inject_link[ep[src]]], bw[topology.eject_link[ep[dst]]]).astype(np.float64)
    off, links = route_links(topology, np.asarray(src, np.int64), np.asarray(dst, np.int64))
    np.minimum.at(rate, np.repeat(np.arange(len(src)), np.diff(off)), bw[links])
    return rate


def split_by_speed(topology: Topology, step: np.ndarray, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """The steps with each one split by the speed of its transfers' ways
    (:func:`transfer_rates`), the slowest first: an NI sends one transfer at a time and a
    node's next step opens when all its NIs are idle, so a step that mixes transfers of
    different speeds leaves NIs idle while the slowest finishes. The transfers of one step
    never depend on each other, so every split is a valid schedule; with one speed
    everywhere the steps are unchanged."""
    rate = transfer_rates(topology, src, dst)
    speeds, cls = np.unique(rate, return_inverse=True)  # ascending: the slowest class first
    if len(speeds) == 1:
        return step
    _, dense = np.unique(np.asarray(step, np.int64) * len(speeds) + cls, return_inverse=True)
    return dense.astype(np.int64)


def treepack(topology: Topology, trees: int | None = None) -> Schedule:
    """The tree-packing all-reduce of any network (module docstring); ``trees``: trees per
    root (default :func:`trees_per_root`)."""
    n = topology.num_nodes
    if n < 2:
        raise ScheduleError(f"a tree packing needs at least 2 nodes; {topology.name} has {n}")
    k = trees_per_root(topology) if trees is None else int(trees)
    if not 1 <= k <= 64:
        raise ScheduleError(f"trees={trees}: must be 1 .. 64")
    from nic.collectives.analysis import ideal_cycles  # noqa: PLC0415

    size = 4 * 1024 * k * n  # whole 4-byte elements per flow: the lockstep time per byte
    best = None
    from nic.collectives.optimum import optimal_bound  # noqa: PLC0415

    optimum = float(optimal_bound(topology).all_reduce_cycles(size))
    candidates = [("ring", lambda: ring_trees(topology, k))] + [(w, lambda w=w: pack(topology, k, w))
                                                                for w in DEPTH_WEIGHTS]
    for weight, make in candidates:
        if best is not None and best[0] <= optimum * (1 + 1e-12):
            break  # at the optimum already
        parents = make()
        if parents is None:
            continue
        cols = schedule_steps(topology, parents)
        s = Schedule.from_columns("forest", topology.name, n, topology.nis_per_node, k * n, *cols)
        cycles = ideal_cycles(s, topology, size)
        if best is None or cycles < best[0] - 1e-9:
            best = (cycles, weight, parents, cols)
    _, weight, parents, (step, src, dst, flow, op) = best
    step = split_by_speed(topology, step, src, dst)
    height = int(_depths(parents).max())
    return Schedule.from_columns("forest", topology.name, n, topology.nis_per_node, k * n, step, src, dst, flow, op,
                                 {"trees_per_root": k, "depth": height, "construction": "packing",
                                  "packing": "ring paths" if weight == "ring" else f"greedy, depth premium {weight}"})
