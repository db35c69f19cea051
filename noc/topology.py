"""Network topologies as plain arrays.

A :class:`Topology` is one immutable value: endpoints (network interfaces, NIs), routers or
switches, and directed links, each with ``bytes_per_cycle`` and ``latency_cycles``.

Vertex numbering (used by every link array):

* endpoints are vertices ``0 .. E-1`` (endpoint id == vertex id);
* routers/switches are vertices ``E .. E+R-1`` (router ``r`` is vertex ``E + r``).

Each endpoint has exactly one injection link (endpoint -> its router) and one ejection link
(router -> endpoint). Links between routers carry a dimension and a direction on meshes
and tori (``link_dim``, ``link_sign``), which dimension-order routing and the dateline use.

Nodes (what a collective calls a participant): on a direct network (ring, mesh, torus,
hypercube, fully connected) a node is a router together with its ``concentration`` NIs —
MultiTree's "four NIs per node"; on a switched network (fat-tree, BiGraph, switch) every
endpoint is a node with one NI. ``endpoint_node`` maps NIs to nodes.

Distances and hop counts count router-to-router links only (a k×k torus has diameter
2⌊k/2⌋); injection and ejection links are not hops.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from numba import njit

from noc.base.config import finite_rule, is_finite_in
from noc.base.errors import SpecError

DEFAULT_LINK_BYTES_PER_CYCLE = 16.0  # 128-bit flits, one per cycle
DEFAULT_LINK_LATENCY_CYCLES = 1
# What a link may be (the config keys of every command check the same ranges): a finite
# bandwidth in [1e-6, 1e6] bytes/cycle (a bit per million cycles to a megabyte per cycle; no
# NaN, no infinity) and a latency of 1 to 100,000 cycles.
LINK_BYTES_PER_CYCLE_RANGE = (1e-6, 1e6)
MAX_LINK_LATENCY_CYCLES = 100_000

DIRECT_FAMILIES = ("ring", "mesh", "torus", "hypercube", "fully_connected")
SWITCHED_FAMILIES = ("fattree", "bigraph", "switch")

# Size limits, checked from the closed-form counts before a builder allocates anything
# (docs/noc.md, "Topology and route-table sizes").
#
# Every model routes its topology, and a route table (noc.routing) holds, per ordered pair of
# endpoints, H link ids (int32) and VC classes (int8) plus a length (int16): E*E*(5H + 2)
# bytes, H >= 2 (injection + ejection). MAX_TABLE_BYTES caps it; MAX_ENDPOINTS is then the
# most endpoints any table can hold (all paths 2 links long, a single switch). The router
# all-pairs distances (int32[R, R], used by summary(), diameter, multitree) get the same cap
# on R: 1.3 GiB at the limit. MAX_LINKS bounds the link arrays and their construction
# (~150 bytes per link at the peak, ~0.25 s per million links) and the all-pairs BFS
# (R x L steps: ~6 s for full:2047, the largest fully connected network allowed).
MAX_TABLE_BYTES = 4 << 30
MAX_ENDPOINTS = math.isqrt(MAX_TABLE_BYTES // 12)  # 18918
MAX_ROUTERS = MAX_ENDPOINTS
MAX_LINKS = 1 << 22  # 4,194,304 directed links
BUILD_BYTES_PER_LINK = 150


def route_table_bytes(num_endpoints: int, max_links: int) -> int:
    """Bytes of a route table over ``num_endpoints`` endpoints with paths of up to ``max_links`` links."""
    return num_endpoints * num_endpoints * (5 * max_links + 2)


class TopologySizeError(SpecError):
    """A topology too large to build or route; the message gives the estimate and the limit."""


def _fmt_count(n: int) -> str:
    if n < 10**15:
        return f"{n:,}"
    if n < 10**300:
        return f"{float(n):.3g}"
    return "more than 1e300"


def _fmt_gib(nbytes: int) -> str:
    if nbytes < 2**30 * 10**6:
        return f"{nbytes / 2**30:,.1f} GiB"
    if nbytes < 10**300:
        return f"{nbytes / 2**30:.3g} GiB"
    return "more than 1e300 GiB"


def _short(name: str) -> str:
    return name if len(name) <= 60 else name[:57] + "..."


def check_size(name: str, endpoints: int, routers: int, links: int) -> None:
    """A :class:`TopologySizeError` when a topology of these sizes (exact Python integers,
    computed from its parameters) exceeds :data:`MAX_ENDPOINTS`, :data:`MAX_ROUTERS` or
    :data:`MAX_LINKS`; builders call it before allocating anything."""
    name = _short(name)
    if endpoints > MAX_ENDPOINTS:
        raise TopologySizeError(
            f"{name} is too large: {_fmt_count(endpoints)} endpoints (limit {MAX_ENDPOINTS:,}: a route table "
            f"for them, even with 2-link paths, needs {_fmt_gib(route_table_bytes(endpoints, 2))}, limit "
            f"{MAX_TABLE_BYTES >> 30} GiB)")
    if routers > MAX_ROUTERS:
        raise TopologySizeError(
            f"{name} is too large: {_fmt_count(routers)} routers (limit {MAX_ROUTERS:,}: their all-pairs "
            f"distances alone take {_fmt_gib(4 * routers * routers)})")
    if links > MAX_LINKS:
        raise TopologySizeError(
            f"{name} is too large: {_fmt_count(links)} directed links (limit {MAX_LINKS:,}: about "
            f"{BUILD_BYTES_PER_LINK} bytes each to build, {_fmt_gib(BUILD_BYTES_PER_LINK * links)} here, and "
            f"all-pairs routing reads every link once per router)")


def _capped_pow(base: int, exp: int) -> int:
    """``base ** exp``, or 2**1100 (beyond every limit) when that would be a huge number to compute."""
    if exp * base.bit_length() > 1100:
        return 1 << 1100
    return base**exp


SPEC_FORMS = (
    "ring:N[:cC]",
    "mesh:AxB[xC...][:cC]",
    "torus:AxB[xC...][:cC]",
    "hypercube:dD[:cC]",
    "full:N[:cC]",
    "fattree:kK:lL",
    "bigraph:MxN",
    "switch:N",
)


# --------------------------------------------------------------------------------------
# The value
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Topology:
    """A network: endpoints, routers and directed links, as numpy arrays.

    Build one with a builder (:func:`torus`, :func:`fat_tree`, ...) or :func:`parse_spec`.
    """

    name: str
    family: str
    num_endpoints: int
    num_routers: int
    link_src: np.ndarray  # int32[L], vertex id
    link_dst: np.ndarray  # int32[L], vertex id
    link_bytes_per_cycle: np.ndarray  # float64[L]
    link_latency_cycles: np.ndarray  # int32[L]
    link_dim: np.ndarray  # int16[L]: dimension on meshes/tori/hypercubes, -1 otherwise
    link_sign: np.ndarray  # int8[L]: +1/-1 along link_dim, 0 otherwise
    endpoint_router: np.ndarray  # int32[E]: router index (not vertex) each NI attaches to
    router_coords: np.ndarray  # int32[R, D]: grid coordinates, or (level, index) for trees
    dims: tuple[int, ...] = ()
    wrap: bool = False
    concentration: int = 1
    params: dict = field(default_factory=dict)

    # ---- sizes and roles -----------------------------------------------------------
    @property
    def num_links(self) -> int:
        return int(self.link_src.shape[0])

    @property
    def num_vertices(self) -> int:
        return self.num_endpoints + self.num_routers

    @property
    def is_direct(self) -> bool:
        """True when nodes are routers with NIs (direct network), False for switched networks."""
        return self.family in DIRECT_FAMILIES

    @property
    def nis_per_node(self) -> int:
        return self.concentration if self.is_direct else 1

    @property
    def num_nodes(self) -> int:
        return self.num_routers if self.is_direct else self.num_endpoints

    @cached_property
    def endpoint_node(self) -> np.ndarray:
        """int32[E]: the node each NI belongs to."""
        if self.is_direct:
            return self.endpoint_router.copy()
        return np.arange(self.num_endpoints, dtype=np.int32)

    @cached_property
    def node_endpoints(self) -> np.ndarray:
        """int32[num_nodes, nis_per_node]: the NIs of each node."""
        order = np.argsort(self.endpoint_node, kind="stable")
        return order.reshape(self.num_nodes, self.nis_per_node).astype(np.int32)

    def router_vertex(self, router: int) -> int:
        return self.num_endpoints + int(router)

    @cached_property
    def is_router_link(self) -> np.ndarray:
        """bool[L]: link between two routers (a hop)."""
        e = self.num_endpoints
        return (self.link_src >= e) & (self.link_dst >= e)

    @cached_property
    def inject_link(self) -> np.ndarray:
        """int32[E]: the link from each endpoint into the network."""
        out = np.full(self.num_endpoints, -1, dtype=np.int32)
        src_is_ep = self.link_src < self.num_endpoints
        out[self.link_src[src_is_ep]] = np.nonzero(src_is_ep)[0]
        return out

    @cached_property
    def eject_link(self) -> np.ndarray:
        """int32[E]: the link from the network into each endpoint."""
        out = np.full(self.num_endpoints, -1, dtype=np.int32)
        dst_is_ep = self.link_dst < self.num_endpoints
        out[self.link_dst[dst_is_ep]] = np.nonzero(dst_is_ep)[0]
        return out

    @cached_property
    def router_out_links(self) -> tuple[np.ndarray, np.ndarray]:
        """CSR (offsets[R+1], link ids) of router-to-router links leaving each router, by link id."""
        links = np.nonzero(self.is_router_link)[0].astype(np.int32)
        src_r = self.link_src[links] - self.num_endpoints
        order = np.argsort(src_r, kind="stable")
        links = links[order]
        counts = np.bincount(src_r, minlength=self.num_routers)
        offsets = np.zeros(self.num_routers + 1, dtype=np.int32)
        np.cumsum(counts, out=offsets[1:])
        return offsets, links

    # ---- properties ----------------------------------------------------------------
    @cached_property
    def router_distances(self) -> np.ndarray:
        """int32[R, R]: shortest router-to-router hop counts (BFS); -1 when unreachable."""
        offsets, links = self.router_out_links
        nbr = (self.link_dst[links] - self.num_endpoints).astype(np.int32)
        return _all_pairs_bfs(offsets, nbr, self.num_routers)

    @cached_property
    def endpoint_distances(self) -> np.ndarray:
        """int32[E, E]: router hops between endpoints (0 on the diagonal)."""
        r = self.endpoint_router
        return self.router_distances[np.ix_(r, r)]

    @property
    def diameter(self) -> int:
        return int(self.endpoint_distances.max())

    @property
    def average_hops(self) -> float:
        """Mean router hops over ordered pairs of distinct endpoints."""
        n = self.num_endpoints
        if n < 2:
            return 0.0
        return float(self.endpoint_distances.sum()) / (n * (n - 1))

    @cached_property
    def router_degree(self) -> np.ndarray:
        """int32[R]: router-to-router links leaving each router."""
        offsets, _ = self.router_out_links
        return np.diff(offsets).astype(np.int32)

    @property
    def bisection_links(self) -> int:
        """Directed links crossing the family's natural bisection, in one direction.

        The cut is the family's standard one (half the grid along its first largest
        dimension, half the leaf subtrees, half of each BiGraph layer, ...); the count is
        made over the link arrays, so it checks the wiring as well as the formula.
        """
        side = self.bisection_partition()
        src_side = side[self.link_src]
        dst_side = side[self.link_dst]
        return int(np.count_nonzero((src_side == 0) & (dst_side == 1)))

    def bisection_partition(self) -> np.ndarray:
        """int8[V]: 0/1 side of each vertex under the family's natural bisection."""
        e = self.num_endpoints
        r_side = np.zeros(self.num_routers, dtype=np.int8)
        if self.family in ("ring", "mesh", "torus", "hypercube"):
            d = int(np.argmax(self.dims))
            r_side[:] = self.router_coords[:, d] >= (self.dims[d] + 1) // 2
        elif self.family == "fully_connected":
            r_side[self.num_routers // 2 :] = 1
        elif self.family == "fattree":
            # Split by the endpoints' top base-k digit. Switches below the top keep that
            # digit on every up-link except the last level's, and the top level is split by
            # the same digit of its index, so exactly the top-level links cross.
            k, levels = self.params["k"], self.params["levels"]
            idx = self.router_coords[:, 1]
            r_side[:] = (idx // k ** max(levels - 2, 0)) % k >= (k + 1) // 2
        elif self.family == "bigraph":
            m = self.params["m"]
            idx = self.router_coords[:, 1]
            r_side[:] = idx >= (m + 1) // 2
        side = np.zeros(self.num_vertices, dtype=np.int8)
        side[e:] = r_side
        if self.num_routers == 1:  # a single switch: half the endpoints on each side
            side[e // 2 : e] = 1
        else:
            side[:e] = r_side[self.endpoint_router]
        return side

    def summary(self) -> dict:
        """Plain-data description (what ``hw-models topology describe`` prints)."""
        deg = self.router_degree
        return {
            "name": self.name,
            "family": self.family,
            "endpoints": self.num_endpoints,
            "routers": self.num_routers,
            "nodes": self.num_nodes,
            "nis_per_node": self.nis_per_node,
            "links": self.num_links,
            "router_links": int(np.count_nonzero(self.is_router_link)),
            "degree_min": int(deg.min()) if deg.size else 0,
            "degree_max": int(deg.max()) if deg.size else 0,
            "diameter": self.diameter,
            "average_hops": round(self.average_hops, 4),
            "bisection_links": self.bisection_links,
            "bisection_bytes_per_cycle": float(self.bisection_links * np.min(self.link_bytes_per_cycle)),
        }

    # ---- identity and serialisation -------------------------------------------------
    def _key(self) -> tuple:
        return (
            self.name,
            self.family,
            self.num_endpoints,
            self.num_routers,
            self.link_src.tobytes(),
            self.link_dst.tobytes(),
            self.link_bytes_per_cycle.tobytes(),
            self.link_latency_cycles.tobytes(),
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Topology):
            return NotImplemented
        return self._key() == other._key() and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash(self._key())

    def to_dict(self) -> dict:
        return {
            "format": "hw-models/topology/1",
            "name": self.name,
            "family": self.family,
            "num_endpoints": self.num_endpoints,
            "num_routers": self.num_routers,
            "dims": list(self.dims),
            "wrap": self.wrap,
            "concentration": self.concentration,
            "params": dict(self.params),
            "endpoint_router": self.endpoint_router.tolist(),
            "router_coords": self.router_coords.tolist(),
            "links": {
                "src": self.link_src.tolist(),
                "dst": self.link_dst.tolist(),
                "bytes_per_cycle": self.link_bytes_per_cycle.tolist(),
                "latency_cycles": self.link_latency_cycles.tolist(),
                "dim": self.link_dim.tolist(),
                "sign": self.link_sign.tolist(),
            },
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, d: dict) -> "Topology":
        """The topology :meth:`to_dict` wrote; a :class:`SpecError` for anything else (a link
        whose bandwidth or latency is out of range included)."""
        if not isinstance(d, dict) or d.get("format") != "hw-models/topology/1":
            fmt = d.get("format") if isinstance(d, dict) else None
            raise SpecError(f"not a hw-models topology (format={fmt!r}, expected 'hw-models/topology/1')")
        try:
            links = d["links"]
            ndim = max(1, len(d["router_coords"][0])) if d["router_coords"] else 1
            bpc = np.asarray(links["bytes_per_cycle"], dtype=np.float64)
            lat = np.asarray(links["latency_cycles"], dtype=np.int64)
            lo, hi = LINK_BYTES_PER_CYCLE_RANGE
            if bpc.size and not (np.isfinite(bpc).all() and lo <= bpc.min() and bpc.max() <= hi):
                raise SpecError(f"a topology's links.bytes_per_cycle must each be {finite_rule(lo, hi)}")
            if lat.size and not (1 <= lat.min() and lat.max() <= MAX_LINK_LATENCY_CYCLES):
                raise SpecError(f"a topology's links.latency_cycles must each be an integer in "
                                f"[1, {MAX_LINK_LATENCY_CYCLES}]")
            return cls(
                name=str(d["name"]),
                family=str(d["family"]),
                num_endpoints=int(d["num_endpoints"]),
                num_routers=int(d["num_routers"]),
                link_src=np.asarray(links["src"], dtype=np.int32),
                link_dst=np.asarray(links["dst"], dtype=np.int32),
                link_bytes_per_cycle=bpc,
                link_latency_cycles=lat.astype(np.int32),
                link_dim=np.asarray(links["dim"], dtype=np.int16),
                link_sign=np.asarray(links["sign"], dtype=np.int8),
                endpoint_router=np.asarray(d["endpoint_router"], dtype=np.int32),
                router_coords=np.asarray(d["router_coords"], dtype=np.int32).reshape(int(d["num_routers"]), ndim),
                dims=tuple(int(x) for x in d["dims"]),
                wrap=bool(d["wrap"]),
                concentration=int(d["concentration"]),
                params=dict(d["params"]),
            )
        except SpecError:
            raise
        except KeyError as exc:
            raise SpecError(f"not a complete hw-models topology: no key {exc}") from None
        except (TypeError, ValueError, IndexError, OverflowError) as exc:
            raise SpecError(f"not a valid hw-models topology: {exc}") from None

    @classmethod
    def from_json(cls, text: str) -> "Topology":
        try:
            d = json.loads(text)
        except (TypeError, ValueError) as exc:
            raise SpecError(f"not a hw-models topology: not JSON ({exc})") from None
        return cls.from_dict(d)

    def with_links(self, *, bytes_per_cycle: float | None = None, latency_cycles: int | None = None) -> "Topology":
        """A copy whose links all have the given bandwidth and/or latency."""
        bpc = self.link_bytes_per_cycle if bytes_per_cycle is None else _check_bpc(bytes_per_cycle, self.num_links)
        lat = self.link_latency_cycles if latency_cycles is None else _check_lat(latency_cycles, self.num_links)
        return _replace(self, link_bytes_per_cycle=bpc, link_latency_cycles=lat)

    def with_latencies(self, *, router_cycles: int, inject_cycles: int, eject_cycles: int) -> "Topology":
        """A copy whose router-to-router links, injection links and ejection links take the
        given latencies (e.g. BookSim2's: 2-cycle torus channels, 1-cycle NI channels)."""
        for value in (router_cycles, inject_cycles, eject_cycles):
            _check_lat(value, 1)
        lat = np.where(self.is_router_link, router_cycles,
                       np.where(self.link_src < self.num_endpoints, inject_cycles, eject_cycles))
        return _replace(self, link_latency_cycles=lat.astype(self.link_latency_cycles.dtype))

    def __repr__(self) -> str:
        return (
            f"Topology({self.name!r}, endpoints={self.num_endpoints}, routers={self.num_routers}, "
            f"links={self.num_links})"
        )


def _replace(t: Topology, **changes) -> Topology:
    values = {f: getattr(t, f) for f in t.__dataclass_fields__}
    values.update(changes)
    return Topology(**values)


# --------------------------------------------------------------------------------------
# Builders
# --------------------------------------------------------------------------------------


class _LinkList:
    def __init__(self) -> None:
        self.src: list[int] = []
        self.dst: list[int] = []
        self.dim: list[int] = []
        self.sign: list[int] = []

    def add(self, s: int, d: int, dim: int = -1, sign: int = 0) -> None:
        self.src.append(s)
        self.dst.append(d)
        self.dim.append(dim)
        self.sign.append(sign)


def _check_bpc(value: float, n: int) -> np.ndarray:
    if not is_finite_in(value, *LINK_BYTES_PER_CYCLE_RANGE):
        raise SpecError(f"link_bytes_per_cycle must be {finite_rule(*LINK_BYTES_PER_CYCLE_RANGE)}, got {value!r}")
    return np.full(n, float(value), dtype=np.float64)


def _check_lat(value: int, n: int) -> np.ndarray:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
            or not 1 <= value <= MAX_LINK_LATENCY_CYCLES:
        raise SpecError(f"link_latency_cycles must be an integer in [1, {MAX_LINK_LATENCY_CYCLES}], got {value!r}")
    return np.full(n, int(value), dtype=np.int32)


def _check_int(name: str, value, lo: int, hi: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise SpecError(f"{name} must be an integer, got {value!r}")
    if value < lo or (hi is not None and value > hi):
        allowed = f">= {lo}" if hi is None else f"in {lo}..{hi}"
        raise SpecError(f"{name} must be {allowed}, got {value}")
    return int(value)


def _finish(
    name: str,
    family: str,
    links: _LinkList,
    num_endpoints: int,
    num_routers: int,
    endpoint_router: np.ndarray,
    router_coords: np.ndarray,
    bytes_per_cycle: float,
    latency_cycles: int,
    *,
    dims: tuple[int, ...] = (),
    wrap: bool = False,
    concentration: int = 1,
    params: dict | None = None,
) -> Topology:
    # Endpoint injection/ejection links come first, in endpoint order, then the router links.
    e = num_endpoints
    src = [int(i) for i in range(e)] + [e + int(endpoint_router[i]) for i in range(e)]
    dst = [e + int(endpoint_router[i]) for i in range(e)] + [int(i) for i in range(e)]
    dim = [-1] * (2 * e)
    sign = [0] * (2 * e)
    src += links.src
    dst += links.dst
    dim += links.dim
    sign += links.sign
    n = len(src)
    return Topology(
        name=name,
        family=family,
        num_endpoints=e,
        num_routers=num_routers,
        link_src=np.asarray(src, dtype=np.int32),
        link_dst=np.asarray(dst, dtype=np.int32),
        link_bytes_per_cycle=_check_bpc(bytes_per_cycle, n),
        link_latency_cycles=_check_lat(latency_cycles, n),
        link_dim=np.asarray(dim, dtype=np.int16),
        link_sign=np.asarray(sign, dtype=np.int8),
        endpoint_router=np.asarray(endpoint_router, dtype=np.int32),
        router_coords=np.asarray(router_coords, dtype=np.int32),
        dims=tuple(dims),
        wrap=wrap,
        concentration=concentration,
        params=params or {},
    )


def _grid(
    family: str,
    dims,
    concentration: int,
    wrap: bool,
    bytes_per_cycle: float,
    latency_cycles: int,
    name: str | None = None,
) -> Topology:
    dims = tuple(dims) if not isinstance(dims, int) else (dims,)
    if len(dims) == 0:
        raise SpecError(f"{family} needs at least one dimension")
    if len(dims) > MAX_ROUTERS.bit_length():  # every dimension is >= 2: refuse before multiplying them out
        raise TopologySizeError(f"{family} with {len(dims):,} dimensions is too large: at least 2**{len(dims):,} "
                                f"routers (limit {MAX_ROUTERS:,})")
    for i, k in enumerate(dims):
        _check_int(f"{family} dimension {i} size", k, 2)
    c = _check_int("concentration c", concentration, 1)
    dims_s = "x".join(str(k) for k in dims)
    if name is None:
        name = f"{family}:{dims_s}" + (f":c{c}" if c > 1 else "")
    nr_exact = math.prod(dims)
    # +/- links in every dimension, on a mesh k-1 of every k routers along it
    router_links = sum(2 * nr_exact if wrap else 2 * (nr_exact // k) * (k - 1) for k in dims)
    check_size(name, nr_exact * c, nr_exact, 2 * nr_exact * c + router_links)
    nr = int(np.prod(dims))
    strides = [int(np.prod(dims[:i])) for i in range(len(dims))]
    coords = np.zeros((nr, len(dims)), dtype=np.int32)
    for d, (k, s) in enumerate(zip(dims, strides)):
        coords[:, d] = (np.arange(nr) // s) % k
    e = nr * c
    links = _LinkList()
    for r in range(nr):
        for d, (k, s) in enumerate(zip(dims, strides)):
            x = coords[r, d]
            for sign in (+1, -1):
                nx = x + sign
                if not (0 <= nx < k):
                    if not wrap:
                        continue
                    nx %= k
                links.add(e + r, e + r + (nx - x) * s, d, sign)
    endpoint_router = np.repeat(np.arange(nr), c)
    return _finish(
        name, family, links, e, nr, endpoint_router, coords, bytes_per_cycle, latency_cycles,
        dims=dims, wrap=wrap, concentration=c, params={"dims": list(dims), "c": c},
    )


def torus(dims, c: int = 1, *, link_bytes_per_cycle: float = DEFAULT_LINK_BYTES_PER_CYCLE,
          link_latency_cycles: int = DEFAULT_LINK_LATENCY_CYCLES) -> Topology:
    """k-ary n-cube: a torus with ``dims`` routers per dimension and ``c`` NIs per router.

    A dimension of size 2 has two parallel links each way (the + and the wrap-around
    neighbour coincide), as in BookSim's k-ary n-cube.
    """
    return _grid("torus", dims, c, True, link_bytes_per_cycle, link_latency_cycles)


def mesh(dims, c: int = 1, *, link_bytes_per_cycle: float = DEFAULT_LINK_BYTES_PER_CYCLE,
         link_latency_cycles: int = DEFAULT_LINK_LATENCY_CYCLES) -> Topology:
    """k-ary n-mesh with ``c`` NIs per router."""
    return _grid("mesh", dims, c, False, link_bytes_per_cycle, link_latency_cycles)


def ring(n: int, c: int = 1, *, link_bytes_per_cycle: float = DEFAULT_LINK_BYTES_PER_CYCLE,
         link_latency_cycles: int = DEFAULT_LINK_LATENCY_CYCLES) -> Topology:
    """Bidirectional ring of ``n`` routers (a 1-D torus)."""
    _check_int("ring size n", n, 2)
    t = _grid("ring", (n,), c, True, link_bytes_per_cycle, link_latency_cycles,
              name=f"ring:{n}" + (f":c{c}" if c > 1 else ""))
    return t


def hypercube(d: int, c: int = 1, *, link_bytes_per_cycle: float = DEFAULT_LINK_BYTES_PER_CYCLE,
              link_latency_cycles: int = DEFAULT_LINK_LATENCY_CYCLES) -> Topology:
    """Binary ``d``-cube: 2**d routers, one link each way per dimension."""
    _check_int("hypercube dimension d", d, 1)
    c = _check_int("concentration c", c, 1)
    name = f"hypercube:d{d}" + (f":c{c}" if c > 1 else "")
    nr = _capped_pow(2, d)
    check_size(name, nr * c, nr, 2 * nr * c + d * nr)  # before building the d-tuple of dimensions
    return _grid("hypercube", (2,) * d, c, False, link_bytes_per_cycle, link_latency_cycles, name=name)


def fully_connected(n: int, c: int = 1, *, link_bytes_per_cycle: float = DEFAULT_LINK_BYTES_PER_CYCLE,
                    link_latency_cycles: int = DEFAULT_LINK_LATENCY_CYCLES) -> Topology:
    """``n`` routers with a link each way between every pair."""
    _check_int("fully connected size n", n, 2)
    c = _check_int("concentration c", c, 1)
    name = f"full:{n}" + (f":c{c}" if c > 1 else "")
    check_size(name, n * c, n, 2 * n * c + n * (n - 1))
    e = n * c
    links = _LinkList()
    for a in range(n):
        for b in range(n):
            if a != b:
                links.add(e + a, e + b)
    coords = np.stack([np.zeros(n), np.arange(n)], axis=1)
    return _finish(
        name, "fully_connected", links, e, n,
        np.repeat(np.arange(n), c), coords, link_bytes_per_cycle, link_latency_cycles,
        concentration=c, params={"n": n, "c": c},
    )


def switch(n: int, *, link_bytes_per_cycle: float = DEFAULT_LINK_BYTES_PER_CYCLE,
           link_latency_cycles: int = DEFAULT_LINK_LATENCY_CYCLES) -> Topology:
    """A single switch with ``n`` endpoints (star)."""
    _check_int("switch endpoints n", n, 2)
    check_size(f"switch:{n}", n, 1, 2 * n)
    return _finish(
        f"switch:{n}", "switch", _LinkList(), n, 1, np.zeros(n, dtype=np.int32),
        np.zeros((1, 2)), link_bytes_per_cycle, link_latency_cycles, params={"n": n},
    )


def fat_tree(k: int, levels: int, *, link_bytes_per_cycle: float = DEFAULT_LINK_BYTES_PER_CYCLE,
             link_latency_cycles: int = DEFAULT_LINK_LATENCY_CYCLES) -> Topology:
    """k-ary n-tree (Petrini & Vanneschi): ``levels`` levels of k**(levels-1) switches, k**levels endpoints.

    Switch ``s`` at level ``l`` (0 = leaves) connects up to every switch at level ``l+1``
    whose index differs from ``s`` only in base-k digit ``l``. Full bisection bandwidth.
    Router index = level * k**(levels-1) + s; ``router_coords`` = (level, s).
    """
    _check_int("fat-tree arity k", k, 2)
    _check_int("fat-tree levels", levels, 1)
    e_exact = _capped_pow(k, levels)
    check_size(f"fattree:k{k}:l{levels}", e_exact, levels * (e_exact // k), 2 * e_exact + 2 * (levels - 1) * e_exact)
    per_level = k ** (levels - 1)
    e = k**levels
    nr = levels * per_level
    links = _LinkList()
    for level in range(levels - 1):
        for s in range(per_level):
            digit = (s // k**level) % k
            for v in range(k):
                s_up = s + (v - digit) * k**level
                lo = e + level * per_level + s
                hi = e + (level + 1) * per_level + s_up
                links.add(lo, hi, level, +1)
                links.add(hi, lo, level, -1)
    coords = np.array([(lv, s) for lv in range(levels) for s in range(per_level)], dtype=np.int32)
    return _finish(
        f"fattree:k{k}:l{levels}", "fattree", links, e, nr, np.arange(e) // k, coords,
        link_bytes_per_cycle, link_latency_cycles, params={"k": k, "levels": levels},
    )


def bigraph(m: int, n: int, *, link_bytes_per_cycle: float = DEFAULT_LINK_BYTES_PER_CYCLE,
            link_latency_cycles: int = DEFAULT_LINK_LATENCY_CYCLES) -> Topology:
    """BiGraph: two layers of ``m`` switches, every lower switch linked to every upper one.

    Each lower switch hosts ``n`` endpoints (m*n in all; ``bigraph(4, 16)`` has 64).
    Routers 0..m-1 are the lower layer, m..2m-1 the upper; coords = (layer, index).
    """
    _check_int("bigraph switches per layer m", m, 1)
    _check_int("bigraph endpoints per switch n", n, 1)
    check_size(f"bigraph:{m}x{n}", m * n, 2 * m, 2 * m * n + 2 * m * m)
    e = m * n
    links = _LinkList()
    for lo in range(m):
        for up in range(m):
            links.add(e + lo, e + m + up, 0, +1)
            links.add(e + m + up, e + lo, 0, -1)
    coords = np.array([(0, i) for i in range(m)] + [(1, i) for i in range(m)], dtype=np.int32)
    return _finish(
        f"bigraph:{m}x{n}", "bigraph", links, e, 2 * m, np.arange(e) // n, coords,
        link_bytes_per_cycle, link_latency_cycles, params={"m": m, "n": n},
    )


# --------------------------------------------------------------------------------------
# Spec strings
# --------------------------------------------------------------------------------------

_SPEC_HELP = "accepted forms: " + ", ".join(SPEC_FORMS)


def _digits(text: str) -> bool:
    """Whether ``text`` is a non-empty run of ASCII digits 0-9 (``str.isdigit`` also takes '²' and '①',
    which ``int`` refuses, and ``int`` takes '４')."""
    return bool(re.fullmatch(r"[0-9]+", text))


def _spec_error(spec: str, why: str) -> SpecError:
    return SpecError(f"bad topology spec {spec!r}: {why}; {_SPEC_HELP}")


def _parse_c(spec: str, parts: list[str]) -> int:
    if not parts:
        return 1
    if len(parts) > 1 or not re.fullmatch(r"c[0-9]+", parts[0]):
        raise _spec_error(spec, f"unexpected {':'.join(parts)!r} (the only option is the concentration, e.g. ':c4')")
    return int(parts[0][1:])


def parse_spec(spec: str, **link_kwargs) -> Topology:
    """Build a topology from a spec string such as ``torus:4x4``, ``mesh:8x8:c4``, ``fattree:k8:l2``.

    ``link_kwargs`` (``link_bytes_per_cycle``, ``link_latency_cycles``) are passed to the builder.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise _spec_error(str(spec), "empty spec")
    if re.search(r"[0-9]{19}", spec):  # also keeps int() away from its 4300-digit limit
        raise _spec_error(spec, "a number with more than 18 digits")
    if not spec.isascii():  # int() and str.isdigit take digits such as '²', '①', '４' that no spec means
        bad = next(ch for ch in spec if not ch.isascii())
        raise _spec_error(spec, f"{bad!r} is not an ASCII character (sizes are ASCII digits 0-9)")
    parts = spec.strip().lower().split(":")
    family, args = parts[0], parts[1:]
    try:
        if family in ("torus", "mesh"):
            if not args or not re.fullmatch(r"[0-9]+(x[0-9]+)*", args[0]):
                raise _spec_error(spec, f"{family} needs sizes like '4x4'")
            dims = tuple(int(x) for x in args[0].split("x"))
            builder = torus if family == "torus" else mesh
            return builder(dims, _parse_c(spec, args[1:]), **link_kwargs)
        if family == "ring":
            if not args or not _digits(args[0]):
                raise _spec_error(spec, "ring needs a size like 'ring:8'")
            return ring(int(args[0]), _parse_c(spec, args[1:]), **link_kwargs)
        if family == "hypercube":
            if not args or not re.fullmatch(r"d?[0-9]+", args[0]):
                raise _spec_error(spec, "hypercube needs a dimension like 'hypercube:d4'")
            return hypercube(int(args[0].lstrip("d")), _parse_c(spec, args[1:]), **link_kwargs)
        if family in ("full", "fully_connected", "fullyconnected"):
            if not args or not _digits(args[0]):
                raise _spec_error(spec, "full needs a size like 'full:8'")
            return fully_connected(int(args[0]), _parse_c(spec, args[1:]), **link_kwargs)
        if family in ("fattree", "fat_tree", "fat-tree"):
            if len(args) != 2 or not re.fullmatch(r"k[0-9]+", args[0]) or not re.fullmatch(r"l[0-9]+", args[1]):
                raise _spec_error(spec, "fattree needs arity and levels like 'fattree:k8:l2'")
            return fat_tree(int(args[0][1:]), int(args[1][1:]), **link_kwargs)
        if family == "bigraph":
            if len(args) != 1 or not re.fullmatch(r"[0-9]+x[0-9]+", args[0]):
                raise _spec_error(spec, "bigraph needs 'MxN' (M switches per layer, N endpoints per switch)")
            m, n = (int(x) for x in args[0].split("x"))
            return bigraph(m, n, **link_kwargs)
        if family in ("switch", "star"):
            if len(args) != 1 or not _digits(args[0]):
                raise _spec_error(spec, "switch needs an endpoint count like 'switch:16'")
            return switch(int(args[0]), **link_kwargs)
    except SpecError as exc:
        if isinstance(exc, TopologySizeError) or str(exc).startswith("bad topology spec"):
            raise
        raise _spec_error(spec, str(exc)) from None
    raise _spec_error(spec, f"unknown family {family!r}")


def with_concentration(topology: Topology, nis: int) -> Topology:
    """The same direct network with ``nis`` NIs per node (rebuilt from its spec)."""
    if not topology.is_direct:
        if nis != 1:
            raise SpecError(f"{topology.name} is a switched network: every endpoint is a node with 1 NI, got nis={nis}")
        return topology
    base = topology.name.split(":c")[0]
    spec = base if nis == 1 else f"{base}:c{nis}"
    t = parse_spec(spec)
    return t.with_links(
        bytes_per_cycle=float(topology.link_bytes_per_cycle[0]),
        latency_cycles=int(topology.link_latency_cycles[0]),
    )


# --------------------------------------------------------------------------------------
# Kernels
# --------------------------------------------------------------------------------------


@njit(cache=True)
def _all_pairs_bfs(offsets, nbr, n):
    dist = np.full((n, n), -1, dtype=np.int32)
    queue = np.empty(n, dtype=np.int32)
    for s in range(n):
        dist[s, s] = 0
        head = 0
        tail = 0
        queue[tail] = s
        tail += 1
        while head < tail:
            u = queue[head]
            head += 1
            for i in range(offsets[u], offsets[u + 1]):
                v = nbr[i]
                if dist[s, v] < 0:
                    dist[s, v] = dist[s, u] + 1
                    queue[tail] = v
                    tail += 1
    return dist
