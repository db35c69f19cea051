"""The throughput optimum of all-gather, reduce-scatter and all-reduce on a topology, exactly.

The bound (ForestColl, Zhao et al. 2024): an all-gather whose result is ``M`` bytes, each of
the N compute nodes holding ``M/N`` of it, takes at least

    (M / N) * max over cuts S of |S ∩ V_c| / B+(S)

cycles, where S is a set of vertices holding at least one compute node but not all of them,
V_c the compute nodes and B+(S) the bandwidth (bytes/cycle) of the links leaving S; and
pipelined spanning trees reach it, so it is the optimum. A reduce-scatter is an all-gather
run backwards (every link reversed, B+ becomes the bandwidth entering S); the all-reduce
without in-network reduction, done as reduce-scatter then all-gather, costs their sum.

Compute nodes are the collective's nodes (``Topology.num_nodes``): on a direct network a
node's NIs are merged into one compute vertex whose links to its router carry the sum of
its NIs' links, beside the router as a switch vertex; on a switched network every endpoint
is a compute vertex and every switch a switch vertex. That is the collective the NIC model
runs (a node's NIs share its memory: the vector is gathered once per node, not once per
NI). Treating every NI as a compute vertex instead asks each NI to receive the whole
vector, a different collective with a higher time.

How it is found: with x a candidate bandwidth per compute node, add a source joined to
every compute vertex by a link of capacity x; every cut S leaves B+(S) >= x |S ∩ V_c| if and
only if the maximum flow from the source to each compute vertex is N·x. The largest such x
is x* = min over S of B+(S) / |S ∩ V_c|, and the optimum is 1 / (N x*) cycles per byte of
M. It is found by Dinkelbach's iteration on that ratio: start from the ratio of a real cut,
run the N max-flows, and while some minimum cut falls short of N·x move x to that cut's
ratio (strictly smaller each time, over finitely many cuts). Capacities are the links'
``bytes_per_cycle`` as exact fractions (a float is a binary fraction), scaled to integers
for the max-flow, so every value is exact.

Symmetry cuts the max-flows from N per step to one per orbit: a permutation of the
vertices that maps compute vertices to compute vertices and every link to a link of the
same bandwidth (an automorphism) leaves the source's network unchanged, so sinks t and
σ(t) have the same maximum flow. Candidates (translations and reflections of a grid's
coordinates, rotations of a fully connected network) are each checked link by link
against the bandwidths before use; a candidate that fails (a mesh's translation, a link
made thinner) is dropped, so on any network the result is the general algorithm's. The
orbits' smallest members are the sinks flowed, in increasing order: the first sink with
the least flow is then the one the general algorithm picks, and its cut the same set.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import networkx as nx
import numpy as np

from noc.base.errors import SpecError
from noc.topology import Topology

SOURCE = "source"


@dataclass(frozen=True)
class Cut:
    """A vertex set S that attains the optimum.

    ``nodes``: the compute nodes inside S; ``vertices``: the topology's vertices inside S
    (the NIs of those nodes and the routers/switches in S); ``bytes_per_cycle``: the
    bandwidth leaving S (for a reduce-scatter's cut: entering S).
    """

    nodes: tuple[int, ...]
    vertices: tuple[int, ...]
    bytes_per_cycle: Fraction

    @property
    def ratio_cycles_per_byte(self) -> Fraction:
        """|S ∩ V_c| / B+(S)."""
        return Fraction(len(self.nodes)) / self.bytes_per_cycle


@dataclass(frozen=True)
class OptimalBound:
    """Exact optima, in cycles per byte of M (the all-gather's result, the all-reduce's vector)."""

    topology_name: str
    num_nodes: int
    all_gather_cycles_per_byte: Fraction
    reduce_scatter_cycles_per_byte: Fraction
    all_gather_cut: Cut | None
    reduce_scatter_cut: Cut | None

    @property
    def all_reduce_cycles_per_byte(self) -> Fraction:
        """Reduce-scatter then all-gather, without in-network reduction."""
        return self.all_gather_cycles_per_byte + self.reduce_scatter_cycles_per_byte

    def all_gather_cycles(self, size_bytes: int) -> Fraction:
        return self.all_gather_cycles_per_byte * size_bytes

    def reduce_scatter_cycles(self, size_bytes: int) -> Fraction:
        return self.reduce_scatter_cycles_per_byte * size_bytes

    def all_reduce_cycles(self, size_bytes: int) -> Fraction:
        return self.all_reduce_cycles_per_byte * size_bytes


@dataclass(frozen=True)
class CutGraph:
    """The topology as ForestColl's graph: vertex ``n < N`` is compute node n, vertex
    ``N + r`` is router/switch r; ``capacity[(a, b)]`` sums the links from a to b."""

    num_nodes: int
    num_routers: int
    capacity: dict[tuple[int, int], Fraction]

    def reversed(self) -> "CutGraph":
        return CutGraph(self.num_nodes, self.num_routers, {(b, a): c for (a, b), c in self.capacity.items()})


def cut_graph(topology: Topology) -> CutGraph:
    """Merge each node's NIs into its compute vertex (direct networks), drop nothing else."""
    e, n = topology.num_endpoints, topology.num_nodes
    node_of = topology.endpoint_node

    def vertex(v: int) -> int:
        return int(node_of[v]) if v < e else n + (v - e)

    cap: dict[tuple[int, int], Fraction] = {}
    for s, d, bw in zip(topology.link_src.tolist(), topology.link_dst.tolist(), topology.link_bytes_per_cycle.tolist()):
        a, b = vertex(s), vertex(d)
        if a != b:
            cap[a, b] = cap.get((a, b), Fraction(0)) + Fraction(bw)
    return CutGraph(n, topology.num_routers, cap)


def _outgoing(graph: CutGraph, inside: set[int]) -> Fraction:
    return sum((c for (a, b), c in graph.capacity.items() if a in inside and b not in inside), Fraction(0))


def _ratio(graph: CutGraph, inside: set[int]) -> Fraction:
    return _outgoing(graph, inside) / sum(1 for v in inside if v < graph.num_nodes)


def _candidate_permutations(topology: Topology) -> list[list[int]]:
    """Router permutations that may be automorphisms: on a grid (coordinates by strides) the
    +1 translation and the reflection of each dimension, on a fully connected network a
    rotation and a reflection of the indices. Nothing on switched networks."""
    if not topology.is_direct:
        return []
    r = topology.num_routers
    if topology.family == "fully_connected":
        idx = np.arange(r)
        return [((idx + 1) % r).tolist(), (r - 1 - idx).tolist()]
    dims = tuple(int(k) for k in topology.dims)
    coords = np.asarray(topology.router_coords)
    if not dims or coords.shape != (r, len(dims)) or math.prod(dims) != r:
        return []
    strides = np.asarray([math.prod(dims[:i]) for i in range(len(dims))], dtype=np.int64)
    if not np.array_equal(coords.astype(np.int64) @ strides, np.arange(r)):
        return []
    out = []
    for d, k in enumerate(dims):
        for moved in ((coords[:, d] + 1) % k, k - 1 - coords[:, d]):
            c = coords.astype(np.int64).copy()
            c[:, d] = moved
            out.append((c @ strides).tolist())
    return out


def automorphisms(topology: Topology, graph: CutGraph) -> list[list[int]]:
    """The candidate permutations (as maps of the cut graph's vertices) that are automorphisms
    of ``graph``: compute vertices to compute vertices, every link onto a link of equal
    bandwidth (links map injectively, so the map is onto the links too)."""
    n, cap = graph.num_nodes, graph.capacity
    found = []
    for perm in _candidate_permutations(topology):
        sigma = perm + [n + p for p in perm]  # direct network: node v is router v
        if sorted(sigma) != list(range(len(sigma))):
            continue
        if all(cap.get((sigma[a], sigma[b])) == c for (a, b), c in cap.items()):
            found.append(sigma)
    return found


def sink_representatives(num_nodes: int, perms: list[list[int]]) -> list[int]:
    """The smallest compute vertex of each orbit under the group ``perms`` generate, sorted."""
    parent = list(range(num_nodes))

    def root(v: int) -> int:
        while parent[v] != v:
            parent[v] = parent[parent[v]]
            v = parent[v]
        return v

    for sigma in perms:
        for v in range(num_nodes):
            a, b = root(v), root(sigma[v])
            if a != b:
                parent[max(a, b)] = min(a, b)  # the root stays the orbit's smallest member
    return [v for v in range(num_nodes) if root(v) == v]


def _shortest_cut(graph: CutGraph, x: Fraction, sinks: list[int] | None = None) -> tuple[Fraction, set[int]] | None:
    """The cut S minimising B+(S) - x|S ∩ V_c| over all sinks, if that is negative (x too large).

    S is the source side of the minimum cut nearest the sink (every vertex that cannot reach
    the sink in the residual graph): one set whatever maximum flow is found. ``sinks``: the
    compute vertices to flow to, increasing (default all; fewer only when the rest share an
    orbit with one of them). The flows run in scipy's Dinic on int32 capacities when the
    scaled capacities fit, else in networkx."""
    n = graph.num_nodes
    scale = math.lcm(x.denominator, *(c.denominator for c in graph.capacity.values()))
    caps = {ab: int(c * scale) for ab, c in graph.capacity.items()}
    src_cap = int(x * scale)
    full = n * src_cap
    sinks = range(n) if sinks is None else sinks
    if sum(caps.values()) + full < 2**31 - 1:
        cuts = _sink_cuts_scipy(n, n + graph.num_routers, caps, src_cap, sinks)
    else:
        cuts = _sink_cuts_networkx(n, n + graph.num_routers, caps, src_cap, sinks)
    best: tuple[int, set[int]] | None = None
    for value, side in cuts:
        if value < full and (best is None or value < best[0]):
            best = (value, side())
    if best is None:
        return None
    return _ratio(graph, best[1]), best[1]


def _sink_cuts_networkx(n: int, vertices: int, caps: dict, src_cap: int, sinks=None):
    """Per sink (default 0..n-1): (max-flow value from a source feeding every compute vertex, the source side)."""
    g = nx.DiGraph()
    g.add_nodes_from(range(vertices))
    for (a, b), c in caps.items():
        g.add_edge(a, b, capacity=c)
    for v in range(n):
        g.add_edge(SOURCE, v, capacity=src_cap)
    for sink in range(n) if sinks is None else sinks:
        value, (side, _) = nx.minimum_cut(g, SOURCE, sink)
        yield value, lambda side=side: set(side) - {SOURCE}


def _sink_cuts_scipy(n: int, vertices: int, caps: dict, src_cap: int, sinks=None):
    """As :func:`_sink_cuts_networkx`, with scipy's maximum flow (vertex ``vertices`` is the source)."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import breadth_first_order, maximum_flow

    src = vertices
    rows = [a for a, _ in caps] + [src] * n
    cols = [b for _, b in caps] + list(range(n))
    vals = list(caps.values()) + [src_cap] * n
    size = vertices + 1
    cap = csr_matrix((np.asarray(vals, dtype=np.int32), (rows, cols)), shape=(size, size))
    cap.sum_duplicates()
    for sink in range(n) if sinks is None else sinks:
        result = maximum_flow(cap, src, sink, method="dinic")

        def side(result=result, sink=sink) -> set[int]:
            residual = (cap - result.flow).tocsr()
            residual.data[residual.data < 0] = 0
            residual.eliminate_zeros()
            # the vertices that reach the sink in the residual graph: a search from it over reversed edges
            reach = breadth_first_order(residual.T.tocsr(), sink, directed=True, return_predecessors=False)
            return set(range(vertices)) - {int(v) for v in reach}

        yield int(result.flow_value), side


def max_cut_ratio(graph: CutGraph, sinks: list[int] | None = None) -> tuple[Fraction, set[int]]:
    """(x*, S): the least B+(S)/|S ∩ V_c| over cuts with a compute node inside and one outside.
    ``sinks``: one compute vertex per orbit of the graph's automorphisms (default: every one)."""
    n = graph.num_nodes
    everything = set(range(n + graph.num_routers))
    # start from real cuts: one node alone, or everything but one node
    leaving = [Fraction(0)] * len(everything)  # B+({v}) and B+(everything - {v}) = what enters v
    entering = [Fraction(0)] * len(everything)
    for (a, b), c in graph.capacity.items():
        leaving[a] += c
        entering[b] += c
    ratios = [leaving[v] for v in range(n)] + [entering[v] / (n - 1) for v in range(n)]
    first = ratios.index(min(ratios))  # the first of the least, as min() over the starts picks it
    inside = {first} if first < n else everything - {first - n}
    x = ratios[first]
    if x == 0:
        raise SpecError(f"the network is not connected: no link leaves the vertices {sorted(inside)} "
                        "(compute nodes first, then routers), so no collective can finish")
    while (better := _shortest_cut(graph, x, sinks)) is not None:
        new_x, new_inside = better
        assert new_x < x, "Dinkelbach's ratio must fall at every step"
        x, inside = new_x, new_inside
    return x, inside


def _as_cut(topology: Topology, graph: CutGraph, inside: set[int], *, entering: bool) -> Cut:
    n, e = graph.num_nodes, topology.num_endpoints
    nodes = tuple(sorted(v for v in inside if v < n))
    vertices = sorted(int(ep) for v in nodes for ep in topology.node_endpoints[v])
    vertices += sorted(e + (v - n) for v in inside if v >= n)
    g = graph.reversed() if entering else graph
    return Cut(nodes=nodes, vertices=tuple(vertices), bytes_per_cycle=_outgoing(g, inside))


def optimal_bound(topology: Topology, *, symmetry: bool = True) -> OptimalBound:
    """The exact throughput optimum of all-gather, reduce-scatter and all-reduce on ``topology``.
    ``symmetry=False`` flows to every sink (the general algorithm, same result, slower)."""
    graph = cut_graph(topology)
    n = graph.num_nodes
    if n < 2:
        return OptimalBound(topology.name, n, Fraction(0), Fraction(0), None, None)
    sinks = sink_representatives(n, automorphisms(topology, graph)) if symmetry else None
    x_ag, s_ag = max_cut_ratio(graph, sinks)
    x_rs, s_rs = max_cut_ratio(graph.reversed(), sinks)  # reversing every link keeps the automorphisms
    return OptimalBound(
        topology_name=topology.name,
        num_nodes=n,
        all_gather_cycles_per_byte=1 / (n * x_ag),
        reduce_scatter_cycles_per_byte=1 / (n * x_rs),
        all_gather_cut=_as_cut(topology, graph, s_ag, entering=False),
        reduce_scatter_cut=_as_cut(topology, graph, s_rs, entering=True),
    )
