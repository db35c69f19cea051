"""Deterministic routing as arrays, and a channel-dependency-graph deadlock check.

A :class:`RouteTable` holds, for every ordered pair of endpoints, the whole path as link
ids — injection link, router-to-router links, ejection link — and the virtual-channel
class the packet uses on each link. Algorithms:

* ``dor``: dimension-order routing on meshes, tori, rings and hypercubes. Each dimension
  is finished before the next, in the shortest direction (ties at k/2 go +). On tori a
  packet uses VC class 0 in each ring until it crosses that ring's dateline (the wrap
  link between coordinates k-1 and 0), and class 1 from that hop on; entering a new
  dimension starts again at class 0. ``dateline=False`` keeps class 0 everywhere (and
  deadlocks — :func:`check_deadlock_free` shows the cycle).
* ``nca``: nearest common ancestor on fat-trees (up to the lowest level where source and
  destination subtrees meet, choosing the up-port by the destination's digit — d-mod-k —
  then down), and up/down routing through an upper switch chosen by destination on
  BiGraph; on a single switch, straight through.
* ``shortest``: breadth-first shortest paths on the router graph for any topology, ties
  broken by the lowest link id.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from noc.errors import ConfigError
from noc.topology import Topology

ALGORITHMS = ("auto", "dor", "nca", "shortest")


@dataclass(frozen=True, eq=False)
class RouteTable:
    """Paths between all endpoint pairs.

    ``links[s, d, :length[s, d]]`` is the path from endpoint ``s`` to ``d`` (injection and
    ejection links included; empty when ``s == d``), ``vc_class`` the VC class per link.
    """

    algorithm: str
    links: np.ndarray  # int32[E, E, H], -1 padded
    vc_class: np.ndarray  # int8[E, E, H]
    length: np.ndarray  # int16[E, E]
    num_vc_classes: int

    def path(self, src: int, dst: int) -> np.ndarray:
        return self.links[src, dst, : self.length[src, dst]]

    def vcs(self, src: int, dst: int) -> np.ndarray:
        return self.vc_class[src, dst, : self.length[src, dst]]

    @property
    def hops(self) -> np.ndarray:
        """int16[E, E]: router-to-router links on each path."""
        return np.maximum(self.length.astype(np.int16) - 2, 0)

    @property
    def max_links(self) -> int:
        return int(self.links.shape[2])


def default_algorithm(topology: Topology) -> str:
    if topology.family in ("ring", "mesh", "torus", "hypercube"):
        return "dor"
    if topology.family in ("fattree", "bigraph", "switch"):
        return "nca"
    return "shortest"


def check_vc_classes(topology: Topology, routes: RouteTable, num_vcs: int) -> None:
    """A :class:`ConfigError` unless ``num_vcs`` VCs split evenly into the routes' VC classes."""
    classes = routes.num_vc_classes
    if num_vcs % classes:
        raise ConfigError(f"num_vcs = {num_vcs}: {routes.algorithm} routing on {topology.name} uses {classes} VC "
                          f"classes; num_vcs must be a multiple of {classes} (or set dateline = false)")


MAX_TABLE_BYTES = 4 << 30


def check_table_size(topology: Topology, max_links: int) -> None:
    """A :class:`ConfigError` instead of running out of memory: a route table holds, for
    every ordered pair of endpoints, up to ``max_links`` link ids (int32) and VC classes (int8)."""
    e = topology.num_endpoints
    need = e * e * (max_links * 5 + 2)
    if need > MAX_TABLE_BYTES:
        raise ConfigError(f"{topology.name}: route tables for {e} endpoints would take {need / 2**30:.1f} GiB "
                          f"(limit {MAX_TABLE_BYTES >> 30} GiB); use fewer NIs per node or a smaller network")


def route(topology: Topology, algorithm: str = "auto", *, dateline: bool = True) -> RouteTable:
    """Build the route table of ``topology`` with ``algorithm`` (``auto`` picks the family's own)."""
    if algorithm not in ALGORITHMS:
        raise ConfigError(f"routing algorithm {algorithm!r} is unknown; allowed: {', '.join(ALGORITHMS)}")
    if algorithm == "auto":
        algorithm = default_algorithm(topology)
    if algorithm == "dor":
        if topology.family not in ("ring", "mesh", "torus", "hypercube"):
            raise ConfigError(f"routing 'dor' needs a ring, mesh, torus or hypercube, not {topology.name}")
        rlinks, rvc = _dor_router_paths(topology, dateline and topology.wrap)
        classes = 2 if (dateline and topology.wrap) else 1
        check_table_size(topology, rlinks.shape[2] + 2)
        links, vcs, length = _compose(topology.inject_link, topology.eject_link, topology.endpoint_router, rlinks, rvc)
        return RouteTable("dor" if classes == 2 or not topology.wrap else "dor-no-dateline", links, vcs, length, classes)
    if algorithm == "nca":
        if topology.family not in ("fattree", "bigraph", "switch"):
            raise ConfigError(f"routing 'nca' needs a fat-tree, BiGraph or switch, not {topology.name}")
        return _nca(topology)
    offsets, out_links = topology.router_out_links
    nbr = (topology.link_dst[out_links] - topology.num_endpoints).astype(np.int32)
    rlinks = _bfs_router_paths(offsets, out_links, nbr, topology.num_routers)
    rvc = np.zeros(rlinks.shape, dtype=np.int8)
    check_table_size(topology, rlinks.shape[2] + 2)
    links, vcs, length = _compose(topology.inject_link, topology.eject_link, topology.endpoint_router, rlinks, rvc)
    return RouteTable("shortest", links, vcs, length, 1)


# --------------------------------------------------------------------------------------
# Dimension order
# --------------------------------------------------------------------------------------


def _dor_router_paths(t: Topology, dateline: bool) -> tuple[np.ndarray, np.ndarray]:
    ndim = len(t.dims)
    dims = np.asarray(t.dims, dtype=np.int64)
    strides = np.array([int(np.prod(t.dims[:i])) for i in range(ndim)], dtype=np.int64)
    # nbr_link[r, d, 0] = link in +d, [r, d, 1] = link in -d (-1 when absent).
    nbr_link = np.full((t.num_routers, ndim, 2), -1, dtype=np.int32)
    e = t.num_endpoints
    for lid in np.nonzero(t.is_router_link)[0]:
        r = t.link_src[lid] - e
        d = t.link_dim[lid]
        nbr_link[r, d, 0 if t.link_sign[lid] > 0 else 1] = lid
    max_h = int(sum(k // 2 if t.wrap else k - 1 for k in t.dims))
    return _dor_kernel(dims, strides, t.wrap, dateline, nbr_link, t.router_coords.astype(np.int64), max(max_h, 1))


@njit(cache=True)
def _dor_kernel(dims, strides, wrap, dateline, nbr_link, coords, max_h):
    nr = coords.shape[0]
    ndim = dims.shape[0]
    links = np.full((nr, nr, max_h), -1, dtype=np.int32)
    vcs = np.zeros((nr, nr, max_h), dtype=np.int8)
    for a in range(nr):
        for b in range(nr):
            h = 0
            for d in range(ndim):
                k = dims[d]
                x = coords[a, d]
                y = coords[b, d]
                if x == y:
                    continue
                if wrap:
                    fwd = (y - x) % k
                    if fwd <= k - fwd:
                        sign, n = 1, fwd
                    else:
                        sign, n = -1, k - fwd
                else:
                    sign = 1 if y > x else -1
                    n = abs(y - x)
                cls = 0
                r = a  # the current router: dimensions before d are already done
                for d2 in range(d):
                    r += (coords[b, d2] - coords[a, d2]) * strides[d2]
                cx = x
                for _ in range(n):
                    lid = nbr_link[r, d, 0 if sign > 0 else 1]
                    nx = cx + sign
                    if nx == k or nx == -1:
                        if dateline:
                            cls = 1
                        nx = nx % k
                    links[a, b, h] = lid
                    vcs[a, b, h] = cls
                    h += 1
                    r += (nx - cx) * strides[d]
                    cx = nx
    return links, vcs


# --------------------------------------------------------------------------------------
# Breadth-first shortest paths
# --------------------------------------------------------------------------------------


@njit(cache=True)
def _bfs_router_paths(offsets, out_links, nbr, nr):
    parent_link = np.full((nr, nr), -1, dtype=np.int32)
    dist = np.full((nr, nr), -1, dtype=np.int32)
    queue = np.empty(nr, dtype=np.int32)
    max_d = 0
    for s in range(nr):
        dist[s, s] = 0
        head = 0
        tail = 1
        queue[0] = s
        while head < tail:
            u = queue[head]
            head += 1
            for i in range(offsets[u], offsets[u + 1]):  # link ids ascending: lowest id wins ties
                v = nbr[i]
                if dist[s, v] < 0:
                    dist[s, v] = dist[s, u] + 1
                    parent_link[s, v] = i  # index into out_links
                    queue[tail] = v
                    tail += 1
                    if dist[s, v] > max_d:
                        max_d = dist[s, v]
    owner = np.empty(out_links.shape[0], dtype=np.int32)  # source router of each out-link slot
    for w in range(nr):
        for i in range(offsets[w], offsets[w + 1]):
            owner[i] = w
    links = np.full((nr, nr, max(max_d, 1)), -1, dtype=np.int32)
    for s in range(nr):
        for t in range(nr):
            v = t
            dd = dist[s, t]
            while v != s and dd > 0:
                i = parent_link[s, v]
                links[s, t, dd - 1] = out_links[i]
                dd -= 1
                v = owner[i]
    return links


# --------------------------------------------------------------------------------------
# Trees: nearest common ancestor (fat-tree), up/down (BiGraph), single switch
# --------------------------------------------------------------------------------------


def _nca(t: Topology) -> RouteTable:
    e = t.num_endpoints
    # up and down through at most every fat-tree level (BiGraph: 2 switch hops), plus NI links
    max_links = 2 * t.params.get("levels", 2) + 2
    check_table_size(t, max_links)
    lookup = {(int(s), int(d)): int(lid) for lid, (s, d) in enumerate(zip(t.link_src, t.link_dst))}
    # written straight into the table (a Python list per pair would take several times its memory)
    links = np.full((e, e, max_links), -1, dtype=np.int32)
    length = np.zeros((e, e), dtype=np.int16)

    def store(a: int, b: int, p: list[int]) -> None:
        links[a, b, : len(p)] = p
        length[a, b] = len(p)

    if t.family == "fattree":
        k, levels = t.params["k"], t.params["levels"]
        per_level = k ** (levels - 1)

        def vtx(level: int, s: int) -> int:
            return e + level * per_level + s

        def digit(x: int, i: int) -> int:
            return (x // k**i) % k

        for a in range(e):
            for b in range(e):
                if a == b:
                    continue
                sa, sb = a // k, b // k
                top = 0
                while top < levels - 1 and (sa // k**top) != (sb // k**top):
                    top += 1
                p = [int(t.inject_link[a])]
                s = sa
                for lv in range(top):  # up: replace digit lv by the destination's digit lv
                    s_up = s + (digit(b, lv) - digit(s, lv)) * k**lv
                    p.append(lookup[(vtx(lv, s), vtx(lv + 1, s_up))])
                    s = s_up
                for lv in range(top - 1, -1, -1):  # down: set digit lv to the destination leaf's
                    s_dn = s + (digit(sb, lv) - digit(s, lv)) * k**lv
                    p.append(lookup[(vtx(lv + 1, s), vtx(lv, s_dn))])
                    s = s_dn
                assert s == sb
                p.append(int(t.eject_link[b]))
                store(a, b, p)
    elif t.family == "bigraph":
        m, n = t.params["m"], t.params["n"]
        for a in range(e):
            for b in range(e):
                if a == b:
                    continue
                la, lb = a // n, b // n
                p = [int(t.inject_link[a])]
                if la != lb:
                    up = e + m + (b % m)
                    p += [lookup[(e + la, up)], lookup[(up, e + lb)]]
                p.append(int(t.eject_link[b]))
                store(a, b, p)
    else:  # single switch
        for a in range(e):
            for b in range(e):
                if a != b:
                    store(a, b, [int(t.inject_link[a]), int(t.eject_link[b])])
    links = np.ascontiguousarray(links[:, :, : max(int(length.max()), 1)])
    return RouteTable("nca", links, np.zeros(links.shape, dtype=np.int8), length, 1)


# --------------------------------------------------------------------------------------
# Composition: endpoint paths from router paths
# --------------------------------------------------------------------------------------


@njit(cache=True)
def _compose(inject, eject, ep_router, rlinks, rvc):
    e = inject.shape[0]
    hr = rlinks.shape[2]
    links = np.full((e, e, hr + 2), -1, dtype=np.int32)
    vcs = np.zeros((e, e, hr + 2), dtype=np.int8)
    length = np.zeros((e, e), dtype=np.int16)
    for a in range(e):
        ra = ep_router[a]
        for b in range(e):
            if a == b:
                continue
            rb = ep_router[b]
            links[a, b, 0] = inject[a]
            h = 1
            for i in range(hr):
                lid = rlinks[ra, rb, i]
                if lid < 0:
                    break
                links[a, b, h] = lid
                vcs[a, b, h] = rvc[ra, rb, i]
                h += 1
            links[a, b, h] = eject[b]
            length[a, b] = h + 1
    return links, vcs, length


# --------------------------------------------------------------------------------------
# Deadlock freedom
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DeadlockReport:
    """Result of :func:`check_deadlock_free`.

    ``cycle`` is empty when the channel-dependency graph is acyclic; otherwise it lists
    ``(link_id, vc_class)`` channels, each depending on the next and the last on the first.
    """

    deadlock_free: bool
    cycle: tuple[tuple[int, int], ...]
    channels: int
    dependencies: int

    def describe(self, topology: Topology) -> str:
        if self.deadlock_free:
            return f"deadlock-free: {self.channels} channels, {self.dependencies} dependencies, no cycle"
        hops = " -> ".join(
            f"{int(topology.link_src[lid])}->{int(topology.link_dst[lid])}/vc{vc}" for lid, vc in self.cycle
        )
        return f"deadlock possible: dependency cycle of {len(self.cycle)} channels: {hops}"


def check_deadlock_free(topology: Topology, routes: RouteTable, vcs: int | None = None) -> DeadlockReport:
    """Build the channel-dependency graph over (link, VC class) and prove it acyclic.

    ``vcs`` is the number of virtual channels per port; the routing's VC classes must fit
    in it (with more VCs than classes, each class owns a share, which this check covers).
    """
    c = routes.num_vc_classes
    if vcs is not None and vcs < c:
        raise ConfigError(f"routing {routes.algorithm!r} needs {c} VC classes but vcs={vcs}")
    a = routes.links[:, :, :-1].astype(np.int64) * c + routes.vc_class[:, :, :-1]
    b = routes.links[:, :, 1:].astype(np.int64) * c + routes.vc_class[:, :, 1:]
    ok = (routes.links[:, :, :-1] >= 0) & (routes.links[:, :, 1:] >= 0)
    n = topology.num_links * c
    edges = np.unique(a[ok] * n + b[ok])
    src = (edges // n).astype(np.int64)
    dst = (edges % n).astype(np.int64)
    remaining = _kahn_remaining(src, dst, n)
    if not remaining.any():
        return DeadlockReport(True, (), n, int(edges.size))
    cycle = _find_cycle(src, dst, remaining)
    return DeadlockReport(False, tuple((int(ch // c), int(ch % c)) for ch in cycle), n, int(edges.size))


@njit(cache=True)
def _kahn_remaining(src, dst, n):
    indeg = np.zeros(n, dtype=np.int64)
    for i in range(src.shape[0]):
        indeg[dst[i]] += 1
    order = np.argsort(src)
    offsets = np.zeros(n + 1, dtype=np.int64)
    for i in range(src.shape[0]):
        offsets[src[i] + 1] += 1
    for i in range(n):
        offsets[i + 1] += offsets[i]
    stack = np.empty(n, dtype=np.int64)
    top = 0
    for v in range(n):
        if indeg[v] == 0:
            stack[top] = v
            top += 1
    removed = np.zeros(n, dtype=np.bool_)
    while top > 0:
        top -= 1
        u = stack[top]
        removed[u] = True
        for j in range(offsets[u], offsets[u + 1]):
            v = dst[order[j]]
            indeg[v] -= 1
            if indeg[v] == 0:
                stack[top] = v
                top += 1
    return ~removed


def _find_cycle(src: np.ndarray, dst: np.ndarray, remaining: np.ndarray) -> list[int]:
    # In the part Kahn's algorithm could not remove every channel has a predecessor that
    # is also left; walking predecessors must revisit a channel, closing a cycle.
    pred: dict[int, int] = {}
    for s, d in zip(src.tolist(), dst.tolist()):
        if remaining[s] and remaining[d] and d not in pred:
            pred[d] = s
    start = int(np.nonzero(remaining)[0][0])
    seen: dict[int, int] = {}
    walk: list[int] = []
    v = start
    while v not in seen:
        seen[v] = len(walk)
        walk.append(v)
        v = pred[v]
    cycle_rev = walk[seen[v] :]
    return cycle_rev[::-1]
