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

from noc.base.errors import ConfigError
from noc.topology import MAX_TABLE_BYTES, Topology, route_table_bytes

ALGORITHMS = ("auto", "dor", "nca", "shortest")
# VC classes of DOR on tori: "dateline" (class 0 until the packet crosses the ring's wrap
# link, class 1 from that hop on) or "booksim" (BookSim2's dim_order_torus: the class is
# chosen on entering each ring, 1 when the destination's coordinate in that dimension is
# below the current one, 0 otherwise, and kept for the whole ring)
VC_RULES = ("dateline", "booksim")


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


def tie_variants(topology: Topology) -> list[tuple[int, ...]]:
    """The tie directions DOR can take on ``topology``: one sign per dimension, both signs
    in each ring of even radix (a packet half-way around it may go either way), + elsewhere.
    A single all-+ entry on meshes and on tori without an even ring."""
    if not topology.wrap or not topology.dims:
        return [tuple(1 for _ in topology.dims)]
    variants: list[tuple[int, ...]] = [()]
    for k in topology.dims:
        signs = (1, -1) if k % 2 == 0 else (1,)
        variants = [v + (s,) for v in variants for s in signs]
    return variants


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


def check_table_size(topology: Topology, max_links: int, *, at_least: bool = False) -> None:
    """A :class:`ConfigError` instead of running out of memory: a route table holds, for
    every ordered pair of endpoints, up to ``max_links`` link ids (int32) and VC classes (int8).

    :func:`route` calls it with the table's width computed from the topology before it
    builds any table (``noc.topology.MAX_TABLE_BYTES``, 4 GiB); ``at_least``: ``max_links``
    is only a lower bound on the width."""
    e = topology.num_endpoints
    need = route_table_bytes(e, max_links)
    if need > MAX_TABLE_BYTES:
        paths = f"{max_links} or more" if at_least else f"up to {max_links}"
        raise ConfigError(f"{topology.name}: route tables for {e} endpoints with paths of {paths} links "
                          f"would take {'at least ' if at_least else ''}{need / 2**30:,.1f} GiB "
                          f"(limit {MAX_TABLE_BYTES >> 30} GiB); use fewer NIs per node or a smaller network")


def _check_router_tables(topology: Topology, max_hops: int) -> None:
    # breadth-first routing first builds router-level tables: distances and parents (int32[R, R]
    # each), paths (int32[R, R, max_hops]) and their VC classes (int8)
    r = topology.num_routers
    need = r * r * (8 + 5 * max_hops)
    if need > MAX_TABLE_BYTES:
        raise ConfigError(f"{topology.name}: shortest-path tables for {r:,} routers with paths of up to {max_hops} "
                          f"hops would take {need / 2**30:,.1f} GiB (limit {MAX_TABLE_BYTES >> 30} GiB); "
                          "use the family's own routing (auto) or a smaller network")


def dor_max_hops(topology: Topology) -> int:
    """The width of DOR's router-level table: the longest dimension-order path (at least 1)."""
    return max(sum(k // 2 if topology.wrap else k - 1 for k in topology.dims), 1)


def plan_route(topology: Topology, algorithm: str = "auto", *, dateline: bool = True) -> tuple[str, int, int]:
    """What :func:`route` would build, worked out before building anything: ``(algorithm,
    table width in links, VC classes)``. A :class:`ConfigError` for an unknown or unsuitable
    algorithm, and when the table (or shortest-path routing's router tables) would exceed
    ``MAX_TABLE_BYTES``. The width is exact except for a network of one endpoint (no paths:
    the table is trimmed to width 1)."""
    if algorithm not in ALGORITHMS:
        raise ConfigError(f"routing algorithm {algorithm!r} is unknown; allowed: {', '.join(ALGORITHMS)}")
    if algorithm == "auto":
        algorithm = default_algorithm(topology)
    if algorithm == "dor":
        if topology.family not in ("ring", "mesh", "torus", "hypercube"):
            raise ConfigError(f"routing 'dor' needs a ring, mesh, torus or hypercube, not {topology.name}")
        width = dor_max_hops(topology) + 2
        check_table_size(topology, width)
        return "dor", width, 2 if (dateline and topology.wrap) else 1
    if algorithm == "nca":
        if topology.family not in ("fattree", "bigraph", "switch"):
            raise ConfigError(f"routing 'nca' needs a fat-tree, BiGraph or switch, not {topology.name}")
        # NI links plus up and down through the fat-tree's levels above the leaves (BiGraph: 2
        # switch hops; a single switch: none)
        if topology.family == "bigraph":  # up to the other layer and back; one switch per layer: no switch hop
            width = 4 if topology.params["m"] > 1 else 2
        else:
            width = 2 * topology.params.get("levels", 1) if topology.family == "fattree" else 2
        check_table_size(topology, width)
        return "nca", width, 1
    # every path has at least one router hop of table width: check that bound before the
    # all-pairs distances, then the exact width from them
    check_table_size(topology, 3, at_least=True)
    _check_router_tables(topology, 1)
    max_hops = max(int(topology.router_distances.max()), 1)
    check_table_size(topology, max_hops + 2)
    _check_router_tables(topology, max_hops)
    return "shortest", max_hops + 2, 1


def route(topology: Topology, algorithm: str = "auto", *, dateline: bool = True, vc_rule: str = "dateline",
          tie_signs: tuple[int, ...] | None = None, up_variant: int = -1) -> RouteTable:
    """Build the route table of ``topology`` with ``algorithm`` (``auto`` picks the family's own).

    DOR on tori only: ``vc_rule`` picks the VC classes (:data:`VC_RULES`), ``tie_signs``
    the direction (+1 or -1 per dimension) of a packet exactly half-way around an
    even ring (default: + in every dimension; :func:`tie_variants` lists the choices).
    NCA on fat-trees only: ``up_variant`` in ``[0, nca_up_variants)`` picks the up links
    (its base-k digit ``l`` is the port taken up from level ``l``) instead of the
    destination's digits (-1, the default).
    Its size is checked first (:func:`plan_route`): a table over ``MAX_TABLE_BYTES`` is a
    :class:`ConfigError` before any of it is allocated."""
    if vc_rule not in VC_RULES:
        raise ConfigError(f"vc_rule {vc_rule!r} is unknown; allowed: {', '.join(VC_RULES)}")
    algorithm, width, classes = plan_route(topology, algorithm, dateline=dateline)
    if algorithm == "dor":
        rlinks, rvc = _dor_router_paths(topology, dateline and topology.wrap, tie_signs=tie_signs, vc_rule=vc_rule)
        links, vcs, length = _compose(topology.inject_link, topology.eject_link, topology.endpoint_router, rlinks, rvc)
        return RouteTable("dor" if classes == 2 or not topology.wrap else "dor-no-dateline", links, vcs, length, classes)
    if algorithm == "nca":
        return _nca(topology, width, up_variant)
    offsets, out_links = topology.router_out_links
    nbr = (topology.link_dst[out_links] - topology.num_endpoints).astype(np.int32)
    rlinks = _bfs_router_paths(offsets, out_links, nbr, topology.num_routers)
    rvc = np.zeros(rlinks.shape, dtype=np.int8)
    links, vcs, length = _compose(topology.inject_link, topology.eject_link, topology.endpoint_router, rlinks, rvc)
    return RouteTable("shortest", links, vcs, length, 1)


@dataclass(frozen=True, eq=False)
class PairRoutes:
    """Paths of chosen endpoint pairs only, as :func:`route_pairs` builds them.

    Row ``p`` is the path of the ``p``-th pair asked for: ``links[p, :length[p]]``
    (injection and ejection links included, -1 padded) and its VC classes. The width is
    the longest of these paths, not the network's longest, so a schedule of neighbour
    transfers holds three links per transfer whatever the network's size.
    """

    algorithm: str
    links: np.ndarray  # int32[P, H], -1 padded
    vc_class: np.ndarray  # int8[P, H]
    length: np.ndarray  # int16[P]
    num_vc_classes: int

    @property
    def max_links(self) -> int:
        return int(self.links.shape[1])


# route_pairs numbers the router pairs in a table of all R*R pairs while R*R is at most four
# per pair asked for plus this many (else it sorts the pairs' keys)
PAIR_TABLE_SLACK = 1 << 22


def route_pairs(topology: Topology, src: np.ndarray, dst: np.ndarray, algorithm: str = "auto", *,
                dateline: bool = True, vc_rule: str = "dateline",
                tie_signs: tuple[int, ...] | None = None) -> PairRoutes:
    """The paths of the endpoint pairs ``(src[p], dst[p])`` only, identical to the rows
    of :func:`route`'s table for them. Dimension order is computed per distinct router
    pair in closed form, so memory and time follow the pairs asked for, not all ``E**2``
    pairs of the network; other algorithms build the full table (its size checked first)
    and take the rows."""
    if vc_rule not in VC_RULES:
        raise ConfigError(f"vc_rule {vc_rule!r} is unknown; allowed: {', '.join(VC_RULES)}")
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    e = topology.num_endpoints
    if src.shape != dst.shape or src.ndim != 1:
        raise ValueError(f"src and dst must be two 1-D arrays of one shape, got {src.shape} and {dst.shape}")
    if src.size and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= e):
        raise ValueError(f"endpoint ids must be in [0, {e}); {topology.name} has {e} endpoints")
    name = algorithm if algorithm != "auto" else default_algorithm(topology)
    if name != "dor":
        table = route(topology, algorithm, dateline=dateline, vc_rule=vc_rule, tie_signs=tie_signs)
        length = table.length[src, dst]
        width = max(int(length.max(initial=0)), 1)
        return PairRoutes(table.algorithm, table.links[src, dst, :width], table.vc_class[src, dst, :width], length,
                          table.num_vc_classes)
    if topology.family not in ("ring", "mesh", "torus", "hypercube"):
        raise ConfigError(f"routing 'dor' needs a ring, mesh, torus or hypercube, not {topology.name}")
    classes = 2 if (dateline and topology.wrap) else 1
    ep_router = topology.endpoint_router.astype(np.int64)
    r = topology.num_routers
    pair_id = np.empty(src.size, np.int32 if src.size < 2**31 - 1 else np.int64)
    if r * r <= 4 * src.size + PAIR_TABLE_SLACK:  # the router pairs counted in a table of them all
        first = np.full(r * r, -1, pair_id.dtype)
        keys = _distinct_pairs(ep_router, src, dst, r, first, pair_id)
        del first
    else:
        keys, inverse = np.unique(ep_router[src] * r + ep_router[dst], return_inverse=True)
        pair_id[:] = inverse.reshape(-1)
        del inverse
    args = _dor_setup(topology, dateline and topology.wrap, tie_signs, vc_rule)
    rl, rv, rlen = _dor_pairs_kernel(keys // r, keys % r, *args)
    width = max(_pair_width(src, dst, pair_id, rlen), 1)
    links = np.full((src.size, width), -1, dtype=np.int32)
    vcs = np.zeros((src.size, width), dtype=np.int8)
    length = np.zeros(src.size, dtype=np.int16)
    _fill_pair_paths(src, dst, pair_id, rl, rv, rlen, topology.inject_link.astype(np.int64),
                     topology.eject_link.astype(np.int64), links, vcs, length)
    algo = "dor" if classes == 2 or not topology.wrap else "dor-no-dateline"
    return PairRoutes(algo, links, vcs, length, classes)


@njit(cache=True)
def _distinct_pairs(ep_router, src, dst, r, first, pair_id):
    """Number the distinct router pairs of the endpoint pairs (in order of first appearance:
    ``pair_id``) and return their keys ``router_a * r + router_b``; ``first`` (int[r*r],
    all -1) is scratch."""
    keys = np.empty(min(src.shape[0], r * r), np.int64)
    nk = 0
    for p in range(src.shape[0]):
        key = ep_router[src[p]] * r + ep_router[dst[p]]
        k = first[key]
        if k < 0:
            k = nk
            first[key] = k
            keys[nk] = key
            nk += 1
        pair_id[p] = k
    return keys[:nk].copy()


@njit(cache=True)
def _pair_width(src, dst, pair_id, rlen):
    """The longest path (injection and ejection links included) of the pairs; 0 without any."""
    w = 0
    for p in range(src.shape[0]):
        if src[p] != dst[p]:
            w = max(w, rlen[pair_id[p]] + 2)
    return w


@njit(cache=True)
def _fill_pair_paths(src, dst, pair_id, rl, rv, rlen, inject_link, eject_link, links, vcs, length):
    """Each pair's path: its NI's injection link, its router pair's path, the ejection link
    (class 0); nothing for a pair that goes nowhere."""
    for p in range(src.shape[0]):
        if src[p] == dst[p]:
            continue
        k = pair_id[p]
        n = rlen[k]
        links[p, 0] = inject_link[src[p]]
        for h in range(n):
            links[p, 1 + h] = rl[k, h]
            vcs[p, 1 + h] = rv[k, h]
        links[p, n + 1] = eject_link[dst[p]]
        length[p] = n + 2


# --------------------------------------------------------------------------------------
# Dimension order
# --------------------------------------------------------------------------------------


def _dor_setup(t: Topology, dateline: bool, tie_signs: tuple[int, ...] | None, vc_rule: str) -> tuple:
    """The arguments every DOR kernel takes after the router pair(s)."""
    ndim = len(t.dims)
    dims = np.asarray(t.dims, dtype=np.int64)
    strides = np.array([int(np.prod(t.dims[:i])) for i in range(ndim)], dtype=np.int64)
    # nbr_link[r, d, 0] = link in +d, [r, d, 1] = link in -d (-1 when absent).
    nbr_link = np.full((t.num_routers, ndim, 2), -1, dtype=np.int32)
    rl = np.nonzero(t.is_router_link)[0]
    nbr_link[t.link_src[rl] - t.num_endpoints, t.link_dim[rl], np.where(t.link_sign[rl] > 0, 0, 1)] = rl
    ties = np.ones(ndim, dtype=np.int64) if tie_signs is None else np.asarray(tie_signs, dtype=np.int64)
    return (dims, strides, t.wrap, dateline, nbr_link, t.router_coords.astype(np.int64), dor_max_hops(t), ties,
            VC_RULES.index(vc_rule))


def _dor_router_paths(t: Topology, dateline: bool, *, tie_signs: tuple[int, ...] | None = None,
                      vc_rule: str = "dateline") -> tuple[np.ndarray, np.ndarray]:
    return _dor_kernel(*_dor_setup(t, dateline, tie_signs, vc_rule))


# The DOR kernels: _dor_path inlined into each, and NumPy's error model (no division-by-zero
# branch after a ``% k``; k, a dimension's radix, is at least 1): 2-3x faster on 8x8 and
# 16x16 tori than a call per pair with the check
@njit(cache=True, inline="always")
def _dor_path(a, b, dims, strides, wrap, dateline, nbr_link, coords, tie_sign, vc_rule, links_row, vcs_row):
    """Write the dimension-order path from router ``a`` to router ``b`` into ``links_row``
    and ``vcs_row`` (from index 0); returns its number of links."""
    ndim = dims.shape[0]
    h = 0
    for d in range(ndim):
        k = dims[d]
        x = coords[a, d]
        y = coords[b, d]
        if x == y:
            continue
        if wrap:
            fwd = (y - x) % k
            if fwd < k - fwd or (fwd == k - fwd and tie_sign[d] > 0):
                sign, n = 1, fwd
            else:
                sign, n = -1, k - fwd
        else:
            sign = 1 if y > x else -1
            n = abs(y - x)
        cls = 0
        if dateline and vc_rule == 1:
            # BookSim's partition: chosen on entering the ring, kept for all of it
            cls = 1 if y < x else 0
        r = a  # the current router: dimensions before d are already done
        for d2 in range(d):
            r += (coords[b, d2] - coords[a, d2]) * strides[d2]
        cx = x
        for _ in range(n):
            lid = nbr_link[r, d, 0 if sign > 0 else 1]
            nx = cx + sign
            if nx == k or nx == -1:
                if dateline and vc_rule == 0:
                    cls = 1
                nx = nx % k
            links_row[h] = lid
            vcs_row[h] = cls
            h += 1
            r += (nx - cx) * strides[d]
            cx = nx
    return h


@njit(cache=True, error_model="numpy")
def _dor_kernel(dims, strides, wrap, dateline, nbr_link, coords, max_h, tie_sign, vc_rule):
    nr = coords.shape[0]
    links = np.full((nr, nr, max_h), -1, dtype=np.int32)
    vcs = np.zeros((nr, nr, max_h), dtype=np.int8)
    for a in range(nr):
        for b in range(nr):
            _dor_path(a, b, dims, strides, wrap, dateline, nbr_link, coords, tie_sign, vc_rule, links[a, b], vcs[a, b])
    return links, vcs


@njit(cache=True, error_model="numpy")
def _dor_pairs_kernel(ra, rb, dims, strides, wrap, dateline, nbr_link, coords, max_h, tie_sign, vc_rule):
    """Router paths of the router pairs ``(ra[p], rb[p])`` only: int32[P, max_h], int8, lengths."""
    p_count = ra.shape[0]
    links = np.full((p_count, max(max_h, 1)), -1, dtype=np.int32)
    vcs = np.zeros((p_count, max(max_h, 1)), dtype=np.int8)
    length = np.zeros(p_count, dtype=np.int64)
    for p in range(p_count):
        length[p] = _dor_path(ra[p], rb[p], dims, strides, wrap, dateline, nbr_link, coords, tie_sign, vc_rule,
                              links[p], vcs[p])
    return links, vcs, length


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


def nca_up_variants(topology: Topology) -> int:
    """How many up-link choices NCA routing has on ``topology``: k**(levels-1) on a
    fat-tree (a port of k at each level below the top), 1 elsewhere."""
    if topology.family != "fattree":
        return 1
    return int(topology.params["k"]) ** (int(topology.params["levels"]) - 1)


def _nca(t: Topology, max_links: int, up_variant: int = -1) -> RouteTable:
    e = t.num_endpoints
    # (source vertex, destination vertex) -> link id, as sorted keys searched in the kernel;
    # of parallel links the last one wins, as in a dict built in link order
    v = np.int64(t.num_vertices)
    keys = t.link_src.astype(np.int64) * v + t.link_dst
    order = np.argsort(keys, kind="stable")
    inject = t.inject_link.astype(np.int64)
    eject = t.eject_link.astype(np.int64)
    if t.family == "fattree":
        shape = (t.params["k"], t.params["levels"], 0)
    elif t.family == "bigraph":
        shape = (t.params["m"], t.params["n"], 1)
    else:  # single switch
        shape = (0, 0, 2)
    if not -1 <= up_variant < nca_up_variants(t):
        raise ConfigError(f"{t.name}: up_variant {up_variant} out of range [-1, {nca_up_variants(t)})")
    links, length, bad = _nca_kernel(shape[2], shape[0], shape[1], e, inject, eject, keys[order], order.astype(np.int32),
                                     v, max_links, up_variant)
    if bad >= 0:
        raise ConfigError(f"{t.name}: not wired as its family's builder wires it (no nca path from endpoint "
                          f"{bad // e} to {bad % e}); build it with noc.topology")
    links = np.ascontiguousarray(links[:, :, : max(int(length.max()), 1)])
    return RouteTable("nca", links, np.zeros(links.shape, dtype=np.int8), length, 1)


@njit(cache=True)
def _link_id(keys, lids, v, src, dst):
    key = src * v + dst
    i = np.searchsorted(keys, key, side="right") - 1
    if i < 0 or keys[i] != key:
        return -1
    return lids[i]


@njit(cache=True)
def _nca_kernel(kind, p0, p1, e, inject, eject, keys, lids, v, max_links, up_variant):
    """Paths of every endpoint pair: kind 0 = fat-tree (p0 = k, p1 = levels), 1 = BiGraph
    (p0 = m, p1 = n), 2 = single switch. Returns (links, length, first bad pair or -1)."""
    links = np.full((e, e, max_links), -1, dtype=np.int32)
    length = np.zeros((e, e), dtype=np.int16)
    bad = -1
    if kind == 0:
        k, levels = p0, p1
        pw = np.ones(max(levels, 1) + 1, dtype=np.int64)
        for i in range(1, pw.shape[0]):
            pw[i] = pw[i - 1] * k
        per_level = pw[levels - 1]
    for a in range(e):
        for b in range(e):
            if a == b:
                continue
            h = 0
            links[a, b, h] = inject[a]
            h += 1
            if kind == 0:
                sa = a // k
                sb = b // k
                top = 0
                while top < levels - 1 and (sa // pw[top]) != (sb // pw[top]):
                    top += 1
                s = sa
                for lv in range(top):  # up: replace digit lv by the destination's (or the variant's) digit lv
                    digit = (b // pw[lv]) % k if up_variant < 0 else (up_variant // pw[lv]) % k
                    s_up = s + (digit - (s // pw[lv]) % k) * pw[lv]
                    lid = _link_id(keys, lids, v, e + lv * per_level + s, e + (lv + 1) * per_level + s_up)
                    if lid < 0 and bad < 0:
                        bad = a * e + b
                    links[a, b, h] = lid
                    h += 1
                    s = s_up
                for lv in range(top - 1, -1, -1):  # down: set digit lv to the destination leaf's
                    s_dn = s + ((sb // pw[lv]) % k - (s // pw[lv]) % k) * pw[lv]
                    lid = _link_id(keys, lids, v, e + (lv + 1) * per_level + s, e + lv * per_level + s_dn)
                    if lid < 0 and bad < 0:
                        bad = a * e + b
                    links[a, b, h] = lid
                    h += 1
                    s = s_dn
                if s != sb and bad < 0:
                    bad = a * e + b
            elif kind == 1:
                m, n = p0, p1
                la = a // n
                lb = b // n
                if la != lb:  # up through the upper switch chosen by the destination, then down
                    up = e + m + (b % m)
                    for src, dst in ((e + la, up), (up, e + lb)):
                        lid = _link_id(keys, lids, v, src, dst)
                        if lid < 0 and bad < 0:
                            bad = a * e + b
                        links[a, b, h] = lid
                        h += 1
            links[a, b, h] = eject[b]
            h += 1
            length[a, b] = h
    return links, length, bad


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


_DEP_BLOCK_ENTRIES = 1 << 22
DEPENDENCY_BYTES = 48  # peak bytes per channel dependency in check_deadlock_free (measured: 43 on switch:6000)


def dependency_bound(topology: Topology, num_vc_classes: int, max_links: int) -> int:
    """At most this many channel dependencies: a dependency is a turn (a link into a router,
    then a link out of it) in a pair of VC classes, and a step of some path in the table."""
    e, c = topology.num_endpoints, num_vc_classes
    into = np.bincount(topology.link_dst[topology.link_dst >= e] - e, minlength=topology.num_routers)
    out = np.bincount(topology.link_src[topology.link_src >= e] - e, minlength=topology.num_routers)
    turns = int(np.dot(into.astype(np.int64), out.astype(np.int64))) * c * c
    return min(turns, e * e * max(max_links - 1, 0))


def check_deadlock_size(topology: Topology, num_vc_classes: int, max_links: int) -> None:
    """A :class:`ConfigError` when :func:`check_deadlock_free` would need more than
    ``MAX_TABLE_BYTES`` (``max_links``, ``num_vc_classes``: those of the route table, e.g.
    from :func:`plan_route`)."""
    deps = dependency_bound(topology, num_vc_classes, max_links)
    need = deps * DEPENDENCY_BYTES
    if need > MAX_TABLE_BYTES:
        raise ConfigError(f"{topology.name}: the deadlock check would track up to {deps:,} channel dependencies, "
                          f"about {need / 2**30:,.1f} GiB (limit {MAX_TABLE_BYTES >> 30} GiB)")


def _sorted_unique(x: np.ndarray) -> np.ndarray:
    # np.unique's hash table (numpy >= 2.3) is several times slower than a sort on these
    x = np.sort(x)
    keep = np.ones(x.shape[0], dtype=np.bool_)
    keep[1:] = x[1:] != x[:-1]
    return x[keep]


def check_deadlock_free(topology: Topology, routes: RouteTable | PairRoutes, vcs: int | None = None) -> DeadlockReport:
    """Build the channel-dependency graph over (link, VC class) and prove it acyclic.

    ``routes``: a full table (every pair's path), or :class:`PairRoutes` (the graph of the
    paths some traffic uses: a cycle there is one that traffic can close). ``vcs`` is the
    number of virtual channels per port; the routing's VC classes must fit in it (with more
    VCs than classes, each class owns a share, which this check covers).
    """
    c = routes.num_vc_classes
    if vcs is not None and vcs < c:
        raise ConfigError(f"routing {routes.algorithm!r} needs {c} VC classes but vcs={vcs}")
    check_deadlock_size(topology, c, routes.max_links)
    n = topology.num_links * c
    h = routes.links.shape[-1]
    links = routes.links.reshape(-1, h)
    vcls = routes.vc_class.reshape(-1, h)
    edges = _turn_dependencies(topology, links, vcls, c)
    if edges is None:
        edges = _sorted_dependencies(links, vcls, c, n)
    src = (edges // n).astype(np.int64)
    dst = (edges % n).astype(np.int64)
    remaining = _kahn_remaining(src, dst, n)
    if not remaining.any():
        return DeadlockReport(True, (), n, int(edges.size))
    cycle = _find_cycle(src, dst, remaining)
    return DeadlockReport(False, tuple((int(ch // c), int(ch % c)) for ch in cycle), n, int(edges.size))


MAX_TURN_SLOTS = 1 << 28  # one byte per (channel, next link, next class): the bitmap of _turn_dependencies


def _turn_dependencies(topology: Topology, links: np.ndarray, vcls: np.ndarray, c: int) -> np.ndarray | None:
    """The sorted distinct dependencies ``a * n + b`` of the paths, in one pass over them: a
    flag per turn (a channel, then a link leaving the vertex it enters, in a class), read
    out in channel order then by the next link's id and class. None (the caller sorts) when
    the flags would exceed :data:`MAX_TURN_SLOTS` or a path's links do not join up."""
    v = topology.num_vertices
    out_deg = np.bincount(topology.link_src, minlength=v).astype(np.int64)
    slots_per_link = out_deg[topology.link_dst] * c * c  # channel (link, class) x (next link, class)
    if int(slots_per_link.sum()) > MAX_TURN_SLOTS:
        return None
    base = np.zeros(topology.num_links + 1, dtype=np.int64)
    np.cumsum(slots_per_link, out=base[1:])
    order = np.argsort(topology.link_src, kind="stable")  # out-links of each vertex, by link id
    pos = np.empty(topology.num_links, dtype=np.int64)
    first = np.zeros(v + 1, dtype=np.int64)
    np.cumsum(out_deg, out=first[1:])
    pos[order] = np.arange(topology.num_links) - first[topology.link_src[order]]
    ok, edges = _turn_flags(links, vcls, c, base, out_deg[topology.link_dst], pos, order, first,
                            topology.link_dst.astype(np.int64), topology.link_src.astype(np.int64))
    return edges if ok else None


@njit(cache=True)
def _turn_flags(links, vcls, c, base, deg_after, pos, order, first, link_dst, link_src):
    flags = np.zeros(base[-1], dtype=np.bool_)
    for p in range(links.shape[0]):
        for k in range(links.shape[1] - 1):
            la, lb = links[p, k], links[p, k + 1]
            if la < 0 or lb < 0:
                continue
            ca, cb = vcls[p, k], vcls[p, k + 1]
            if link_src[lb] != link_dst[la] or ca < 0 or ca >= c or cb < 0 or cb >= c:
                return False, np.zeros(0, dtype=np.int64)
            flags[base[la] + ca * deg_after[la] * c + pos[lb] * c + cb] = True
    count = 0
    for i in range(flags.shape[0]):
        count += flags[i]
    n = link_dst.shape[0] * c
    out = np.empty(count, dtype=np.int64)
    j = 0
    for la in range(link_dst.shape[0]):
        w = link_dst[la]
        d = deg_after[la]
        for ca in range(c):
            row = base[la] + ca * d * c
            for q in range(d):
                lb = order[first[w] + q]
                for cb in range(c):
                    if flags[row + q * c + cb]:
                        out[j] = (la * c + ca) * n + lb * c + cb
                        j += 1
    return True, out


def _sorted_dependencies(links: np.ndarray, vcls: np.ndarray, c: int, n: int) -> np.ndarray:
    """As :func:`_turn_dependencies`, by sorting every step's key."""
    # Over blocks of paths: the int64 temporaries take ~50 bytes per table entry, ten times
    # the table itself, while the distinct dependencies are few.
    h = links.shape[-1]
    rows = max(1, _DEP_BLOCK_ENTRIES // max(h - 1, 1))
    parts = []
    for s0 in range(0, links.shape[0], rows):
        lk, vc = links[s0 : s0 + rows], vcls[s0 : s0 + rows]
        a = lk[:, :-1].astype(np.int64) * c + vc[:, :-1]
        b = lk[:, 1:].astype(np.int64) * c + vc[:, 1:]
        ok = (lk[:, :-1] >= 0) & (lk[:, 1:] >= 0)
        parts.append(_sorted_unique(a[ok] * n + b[ok]))
    return _sorted_unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)


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
