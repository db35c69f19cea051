"""Flit-level network simulator: input-queued virtual-channel routers in one Numba kernel.

The fidelity reference of ``noc`` (docs/noc.md). Every directed link of a
:class:`~noc.topology.Topology` is a channel carrying one flit per cycle after
``latency_cycles`` (with ``flit_bytes`` set, a link narrower than a flit carries one every
``flit_bytes / bytes_per_cycle`` cycles, each arriving its serialisation later); a link
into a router ends in an input port with ``num_vcs`` virtual channels of ``vc_depth_flits``
flits. Per router and cycle, as in the textbook/BookSim router:

* **route computation** — the head flit's output link comes from its source route
  (``noc.routing``: DOR with dateline VC classes on tori, NCA on fat-trees), ready
  ``routing_delay_cycles`` after the head reaches the front of its VC;
* **VC allocation** — each free output VC of the route's VC class goes to one waiting
  head (most urgent priority first, round-robin among equals, one pointer per output link
  and class); usable
  ``vc_alloc_delay_cycles`` later. Wormhole needs a free VC; virtual cut-through also
  needs room for the whole packet downstream;
* **switch allocation** — separable, input first: each input port picks one of its VCs
  with a flit ready and a downstream credit, each output port grants one requesting input
  (priority first, then round-robin; ``islip`` moves the pointers only on a granted
  request, ``round_robin`` on every pick);
* **switch and link traversal** — a granted flit is written into the downstream buffer
  ``sw_alloc_delay_cycles + st_delay_cycles + link latency`` cycles later;
* **credits** — the slot a flit leaves is credited upstream ``credit_delay_cycles``
  later. An output VC is released when its tail flit is granted (it may be reallocated
  before the tail's credit returns).

Those are the defaults. BookSim2's own rules are options of :class:`FlitNetworkConfig`
(docs/noc.md, "BookSim2 semantics"): its separable input-first and iSLIP VC and switch
allocators (``vc_allocator``, ``sw_allocator``), its torus VC classes and random tie
direction (``vc_class_rule``, ``tie_break``), credits over the link
(``credit_adds_link_latency``) and ``wait_for_tail_credit`` (``vc_release``).

NIs inject one flit per cycle from an unbounded source queue (packets wait there, in
order) and eject one per cycle into a sink. Packets carry a priority (lower = more
urgent: the NIC puts the schedule step there) and a tag; the tail's ejection is logged.

The kernel API (all ``@njit``, so a co-simulation loop in another package can drive it):
``new_state(net, max_packets)``, ``enqueue_packet(net, st, src, dst, num_flits, priority,
tag, now)``, ``step(net, st, now)`` (one cycle), ``pop_ejected(st)``, ``in_flight(st)``.
``build_network(topology, config)`` makes ``net``; :func:`seed_arbiters` sets the
allocators' starting pointers from ``config.arbiter_seed``; :func:`run_packets` runs a packet list.
"""

from __future__ import annotations

from collections import namedtuple
from fractions import Fraction
from typing import ClassVar, Literal, NamedTuple

import numpy as np
from numba import njit
from numba.core import types as nb_types
from numba.cpython.unsafe.numbers import trailing_zeros
from numba.extending import overload
from pydantic import Field

from noc.base.config import Seed, StrictModel
from noc.base.errors import ConfigError, DeadlockError
from noc.flit_pipeline import FlitCompiler
from noc.base.interrupts import interrupts_deferred
from noc.routing import check_vc_classes, nca_up_variants, route, tie_variants
from noc.topology import Topology
from noc.topology_cache import cached


class FlitNetworkConfig(StrictModel):
    """Router and flow-control parameters of the flit-level network (cycles, flits)."""

    # added after results were first stored: left out of result keys at their defaults (key_fields)
    later_fields: ClassVar[frozenset[str]] = frozenset({
        "arbiter_seed", "vc_allocator", "sw_allocator", "vc_class_rule", "tie_break", "credit_adds_link_latency",
        "vc_release"})

    num_vcs: int = Field(2, ge=1, le=64, description="Virtual channels per input port.")
    vc_depth_flits: int = Field(8, ge=1, le=1 << 16, description="Buffer depth of each VC, in flits.")
    routing_delay_cycles: int = Field(0, ge=0, le=64, description="Route computation delay of a head flit.")
    vc_alloc_delay_cycles: int = Field(1, ge=0, le=64, description="VC allocation delay.")
    sw_alloc_delay_cycles: int = Field(1, ge=0, le=64, description="Switch allocation delay.")
    st_delay_cycles: int = Field(0, ge=0, le=64, description="Switch traversal delay (added to the link latency).")
    credit_delay_cycles: int = Field(1, ge=1, le=64, description="Cycles from a flit leaving a buffer until the upstream router can use its credit.")
    flow_control: Literal["wormhole", "vct"] = Field("wormhole", description="wormhole, or virtual cut-through (whole packet must fit).")
    allocator: Literal["round_robin", "islip"] = Field("round_robin", description="Arbiter pointer policy of the separable allocators.")
    routing: Literal["auto", "dor", "nca", "shortest"] = Field("auto", description="Routing algorithm (noc.routing).")
    dateline: bool = Field(True, description="Dateline VC classes on tori (without them a torus can deadlock).")
    watchdog_cycles: int = Field(10_000, ge=10, le=1 << 40, description="Stop with a deadlock error after this many cycles without a flit moving.")
    debug: bool = Field(False, description="Check invariants (credits within 0..depth, flit order) every cycle.")
    arbiter_seed: Seed | None = Field(
        None,
        description="None: every round-robin pointer of the VC and switch allocators starts at 0 (the reset state). "
                    "A seed: each starts at a random position drawn from it (seed_arbiters), so runs over several "
                    "seeds show how much a result depends on tie-breaking alone.")
    vc_allocator: Literal["lowest_free", "separable_input_first", "islip"] = Field(
        "lowest_free",
        description="VC allocation. lowest_free: each free output VC, lowest first, goes to the most urgent waiting "
                    "head (round-robin among equals, one pointer per output link and class), so a lone head always "
                    "gets the lowest free VC. separable_input_first / islip: BookSim2's allocators of those names "
                    "(one iteration): a head requests every free output VC of its class, and a round-robin pointer "
                    "per input VC rotates the output VC it takes (back-to-back packets get different VCs); "
                    "islip ignores priorities.")
    sw_allocator: Literal["vc_first", "separable_input_first", "islip"] = Field(
        "vc_first",
        description="Switch allocation. vc_first: each input port picks one ready VC, then each output grants one "
                    "input (pointer policy: allocator). separable_input_first / islip: BookSim2's: an input port "
                    "requests every output one of its ready VCs wants (one VC per output, round-robin over VCs), "
                    "then a separable input-first allocator or one iSLIP iteration (no priorities) matches them.")
    vc_class_rule: Literal["dateline", "booksim"] = Field(
        "dateline",
        description="VC classes of DOR on tori. dateline: class 0 until the packet crosses a ring's wrap link, "
                    "class 1 from there, and the route's first class on injection and ejection links. booksim: "
                    "BookSim2's dim_order_torus: on entering each ring, class 1 when the destination's coordinate "
                    "is below the current one, else 0, kept for the whole ring; any VC on injection and ejection links.")
    tie_break: Literal["plus", "random"] = Field(
        "plus",
        description="DOR on a torus ring of even size, for a packet exactly half-way around: plus always goes +; "
                    "random picks the direction per packet and ring, 50/50 (BookSim2), from a stream seeded by "
                    "the traffic seed (synthetic traffic; a fixed start in run_packets and the co-simulation). "
                    "NCA on a fat-tree: plus goes up the destination's port at each level (deterministic); random "
                    "draws the up port at each level per packet, uniformly (BookSim2's nca_fattree).")
    vc_release: Literal["tail_sent", "tail_credit"] = Field(
        "tail_sent",
        description="When an output VC is free again: tail_sent, as soon as the packet's tail is sent (the next "
                    "packet may follow it into the downstream VC); tail_credit, when the tail has been sent and every "
                    "credit of the VC has come back (BookSim2's wait_for_tail_credit = 1).")
    credit_adds_link_latency: bool = Field(
        False,
        description="Credits travel back over the link: a freed slot is usable upstream credit_delay_cycles plus "
                    "the link's latency later (BookSim2: 1 + credit channel latency + its credit_delay); "
                    "false: credit_delay_cycles on every link.")
    flit_bytes: int | None = Field(
        None, ge=1, le=1 << 16,
        description="Bytes per flit. None: every link carries one flit per cycle. Set: a link of w bytes/cycle "
                    "narrower than a flit carries one flit every flit_bytes / w cycles (exact fractional cadence); "
                    "a link as wide or wider carries one flit per cycle.")

    @property
    def router_delay_cycles(self) -> int:
        """Extra cycles a head spends in a router at zero load (beyond the link latency)."""
        return self.routing_delay_cycles + self.vc_alloc_delay_cycles + self.sw_alloc_delay_cycles + self.st_delay_cycles


Net = namedtuple("Net", [
    "num_links", "num_endpoints", "num_routers", "V", "D", "vcs_per_class",
    "link_dst_router", "link_src_router", "link_latency", "is_eject", "is_inject", "inject_link", "eject_link",
    "rin_off", "rin_links", "rout_off", "rout_links",
    "route_links", "route_class", "route_len",
    "rc_delay", "va_delay", "sa_delay", "st_delay", "vct", "islip", "watchdog", "debug",
    "ring", "cring",
    # link width (FlitNetworkConfig.flit_bytes): a flit occupies link l for ser[0, l] / ser[1, l]
    # cycles (1/1 on links at least a flit wide). ``ser`` is None when no link is narrower than a
    # flit: Numba then compiles step without any of the width logic (see _link_busy), so the
    # one-flit-per-cycle model costs what it did before link width existed. (No bool flag field
    # either: with one, unused, bench/noc_speed.py's torus88 ran at 67 k instead of 87 k cycles/s.)
    "ser",
    # BookSim2 options: VC allocator (0 lowest_free, 1 separable input-first, 2 iSLIP), switch
    # allocator (0 vc_first, 1 separable input-first, 2 iSLIP); the output VCs each VC class may
    # use (cls_mask[c]; the last entry, class any_cls, is every VC); route rows per source
    # (n_rows tie-direction variants: row = variant * E + src); each link's position among its
    # source router's outputs; per link, the cycles until a freed slot's credit is usable
    "va_kind", "sa_kind", "cls_mask", "any_cls", "n_rows", "out_port", "credit_lat",
    # vc_release = "tail_credit": output VCs stay owned until the tail's credits are back
    "tail_credit",
])

State = namedtuple("State", [
    # VC buffers at the downstream end of each link: FIFO of (packet, flit seq, hop); no arrival
    # cycle: a flit is buffered in the cycle it arrives, and nothing looks at it before then
    "buf_pkt", "buf_seq", "buf_hop", "buf_head", "buf_count",
    # per (link, vc): state of the packet at the front (its output link, class and VC)
    "vc_state", "vc_ready", "vc_out", "vc_outvc", "vc_cls",
    "owner", "credit",
    # link and credit pipelines (rings indexed by cycle)
    "lp_pkt", "lp_seq", "lp_hop", "lp_vc", "cp_vc",
    # arbiter pointers: switch allocation per input and per output link; VC allocation per
    # (output link, VC class) at index link * V + class (an NI's injection VC rotation too)
    "sa_in_ptr", "sa_out_ptr", "va_ptr",
    # packets (slots, recycled)
    "p_src", "p_dst", "p_flits", "p_prio", "p_tag", "p_created", "p_injected", "p_sent", "p_ejected_flits",
    "p_next", "free_slots", "free_top",
    # NI source queues: linked lists of packet slots per endpoint; injection VC of the front packet
    "q_head", "q_tail", "q_vc",
    # ejection log (ring), counters
    "ej_tag", "ej_cycle", "ej_inj", "ej_r", "ej_w",
    "link_flits", "counters",
    # activity: links with a flit (credit) arriving per ring slot; per router, flits buffered
    # and input VCs whose front packet has no output VC yet (route computation, VC allocation)
    "arr_links", "arr_n", "cr_links", "cr_n", "r_flits", "r_heads",
    # scratch of the router being allocated: heads waiting for VC allocation (port << 6 | VC);
    # switch requests (input port, VC, output link, priority)
    "va_wait", "req_in", "req_vc", "req_out", "req_prio",
    # per link, one bit per VC (bit v = VC v; num_vcs <= 64): VCs holding flits, VCs that
    # own an output VC (vc_state == ACTIVE), and, as an output, VCs nobody owns (owner == -1).
    # The allocators visit only the set bits instead of every VC of every port.
    "vc_busy", "vc_active", "ovc_free",
    # per link, when the last flit sent on it finishes its serialisation, in units of
    # 1 / ser[1, l] cycles (grant-time coordinates; only used when net.ser is not None)
    "link_free",
    # per packet: its route row (noc.flit.Net.n_rows); VC allocation pointers of the BookSim2
    # allocators, per input VC over its router's output VCs and per output VC over the input
    # VCs; scratch: each waiting head's pick (separable) or granted output VCs (iSLIP) and each
    # switch request's state; switch-allocation accept pointer per input port over output
    # ports; the tie-direction stream
    "p_row", "va_in_ptr", "va_out_ptr", "va_pick", "req_sel", "sa_acc_ptr", "rng",
    # per link, one bit per VC: tail sent, VC held until its credits are back (tail_credit)
    "tail_pend",
    # per router: heads waiting for VC allocation (state _WAIT_VA), and a cycle no later than
    # the earliest at which one of its heads in route computation is done (VC allocation
    # skips a router with neither)
    "r_waiting", "r_wake",
    # activity sets, one bit each (64 per word, in index order): routers holding a flit
    # (r_flits > 0) and NIs with a packet queued (q_head >= 0). The router and injection
    # stages visit only their set bits, lowest first, so in the order a loop over every
    # router or NI would, and skip the idle ones without looking at them.
    "r_active", "ep_active",
    # per router, a cycle no later than the earliest at which its switch allocation can find a
    # request (an input VC owning an output VC, with a flit, ready, and a downstream credit):
    # switch allocation skips a router before it. Lowered where a VC gets its output VC
    # (_grant_vc), where a flit reaches an empty VC that owns one (_buffer) and where a credit
    # ends a wait for one (_credit_arrivals); switch allocation sets it from what it saw.
    "r_sa_wake",
])

# vc_state values
_EMPTY, _ROUTING, _WAIT_VA, _ACTIVE = 0, 1, 2, 3
# counters
C_IN_FLIGHT, C_IDLE, C_MOVED, C_INJECTED_FLITS, C_EJECTED_FLITS, C_PACKETS_DONE, C_ERR = range(7)

# The per-cycle kernels are compiled without Numba's reference counting (``_nrt=False``) and
# with ``error_model="numpy"`` (no ZeroDivisionError branch after a ``%``). They only index
# arrays their caller owns and never allocate, so nothing is lost; what is gained: Numba
# increfs every array of ``net`` and ``st`` (~70) on entry and decrefs them on exit, and its
# pruning pass could not remove those atomic updates from a kernel this large (or from one
# with a raise branch), so they cost about a third of a cycle at 0.15 load on torus:8x8.
# The small API functions a driver calls every cycle (enqueue_packet, pop_ejected, in_flight,
# stuck) are such kernels too, not Numba-inlined: inlined into a reference-counted caller,
# their ``st`` argument became a new reference to all its arrays (~0.6 µs per call); as calls,
# LLVM inlines them with no reference counting at all.
_kernel = njit(cache=True, error_model="numpy", _nrt=False, pipeline_class=FlitCompiler)
# pieces of ``step``, inlined into it (a call would pass ~600 words of array descriptors)
_stage = njit(cache=True, error_model="numpy", _nrt=False, inline="always")


# Bumped whenever the simulator's results change, so stored sweep results are not reused.
# 2: VC allocation round-robin per (output link, VC class), not per link.
MODEL_VERSION = 2

_MAX_SER_DENOMINATOR = 1 << 16


def serialisation_cycles(flit_bytes: int | None, link_bytes_per_cycle: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per link, the cycles a flit occupies it, as exact fractions ``num / den``:
    ``flit_bytes / bytes_per_cycle`` on links narrower than a flit, 1/1 on the others (and on
    every link when ``flit_bytes`` is None). A ratio must be a fraction with a denominator
    up to 65536 (e.g. 16 B flits over 12 B/cycle: 4/3; over 16/3 B/cycle: 3/1)."""
    w = np.asarray(link_bytes_per_cycle, dtype=np.float64)
    num = np.ones(w.shape[0], np.int64)
    den = np.ones(w.shape[0], np.int64)
    if flit_bytes is None:
        return num, den
    for width in np.unique(w):
        exact = flit_bytes / float(width)
        q = (Fraction(flit_bytes) / Fraction(float(width))).limit_denominator(_MAX_SER_DENOMINATOR)
        if abs(float(q) - exact) > 1e-12 * exact:
            raise ConfigError(f"flit_bytes = {flit_bytes} over a link of {float(width)!r} B/cycle: the serialisation "
                              f"time {exact!r} cycles is not a fraction with a denominator up to {_MAX_SER_DENOMINATOR}")
        if q > 1:
            sel = w == width
            num[sel] = q.numerator
            den[sel] = q.denominator
    return num, den


def build_network(topology: Topology, config: FlitNetworkConfig | None = None) -> Net:
    """The static arrays of the network: link roles, router ports, source routes, parameters."""
    cfg = FlitNetworkConfig() if config is None else config
    ser_num, ser_den = serialisation_cycles(cfg.flit_bytes, topology.link_bytes_per_cycle)
    narrow = bool(np.any(ser_num > ser_den))
    ser_max = int(np.max(-(-ser_num // ser_den))) if narrow else 1  # whole cycles, rounded up
    if ser_max >= cfg.watchdog_cycles:
        raise ConfigError(f"watchdog_cycles = {cfg.watchdog_cycles}: a flit takes up to {ser_max} cycles on the "
                          f"narrowest link (flit_bytes = {cfg.flit_bytes} over {float(topology.link_bytes_per_cycle.min())!r} "
                          f"B/cycle); watchdog_cycles must be larger")
    # the route rows, once per process per topology and routing keys (noc.topology_cache)
    routes = cached("flit.route_rows", topology, tuple(getattr(cfg, k) for k in ROUTE_KEY_FIELDS),
                    lambda: _route_rows(topology, cfg))
    check_vc_classes(topology, routes, cfg.num_vcs)
    classes = routes.num_vc_classes
    vpc = cfg.num_vcs // classes
    cls_mask = np.array([((1 << vpc) - 1) << (c * vpc) for c in range(classes)] + [(1 << cfg.num_vcs) - 1],
                        dtype=np.uint64).view(np.int64)
    e = topology.num_endpoints
    src, dst = topology.link_src.astype(np.int64), topology.link_dst.astype(np.int64)
    nl = topology.num_links
    is_eject = dst < e
    is_inject = src < e
    dst_router = np.where(is_eject, -1, dst - e)
    src_router = np.where(is_inject, -1, src - e)

    def csr(keys, n):
        order = np.argsort(keys, kind="stable")
        valid = keys[order] >= 0
        order = order[valid]
        off = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(keys[order], minlength=n), out=off[1:])
        return off, order.astype(np.int64)

    rin_off, rin_links = csr(dst_router, topology.num_routers)
    rout_off, rout_links = csr(src_router, topology.num_routers)
    out_port = np.zeros(nl, dtype=np.int64)
    out_port[rout_links] = np.arange(rout_links.size) - rout_off[src_router[rout_links]]
    maxlat = int(topology.link_latency_cycles.max()) if nl else 1
    credit_lat = np.full(nl, cfg.credit_delay_cycles, dtype=np.int64)
    if cfg.credit_adds_link_latency:
        credit_lat += topology.link_latency_cycles.astype(np.int64)
    return Net(
        num_links=nl, num_endpoints=e, num_routers=topology.num_routers, V=cfg.num_vcs, D=cfg.vc_depth_flits,
        vcs_per_class=cfg.num_vcs // classes,
        link_dst_router=dst_router, link_src_router=src_router,
        link_latency=topology.link_latency_cycles.astype(np.int64), is_eject=is_eject, is_inject=is_inject,
        inject_link=topology.inject_link.astype(np.int64), eject_link=topology.eject_link.astype(np.int64),
        rin_off=rin_off, rin_links=rin_links, rout_off=rout_off, rout_links=rout_links,
        route_links=routes.links.copy(), route_class=routes.vc_class.copy(), route_len=routes.length.copy(),
        rc_delay=cfg.routing_delay_cycles, va_delay=cfg.vc_alloc_delay_cycles, sa_delay=cfg.sw_alloc_delay_cycles,
        st_delay=cfg.st_delay_cycles, vct=cfg.flow_control == "vct",
        islip=cfg.allocator == "islip", watchdog=cfg.watchdog_cycles, debug=cfg.debug,
        # a flit arrives at most sa + st + latency + ceil(ser) cycles after it was sent (_send)
        ring=maxlat + cfg.sw_alloc_delay_cycles + cfg.st_delay_cycles + 1 + (ser_max if narrow else 0),
        cring=int(credit_lat.max(initial=cfg.credit_delay_cycles)) + 1,
        ser=np.stack([ser_num, ser_den]) if narrow else None,
        va_kind=_VA_KINDS.index(cfg.vc_allocator), sa_kind=_SA_KINDS.index(cfg.sw_allocator),
        cls_mask=cls_mask, any_cls=classes, n_rows=routes.links.shape[0] // max(e, 1), out_port=out_port,
        credit_lat=credit_lat,
        tail_credit=cfg.vc_release == "tail_credit",
    )


_VA_KINDS = ("lowest_free", "separable_input_first", "islip")
_SA_KINDS = ("vc_first", "separable_input_first", "islip")


# the router keys the source routes depend on (with the topology): their cache key
ROUTE_KEY_FIELDS = ("routing", "dateline", "vc_class_rule", "tie_break")


class _SourceRoutes(NamedTuple):
    algorithm: str
    num_vc_classes: int
    links: np.ndarray  # int16 (int32 from 2**15 links)[rows, E, H]
    vc_class: np.ndarray  # int8[rows, E, H]
    length: np.ndarray  # int64[rows, E]


def _route_rows(topology: Topology, cfg: FlitNetworkConfig) -> _SourceRoutes:
    """The source routes the kernel reads, ``[rows, E, H]`` with row = variant * E + src:
    variant 0 is the routing's table (:func:`noc.routing.route`); with ``tie_break =
    "random"`` on a torus with even rings, one more table per other tie direction
    (:func:`noc.routing.tie_variants`). Every source
    also gets a path to itself (its injection link, then its ejection link), for traffic
    that sends packets to their own source. Under ``vc_class_rule = "booksim"`` the
    injection and ejection links take the class ``any`` (index = number of classes). They
    depend on ``cfg``'s :data:`ROUTE_KEY_FIELDS` only."""
    routes = route(topology, cfg.routing, dateline=cfg.dateline, vc_rule=cfg.vc_class_rule)
    tables = [routes]
    if cfg.tie_break == "random" and routes.algorithm.startswith("dor"):
        for signs in tie_variants(topology)[1:]:
            tables.append(route(topology, cfg.routing, dateline=cfg.dateline, vc_rule=cfg.vc_class_rule,
                                tie_signs=signs))
    elif cfg.tie_break == "random" and routes.algorithm == "nca" and nca_up_variants(topology) > 1:
        # every up-link choice, one table each; a packet's uniformly drawn table picks its up
        # port at each level independently and uniformly (BookSim2's nca_fattree)
        tables = [route(topology, "nca", up_variant=v) for v in range(nca_up_variants(topology))]
    e = topology.num_endpoints
    width = max(routes.links.shape[2], 2)
    links = np.full((len(tables) * e, e, width), -1, dtype=np.int32)
    vc_class = np.zeros(links.shape, dtype=np.int8)
    length = np.zeros((len(tables) * e, e), dtype=np.int64)
    for i, tb in enumerate(tables):
        rows = slice(i * e, (i + 1) * e)
        links[rows, :, : tb.links.shape[2]] = tb.links
        vc_class[rows, :, : tb.links.shape[2]] = tb.vc_class
        length[rows] = tb.length
    self_rows = np.arange(len(tables))[:, None] * e + np.arange(e)[None, :]
    ep = np.broadcast_to(np.arange(e), self_rows.shape)
    links[self_rows, ep, 0] = topology.inject_link[ep]
    links[self_rows, ep, 1] = topology.eject_link[ep]
    length[self_rows, ep] = 2
    if cfg.vc_class_rule == "booksim":
        any_cls = routes.num_vc_classes
        rows_all = np.arange(links.shape[0])[:, None]
        vc_class[:, :, 0] = any_cls
        last = np.maximum(length - 1, 0)
        vc_class[rows_all, np.arange(e)[None, :], last] = any_cls
    # read at every head's route computation, at random (src, dst): the narrowest types keep
    # them in cache (an 8x8 mesh's were 1 MB as int64)
    return _SourceRoutes(routes.algorithm, routes.num_vc_classes,
                         links.astype(np.int16 if topology.num_links < (1 << 15) else np.int32), vc_class, length)


@njit(cache=True, inline="always")
def _words(n):
    """int64 words of a bit set of n members (at least one)."""
    return max((n + 63) >> 6, 1)


_RNG_START = np.uint64(0x9E3779B97F4A7C15)
_NEVER = 1 << 62  # a cycle no run reaches


def new_state(net, max_packets):
    """A network state (:data:`State`) with room for ``max_packets`` packets in flight; a
    Ctrl-C during the call is delivered when it returns (:mod:`noc.base.interrupts`)."""
    with interrupts_deferred():
        return _new_state(net, max_packets)


@njit(cache=True)
def _new_state(net, max_packets):
    nl, V, D = net.num_links, net.V, net.D
    e = net.num_endpoints
    credit = np.full((nl, V), D, np.int64)
    for l in range(nl):
        if net.is_eject[l]:
            for v in range(V):
                credit[l, v] = 1 << 40  # the NI sink always has room
    free_slots = np.empty(max_packets, np.int64)
    for i in range(max_packets):
        free_slots[i] = max_packets - 1 - i
    return State(
        np.full((nl, V, D), -1, np.int64), np.zeros((nl, V, D), np.int64), np.zeros((nl, V, D), np.int64),
        np.zeros((nl, V), np.int64), np.zeros((nl, V), np.int64),
        np.zeros((nl, V), np.int64), np.zeros((nl, V), np.int64), np.full((nl, V), -1, np.int64),
        np.full((nl, V), -1, np.int64), np.zeros((nl, V), np.int64),
        np.full((nl, V), -1, np.int64), credit,
        np.full((nl, net.ring), -1, np.int64), np.zeros((nl, net.ring), np.int64), np.zeros((nl, net.ring), np.int64),
        np.zeros((nl, net.ring), np.int64), np.full((nl, net.cring), -1, np.int64),
        np.zeros(nl, np.int64), np.zeros(nl, np.int64), np.zeros(nl * V, np.int64),
        np.zeros(max_packets, np.int64), np.zeros(max_packets, np.int64), np.zeros(max_packets, np.int64),
        np.zeros(max_packets, np.int64), np.zeros(max_packets, np.int64), np.zeros(max_packets, np.int64),
        np.zeros(max_packets, np.int64), np.zeros(max_packets, np.int64), np.zeros(max_packets, np.int64),
        np.full(max_packets, -1, np.int64), free_slots, np.array([max_packets], np.int64),
        np.full(e, -1, np.int64), np.full(e, -1, np.int64), np.full(e, -1, np.int64),
        np.zeros(max_packets + 1, np.int64), np.zeros(max_packets + 1, np.int64), np.zeros(max_packets + 1, np.int64),
        np.zeros(1, np.int64), np.zeros(1, np.int64),
        np.zeros(nl, np.int64), np.zeros(8, np.int64),
        np.zeros((net.ring, nl), np.int64), np.zeros(net.ring, np.int64),
        np.zeros((net.cring, nl), np.int64), np.zeros(net.cring, np.int64),
        np.zeros(max(net.num_routers, 1), np.int64), np.zeros(max(net.num_routers, 1), np.int64),
        np.zeros(nl * V, np.int64), np.zeros(nl * V, np.int64), np.zeros(nl * V, np.int64), np.zeros(nl * V, np.int64),
        np.zeros(nl * V, np.int64),
        np.zeros(nl, np.int64), np.zeros(nl, np.int64), np.full(nl, _low_bits(V), np.int64),
        np.zeros(nl, np.int64),
        np.zeros(max_packets, np.int64), np.zeros(nl * V, np.int64), np.zeros(nl * V, np.int64),
        np.zeros(nl * V, np.int64), np.zeros(nl * V, np.int64), np.zeros(nl, np.int64),
        np.array([_RNG_START], np.uint64),
        np.zeros(nl, np.int64),
        np.zeros(max(net.num_routers, 1), np.int64), np.full(max(net.num_routers, 1), _NEVER, np.int64),
        np.zeros(_words(net.num_routers), np.int64), np.zeros(_words(e), np.int64),
        np.full(max(net.num_routers, 1), _NEVER, np.int64),
    )


@_kernel
def enqueue_packet(net, st, src, dst, num_flits, priority, tag, now):
    """Queue a packet at NI ``src`` for NI ``dst``; False when no packet slot is free."""
    if st.free_top[0] == 0:
        return False
    st.free_top[0] -= 1
    p = st.free_slots[st.free_top[0]]
    st.p_src[p] = src
    st.p_dst[p] = dst
    row = src
    if net.n_rows > 1:  # a random tie direction per packet (tie_break = "random")
        row += (_next_random(st) % np.uint64(net.n_rows)) * net.num_endpoints
    st.p_row[p] = row
    st.p_flits[p] = num_flits
    st.p_prio[p] = priority
    st.p_tag[p] = tag
    st.p_created[p] = now
    st.p_injected[p] = -1
    st.p_sent[p] = 0
    st.p_ejected_flits[p] = 0
    st.p_next[p] = -1
    if st.q_tail[src] < 0:
        st.q_head[src] = p
        _set_member(st.ep_active, src)
    else:
        st.p_next[st.q_tail[src]] = p
    st.q_tail[src] = p
    st.counters[C_IN_FLIGHT] += num_flits
    return True


@_kernel
def pop_ejected(st):
    """(tag, cycle) of the next packet whose tail was ejected, or (-1, -1)."""
    r = st.ej_r[0]
    if r == st.ej_w[0]:
        return -1, -1
    n = st.ej_tag.shape[0]
    st.ej_r[0] = (r + 1) % n
    return st.ej_tag[r], st.ej_cycle[r]


@_kernel
def in_flight(st):
    """Flits queued or in the network."""
    return st.counters[C_IN_FLIGHT]


@njit(cache=True)
def queued_packets(st, src):
    """Packets waiting in NI ``src``'s source queue (the one being injected included)."""
    n = 0
    p = st.q_head[src]
    while p >= 0:
        n += 1
        p = st.p_next[p]
    return n


@njit(cache=True, inline="always")
def _next_random(st):
    """The next draw (uint64) of the state's splitmix64 stream (tie directions)."""
    st.rng[0] += np.uint64(0x9E3779B97F4A7C15)
    z = st.rng[0]
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def seed_ties(st: "State", seed: int) -> None:
    """Start the tie-direction stream (``tie_break = "random"``) of a fresh state at ``seed``."""
    st.rng[0] = (int(_RNG_START) + int(seed) * 0x2545F4914F6CDD1D) % (1 << 64)


# ---- bit sets (int64 words, bit v = member v): VCs of a link, active routers and NIs

@njit(cache=True, inline="always")
def _set_member(words, i):
    words[i >> 6] |= np.int64(1) << (i & 63)


@njit(cache=True, inline="always")
def _clear_member(words, i):
    words[i >> 6] &= ~(np.int64(1) << (i & 63))


@njit(cache=True, inline="always")
def _low_bits(n):
    """The set {0, ..., n - 1} (n <= 64)."""
    return np.int64(-1) if n >= 64 else (np.int64(1) << n) - 1


@njit(cache=True, inline="always")
def _bit(v):
    return np.int64(1) << v


@njit(cache=True, inline="always")
def _wrap(i, n):
    """i mod n for 0 <= i < 2n, without a division."""
    return i - n if i >= n else i


@njit(cache=True, inline="always")
def _rr_distance(idx, ptr, n):
    """Round-robin distance from pointer ``ptr`` to ``idx`` (both in 0..n-1): (idx - ptr) mod n."""
    d = idx - ptr
    return d + n if d < 0 else d


@njit(cache=True, inline="always")
def _cls_slot(net, cls):
    """The VC-allocation pointer slot of VC class ``cls`` on a link: the class itself, or 0
    for the class ``any`` (a link is used with ``any`` only, or with real classes only)."""
    return 0 if cls == net.any_cls else cls


@njit(cache=True, inline="always")
def _better(prio_a, idx_a, prio_b, idx_b, ptr, n):
    """Is candidate a preferred over b? Lower priority value, then round-robin from ptr."""
    if prio_a != prio_b:
        return prio_a < prio_b
    return _rr_distance(idx_a, ptr, n) < _rr_distance(idx_b, ptr, n)


# ---- flit movement

# Link width. The two helpers below are the only code that reads ``net.ser``; each is an
# ``overload`` that Numba resolves per network type: with ``net.ser`` None (no link narrower
# than a flit) they compile to the constants False and 0, and step carries no width logic at
# all. (With a run-time flag tested in step instead, torus88 of bench/noc_speed.py ran at
# 60 k instead of 84 k cycles/s.) The Python bodies are the same rule, for NUMBA_DISABLE_JIT.

def _link_busy(net, st, l, now):
    """Is link ``l`` still serialising an earlier flit for all of cycle ``now``? (A flit may
    start in the cycle in which the previous one finishes.) False on a network without narrow links."""
    return net.ser is not None and st.link_free[l] >= (now + 1) * net.ser[1, l]


def _serialise(net, st, l, now):
    """A flit goes onto link ``l`` in cycle ``now``: it starts when the previous flit on the
    link ends (or at ``now``) and occupies the link ``ser[0, l] / ser[1, l]`` cycles; returns
    the cycles it arrives later than a flit on a full-width link (its serialisation beyond
    the first cycle: the cycle in which it ends, minus ``now + 1``). 0 without narrow links."""
    if net.ser is None:
        return 0
    den = net.ser[1, l]
    if net.debug and st.link_free[l] >= (now + 1) * den:
        st.counters[C_ERR] += 1  # a flit sent onto a link still busy with the previous one
    start = max(st.link_free[l], now * den)
    end = start + net.ser[0, l]
    st.link_free[l] = end
    return (end + den - 1) // den - now - 1


def _has_narrow_links(net) -> bool:
    """Numba typing: is ``net.ser`` an array (some link is narrower than a flit)?"""
    return not isinstance(net.types[net.fields.index("ser")], nb_types.NoneType)


@overload(_link_busy, inline="always")
def _ol_link_busy(net, st, l, now):
    if not _has_narrow_links(net):
        return lambda net, st, l, now: False

    def impl(net, st, l, now):
        return st.link_free[l] >= (now + 1) * net.ser[1, l]
    return impl


@overload(_serialise, inline="always")
def _ol_serialise(net, st, l, now):
    if not _has_narrow_links(net):
        return lambda net, st, l, now: 0

    def impl(net, st, l, now):
        den = net.ser[1, l]
        if net.debug and st.link_free[l] >= (now + 1) * den:
            st.counters[C_ERR] += 1
        start = max(st.link_free[l], now * den)
        end = start + net.ser[0, l]
        st.link_free[l] = end
        return (end + den - 1) // den - now - 1
    return impl


@_stage
def _send(net, st, l, v, pkt, seq, hop, slot, extra, now):
    """Put a flit on link ``l`` (VC ``v``) in cycle ``now`` (ring slot ``slot``); it arrives
    ``extra + latency`` cycles later, plus, on a narrow link, its serialisation beyond the
    first cycle (:func:`_serialise`): less than ``net.ring`` in all, by construction of ``ring``."""
    delay = extra + net.link_latency[l] + _serialise(net, st, l, now)
    at = _wrap(slot + delay, net.ring)
    st.arr_links[at, st.arr_n[at]] = l
    st.arr_n[at] += 1
    st.lp_pkt[l, at] = pkt
    st.lp_seq[l, at] = seq
    st.lp_hop[l, at] = hop
    st.lp_vc[l, at] = v
    st.credit[l, v] -= 1
    st.link_flits[l] += 1
    st.counters[C_MOVED] += 1


@_stage
def _eject(net, st, l, v, pkt, seq, now):
    """A flit reaches its NI sink; the tail logs the packet and frees its slot."""
    st.credit[l, v] += 1
    st.p_ejected_flits[pkt] += 1
    st.counters[C_EJECTED_FLITS] += 1
    st.counters[C_IN_FLIGHT] -= 1
    if net.debug and seq != st.p_ejected_flits[pkt] - 1:
        st.counters[C_ERR] += 1  # out of order
    if seq == st.p_flits[pkt] - 1:
        w = st.ej_w[0]
        st.ej_tag[w] = st.p_tag[pkt]
        st.ej_cycle[w] = now
        st.ej_inj[w] = st.p_injected[pkt]
        st.ej_w[0] = _wrap(w + 1, st.ej_tag.shape[0])
        st.counters[C_PACKETS_DONE] += 1
        st.free_slots[st.free_top[0]] = pkt
        st.free_top[0] += 1
        if net.tail_credit:  # the NI returns the tail's credit: the VC is free when it arrives
            _schedule_credit(net, st, l, v, now % net.cring)


@_stage
def _head_at_front(net, st, r, l, v, pkt, hop, start):
    """Packet ``pkt``'s head (on its route's link ``hop``) is now at the front of input VC
    (l, v) of router r, and route computation starts in cycle ``start``: the output link
    and VC class are looked up now (they depend on the packet only) and are ready
    ``rc_delay`` cycles after ``start``."""
    row = st.p_row[pkt]
    dst = st.p_dst[pkt]
    st.vc_out[l, v] = net.route_links[row, dst, hop + 1]
    st.vc_cls[l, v] = net.route_class[row, dst, hop + 1]
    ready = start + net.rc_delay
    st.vc_ready[l, v] = ready
    st.vc_state[l, v] = _ROUTING
    st.r_heads[r] += 1
    if ready < st.r_wake[r]:
        st.r_wake[r] = ready


@_stage
def _buffer(net, st, l, v, pkt, seq, hop, now):
    """A flit reaches the input buffer of router link ``l``, VC ``v``."""
    D = net.D
    c = st.buf_count[l, v]
    if c >= D:
        st.counters[C_ERR] += 1  # buffer overflow: credits broken
        return
    i = _wrap(st.buf_head[l, v] + c, D)
    st.buf_pkt[l, v, i] = pkt
    st.buf_seq[l, v, i] = seq
    st.buf_hop[l, v, i] = hop
    st.buf_count[l, v] = c + 1
    r = net.link_dst_router[l]
    if c == 0:
        st.vc_busy[l] |= _bit(v)
        if st.vc_active[l] & _bit(v) == 0:  # a new head at the front: its route computation starts now
            _head_at_front(net, st, r, l, v, pkt, hop, now)
        elif now < st.r_sa_wake[r]:  # a flit for a VC that owns its output VC: it may go now
            st.r_sa_wake[r] = now
    if st.r_flits[r] == 0:
        _set_member(st.r_active, r)
    st.r_flits[r] += 1


@_stage
def _link_arrivals(net, st, now, slot):
    """1. Flits arriving this cycle, in the order they were sent."""
    for a in range(st.arr_n[slot]):
        l = st.arr_links[slot, a]
        pkt = st.lp_pkt[l, slot]
        st.lp_pkt[l, slot] = -1
        v = st.lp_vc[l, slot]
        seq = st.lp_seq[l, slot]
        if net.is_eject[l]:
            _eject(net, st, l, v, pkt, seq, now)
        else:
            _buffer(net, st, l, v, pkt, seq, st.lp_hop[l, slot], now)
    st.arr_n[slot] = 0


@_stage
def _schedule_credit(net, st, l, v, cslot):
    """A credit for VC ``v`` of link ``l`` (a slot freed in this cycle, credit ring slot
    ``cslot``), usable upstream ``net.credit_lat[l]`` cycles later. (On an ejection link,
    whose NI always has room, it only ends a tail_credit hold.)"""
    at = _wrap(cslot + net.credit_lat[l], net.cring)
    st.cp_vc[l, at] = v
    st.cr_links[at, st.cr_n[at]] = l
    st.cr_n[at] += 1


@_stage
def _release_vc(net, st, l, v):
    """Output VC ``v`` of link ``l`` has sent its packet's tail: free now, or under
    tail_credit once its credits are back (:func:`_credit_arrivals`)."""
    if net.tail_credit:
        st.tail_pend[l] |= _bit(v)
    else:
        st.owner[l, v] = -1
        st.ovc_free[l] |= _bit(v)


@_stage
def _credit_arrivals(net, st, cslot):
    """2. Credits arriving this cycle (and, under tail_credit, the VCs they free)."""
    for a in range(st.cr_n[cslot]):
        l = st.cr_links[cslot, a]
        v = st.cp_vc[l, cslot]
        st.cp_vc[l, cslot] = -1
        if not net.is_eject[l]:
            st.credit[l, v] += 1
            rs = net.link_src_router[l]
            if st.credit[l, v] == 1 and rs >= 0:  # the upstream router's VC waiting for it may go now
                st.r_sa_wake[rs] = 0
        if net.tail_credit and st.tail_pend[l] & _bit(v) and (net.is_eject[l] or st.credit[l, v] == net.D):
            st.tail_pend[l] &= ~_bit(v)
            st.owner[l, v] = -1
            st.ovc_free[l] |= _bit(v)
    st.cr_n[cslot] = 0


# ---- 3. route computation and VC allocation

@_stage
def _route(net, st, r, li, v, now):
    """The head at the front of input VC (li, v) of router r (in route computation since it
    reached the front, :func:`_head_at_front`, or waiting for an output VC): True when it
    waits for an output VC; else notes when its route computation ends in ``r_wake``."""
    if st.vc_state[li, v] == _ROUTING:
        ready = st.vc_ready[li, v]
        if ready > now:
            if ready < st.r_wake[r]:
                st.r_wake[r] = ready
            return False
        st.vc_state[li, v] = _WAIT_VA
        st.r_waiting[r] += 1
    return True


@_stage
def _best_waiting_head(net, st, r, a, nw, lo, cls, ov):
    """Which of router r's waiting heads va_wait[a:nw] that want output link ``lo``, class
    ``cls``, gets output VC ``ov``: (packed port/VC or -1, its index port * V + vc), and
    how many heads want (lo, cls) at all (whether or not ``ov`` has room for them under VCT)."""
    V = net.V
    base = net.rin_off[r]
    n_in = (net.rin_off[r + 1] - base) * V
    best_kv = -1
    best = -1
    best_prio = 0
    n = 0
    for b in range(a, nw):
        kv = st.va_wait[b]
        li = net.rin_links[base + (kv >> 6)]
        v = kv & 63
        if st.vc_state[li, v] != _WAIT_VA or st.vc_out[li, v] != lo or st.vc_cls[li, v] != cls:
            continue
        n += 1
        pkt = st.buf_pkt[li, v, st.buf_head[li, v]]
        if net.vct and st.credit[lo, ov] < st.p_flits[pkt]:
            continue
        ib = (kv >> 6) * V + v
        if best < 0 or _better(st.p_prio[pkt], ib, best_prio, best, st.va_ptr[lo * V + _cls_slot(net, cls)], n_in):
            best_kv = kv
            best = ib
            best_prio = st.p_prio[pkt]
    return best_kv, best, n


@_stage
def _grant_vc(net, st, r, li, v, lo, ov, now):
    """Input VC (li, v) of router r gets output VC ov of link lo."""
    st.owner[lo, ov] = li * net.V + v
    st.ovc_free[lo] &= ~_bit(ov)
    st.vc_outvc[li, v] = ov
    st.vc_state[li, v] = _ACTIVE
    st.vc_active[li] |= _bit(v)
    st.r_heads[r] -= 1
    st.r_waiting[r] -= 1
    st.vc_ready[li, v] = now + net.va_delay
    if now + net.va_delay < st.r_sa_wake[r]:
        st.r_sa_wake[r] = now + net.va_delay


@_stage
def _allocate_vcs(net, st, r, nw, now):
    """VC allocation of router r: each free output VC of a wanted (output, class) goes to
    the best waiting head (most urgent first, then round-robin from the (output, class) pointer),
    output VCs in increasing order, (output, class) groups in the order of their first head."""
    base = net.rin_off[r]
    n_in = (net.rin_off[r + 1] - base) * net.V
    for a in range(nw):
        kv = st.va_wait[a]
        la = net.rin_links[base + (kv >> 6)]
        va = kv & 63
        if st.vc_state[la, va] != _WAIT_VA:
            continue  # got an output VC earlier in this loop
        lo = st.vc_out[la, va]
        cls = st.vc_cls[la, va]
        free = st.ovc_free[lo] & net.cls_mask[cls]
        while free != 0:
            ov = trailing_zeros(free)
            free &= free - 1
            best_kv, best, n = _best_waiting_head(net, st, r, a, nw, lo, cls, ov)
            if best_kv >= 0:
                _grant_vc(net, st, r, net.rin_links[base + (best_kv >> 6)], best_kv & 63, lo, ov, now)
                st.va_ptr[lo * net.V + _cls_slot(net, cls)] = _wrap(best + 1, n_in)
                n -= 1
            if n == 0:
                break  # every head that wanted (lo, cls) has its VC: the other free ones stay free


@_stage
def _head_requests(net, st, r, a):
    """The output VCs waiting head va_wait[a] of router r may take now: the free VCs of its
    class on its output link (under VCT only those with room for the whole packet)."""
    kv = st.va_wait[a]
    li = net.rin_links[net.rin_off[r] + (kv >> 6)]
    v = kv & 63
    lo = st.vc_out[li, v]
    req = st.ovc_free[lo] & net.cls_mask[st.vc_cls[li, v]]
    if net.vct:
        need = st.p_flits[st.buf_pkt[li, v, st.buf_head[li, v]]]
        rest = req
        while rest != 0:
            ov = trailing_zeros(rest)
            rest &= rest - 1
            if st.credit[lo, ov] < need:
                req &= ~_bit(ov)
    return req


@_stage
def _pick_output_vc(net, st, r, li, v, lo, req):
    """The output VC of ``req`` (a bit set on link ``lo``) that input VC (li, v)'s
    round-robin pointer reaches first, over router r's output VCs (port * V + VC)."""
    V = net.V
    n_out = (net.rout_off[r + 1] - net.rout_off[r]) * V
    ptr = st.va_in_ptr[li * V + v]
    base = net.out_port[lo] * V
    best = -1
    best_d = n_out
    rest = req
    while rest != 0:
        ov = trailing_zeros(rest)
        rest &= rest - 1
        d = _rr_distance(base + ov, ptr, n_out)
        if d < best_d:
            best = ov
            best_d = d
    return best


@_stage
def _allocate_vcs_booksim(net, st, r, nw, now):
    """VC allocation of router r as BookSim2's separable input-first or iSLIP allocators
    (one iteration), over input VCs (port * V + VC) and output VCs (port * V + VC): every
    waiting head requests all the output VCs it may take (:func:`_head_requests`).

    Separable input-first: each head picks one (:func:`_pick_output_vc`), then each picked
    output VC grants one of its pickers (most urgent, then round-robin from its pointer).
    iSLIP: each requested output VC grants the requester its pointer reaches first (no
    priorities); each head accepts, of the VCs granted to it, the one its pointer reaches
    first. Pointers move past the winner only on a match."""
    V = net.V
    base = net.rin_off[r]
    n_in = (net.rin_off[r + 1] - base) * V
    n_out = (net.rout_off[r + 1] - net.rout_off[r]) * V
    if net.va_kind == 1:
        for a in range(nw):
            kv = st.va_wait[a]
            li = net.rin_links[base + (kv >> 6)]
            v = kv & 63
            req = _head_requests(net, st, r, a)
            st.va_pick[a] = _pick_output_vc(net, st, r, li, v, st.vc_out[li, v], req) if req != 0 else -1
        for a in range(nw):
            ov = st.va_pick[a]
            if ov < 0:
                continue
            kv = st.va_wait[a]
            lo = st.vc_out[net.rin_links[base + (kv >> 6)], kv & 63]
            best = -1
            best_i = -1
            best_prio = 0
            optr = st.va_out_ptr[lo * V + ov]
            for b in range(a, nw):
                if st.va_pick[b] != ov:
                    continue
                kb = st.va_wait[b]
                lb = net.rin_links[base + (kb >> 6)]
                if st.vc_out[lb, kb & 63] != lo:
                    continue
                ib = (kb >> 6) * V + (kb & 63)
                prio = st.p_prio[st.buf_pkt[lb, kb & 63, st.buf_head[lb, kb & 63]]]
                if best < 0 or _better(prio, ib, best_prio, best_i, optr, n_in):
                    best = b
                    best_i = ib
                    best_prio = prio
            for b in range(a, nw):  # this output VC is decided: the other pickers lose
                if b != best and st.va_pick[b] == ov:
                    kb = st.va_wait[b]
                    if st.vc_out[net.rin_links[base + (kb >> 6)], kb & 63] == lo:
                        st.va_pick[b] = -1
            kb = st.va_wait[best]
            lb = net.rin_links[base + (kb >> 6)]
            _grant_vc(net, st, r, lb, kb & 63, lo, ov, now)
            st.va_pick[best] = -1
            st.va_in_ptr[lb * V + (kb & 63)] = _wrap(net.out_port[lo] * V + ov + 1, n_out)
            st.va_out_ptr[lo * V + ov] = _wrap(best_i + 1, n_in)
        return
    # iSLIP, one iteration. Grant phase: va_pick[a] collects the output VCs granted to head a.
    for a in range(nw):
        st.va_pick[a] = 0
    for a in range(nw):
        kv = st.va_wait[a]
        li = net.rin_links[base + (kv >> 6)]
        lo = st.vc_out[li, kv & 63]
        rest = _head_requests(net, st, r, a)
        while rest != 0:
            ov = trailing_zeros(rest)
            rest &= rest - 1
            # granted already by an earlier head's pass over the same output VC?
            seen = False
            for b in range(a):
                kb = st.va_wait[b]
                if st.vc_out[net.rin_links[base + (kb >> 6)], kb & 63] == lo and _head_requests(net, st, r, b) & _bit(ov):
                    seen = True
                    break
            if seen:
                continue
            optr = st.va_out_ptr[lo * V + ov]
            best = a
            best_d = _rr_distance((kv >> 6) * V + (kv & 63), optr, n_in)
            for b in range(a + 1, nw):
                kb = st.va_wait[b]
                if st.vc_out[net.rin_links[base + (kb >> 6)], kb & 63] != lo:
                    continue
                if _head_requests(net, st, r, b) & _bit(ov) == 0:
                    continue
                d = _rr_distance((kb >> 6) * V + (kb & 63), optr, n_in)
                if d < best_d:
                    best = b
                    best_d = d
            st.va_pick[best] |= _bit(ov)
    # accept phase
    for a in range(nw):
        granted = st.va_pick[a]
        if granted == 0:
            continue
        kv = st.va_wait[a]
        li = net.rin_links[base + (kv >> 6)]
        v = kv & 63
        lo = st.vc_out[li, v]
        ov = _pick_output_vc(net, st, r, li, v, lo, granted)
        _grant_vc(net, st, r, li, v, lo, ov, now)
        st.va_in_ptr[li * V + v] = _wrap(net.out_port[lo] * V + ov + 1, n_out)
        st.va_out_ptr[lo * V + ov] = _wrap((kv >> 6) * V + v + 1, n_in)


@_stage
def _route_and_allocate_vcs(net, st, r, now):
    """3. Router r (holding a head in route computation or waiting for an output VC): the
    heads whose route computation ends now join the waiting ones, then VC allocation."""
    nw = 0
    st.r_wake[r] = _NEVER
    for k in range(net.rin_off[r + 1] - net.rin_off[r]):
        li = net.rin_links[net.rin_off[r] + k]
        heads = st.vc_busy[li] & ~st.vc_active[li]  # VCs with a flit and no output VC
        while heads != 0:
            v = trailing_zeros(heads)
            heads &= heads - 1
            if _route(net, st, r, li, v, now):
                st.va_wait[nw] = (k << 6) | v  # input port and VC, packed (V <= 64)
                nw += 1
    if nw > 0:
        if net.va_kind == 0:
            _allocate_vcs(net, st, r, nw, now)
        else:
            _allocate_vcs_booksim(net, st, r, nw, now)


# ---- 4. switch allocation (separable, input first) and traversal

@_stage
def _pick_input_vcs(net, st, r, now):
    """Stage 1: each input port of router r picks one VC with a flit ready and a downstream
    credit; returns the number of requests (req_in/req_vc/req_out/req_prio: port, VC, output
    link, priority)."""
    V = net.V
    n_req = 0
    wake = _NEVER
    for k in range(net.rin_off[r], net.rin_off[r + 1]):
        li = net.rin_links[k]
        cand = st.vc_busy[li] & st.vc_active[li]
        best = -1
        best_prio = 0
        while cand != 0:
            v = trailing_zeros(cand)
            cand &= cand - 1
            ready = st.vc_ready[li, v]
            if ready > now:
                if ready < wake:
                    wake = ready
                continue
            if st.credit[st.vc_out[li, v], st.vc_outvc[li, v]] <= 0:
                continue  # _credit_arrivals wakes the router
            wake = now + 1
            if _link_busy(net, st, st.vc_out[li, v], now):
                continue  # the output link is still serialising its previous flit
            prio = st.p_prio[st.buf_pkt[li, v, st.buf_head[li, v]]]
            if best < 0 or _better(prio, v, best_prio, best, st.sa_in_ptr[li], V):
                best = v
                best_prio = prio
        if best >= 0:
            st.req_in[n_req] = k
            st.req_vc[n_req] = best
            st.req_out[n_req] = st.vc_out[li, best]
            st.req_prio[n_req] = best_prio
            n_req += 1
    st.r_sa_wake[r] = wake
    return n_req


@_stage
def _traverse(net, st, r, li, v, lo, slot, cslot, now):
    """The front flit of input VC (li, v) of router r crosses the switch onto output link lo
    (its slot is credited upstream ``net.credit_lat[li]`` cycles after ring slot ``cslot``)."""
    i = st.buf_head[li, v]
    pkt = st.buf_pkt[li, v, i]
    seq = st.buf_seq[li, v, i]
    hop = st.buf_hop[li, v, i]
    st.buf_pkt[li, v, i] = -1
    st.buf_head[li, v] = _wrap(i + 1, net.D)
    st.buf_count[li, v] -= 1
    if st.buf_count[li, v] == 0:
        st.vc_busy[li] &= ~_bit(v)
    st.r_flits[r] -= 1
    if st.r_flits[r] == 0:
        _clear_member(st.r_active, r)
    _schedule_credit(net, st, li, v, cslot)  # the freed slot, credited upstream
    ov = st.vc_outvc[li, v]
    _send(net, st, lo, ov, pkt, seq, hop + 1, slot, net.sa_delay + net.st_delay, now)
    if seq == st.p_flits[pkt] - 1:  # tail: release the output VC; the next packet moves up
        _release_vc(net, st, lo, ov)
        st.vc_state[li, v] = _EMPTY
        st.vc_active[li] &= ~_bit(v)
        st.vc_outvc[li, v] = -1
        if st.buf_count[li, v] > 0:  # its route computation starts next cycle (this router's is done)
            j = st.buf_head[li, v]
            _head_at_front(net, st, r, li, v, st.buf_pkt[li, v, j], st.buf_hop[li, v, j], now + 1)


@_stage
def _grant_outputs(net, st, r, n_req, slot, cslot, now):
    """Stage 2: each requested output port of router r grants one of the inputs requesting
    it (priority first, then round-robin); the winners' flits traverse."""
    V = net.V
    base = net.rin_off[r]
    n_in = net.rin_off[r + 1] - base
    for a in range(n_req):
        if st.req_vc[a] < 0:
            continue  # already granted (or lost) this cycle
        lo = st.req_out[a]
        best = -1  # request
        best_port = -1
        best_prio = 0
        for b in range(a, n_req):
            if st.req_vc[b] < 0 or st.req_out[b] != lo:
                continue
            port = st.req_in[b] - base
            if best < 0 or _better(st.req_prio[b], port, best_prio, best_port, st.sa_out_ptr[lo], n_in):
                best = b
                best_port = port
                best_prio = st.req_prio[b]
        for b in range(a, n_req):  # the losers for this output are done for the cycle
            if b != best and st.req_vc[b] >= 0 and st.req_out[b] == lo:
                st.req_vc[b] = -2 - st.req_vc[b]
        v = st.req_vc[best]
        st.req_vc[best] = -2 - v  # granted
        li = net.rin_links[st.req_in[best]]
        st.sa_out_ptr[lo] = _wrap(best_port + 1, n_in)
        st.sa_in_ptr[li] = _wrap(v + 1, V)
        _traverse(net, st, r, li, v, lo, slot, cslot, now)
    if not net.islip:  # round robin: input pointers move past every pick, granted or not
        for a in range(n_req):
            vb = st.req_vc[a]
            st.sa_in_ptr[net.rin_links[st.req_in[a]]] = _wrap((-2 - vb if vb < -1 else vb) + 1, V)


@_stage
def _request_outputs(net, st, r, now):
    """BookSim2's switch requests of router r: each input port requests every output link
    one of its VCs (with a flit ready and a downstream credit) wants, on behalf of one VC per
    output (most urgent, then round-robin from the port's VC pointer). Requests of one port
    are contiguous; returns their number (req_in/req_vc/req_out/req_prio)."""
    V = net.V
    n_req = 0
    wake = _NEVER
    for k in range(net.rin_off[r], net.rin_off[r + 1]):
        li = net.rin_links[k]
        first = n_req
        cand = st.vc_busy[li] & st.vc_active[li]
        while cand != 0:
            v = trailing_zeros(cand)
            cand &= cand - 1
            lo = st.vc_out[li, v]
            ready = st.vc_ready[li, v]
            if ready > now:
                if ready < wake:
                    wake = ready
                continue
            if st.credit[lo, st.vc_outvc[li, v]] <= 0:
                continue  # _credit_arrivals wakes the router
            wake = now + 1
            if _link_busy(net, st, lo, now):
                continue
            prio = st.p_prio[st.buf_pkt[li, v, st.buf_head[li, v]]]
            j = first
            while j < n_req and st.req_out[j] != lo:
                j += 1
            if j == n_req:
                st.req_in[j] = k
                st.req_vc[j] = v
                st.req_out[j] = lo
                st.req_prio[j] = prio
                n_req += 1
            elif _better(prio, v, st.req_prio[j], st.req_vc[j], st.sa_in_ptr[li], V):
                st.req_vc[j] = v
                st.req_prio[j] = prio
    st.r_sa_wake[r] = wake
    return n_req


@_stage
def _match_switch(net, st, r, n_req, slot, cslot, now):
    """Match router r's switch requests (:func:`_request_outputs`) with BookSim2's separable
    input-first allocator (sa_kind 1: each port's arbiter picks one of its requests, most
    urgent then round-robin over output ports; each output grants one picker, most urgent
    then round-robin over input ports) or one iSLIP iteration (sa_kind 2: each output grants
    the requesting port its pointer reaches first; each port accepts, of its grants, the
    output its pointer reaches first; no priorities). Winners traverse; pointers move past
    the winner only on a match."""
    V = net.V
    base = net.rin_off[r]
    n_in = net.rin_off[r + 1] - base
    n_out = net.rout_off[r + 1] - net.rout_off[r]
    for a in range(n_req):
        st.req_sel[a] = 0
    if net.sa_kind == 1:
        a = 0
        while a < n_req:  # input arbiters, one port's requests at a time
            k = st.req_in[a]
            li = net.rin_links[k]
            best = a
            b = a + 1
            while b < n_req and st.req_in[b] == k:
                if _better(st.req_prio[b], net.out_port[st.req_out[b]], st.req_prio[best],
                           net.out_port[st.req_out[best]], st.sa_acc_ptr[li], n_out):
                    best = b
                b += 1
            st.req_sel[best] = 1
            a = b
        for a in range(n_req):  # output arbiters
            if st.req_sel[a] != 1:
                continue
            lo = st.req_out[a]
            best = a
            for b in range(a + 1, n_req):
                if st.req_sel[b] == 1 and st.req_out[b] == lo and _better(
                        st.req_prio[b], st.req_in[b] - base, st.req_prio[best], st.req_in[best] - base,
                        st.sa_out_ptr[lo], n_in):
                    best = b
            for b in range(a, n_req):
                if st.req_sel[b] == 1 and st.req_out[b] == lo:
                    st.req_sel[b] = 3 if b == best else 2
    else:
        for a in range(n_req):  # grant phase: req_sel 1 = granted
            lo = st.req_out[a]
            done = False
            for b in range(a):
                if st.req_out[b] == lo:
                    done = True
                    break
            if done:
                continue
            best = a
            for b in range(a + 1, n_req):
                if st.req_out[b] == lo and _rr_distance(st.req_in[b] - base, st.sa_out_ptr[lo], n_in) < \
                        _rr_distance(st.req_in[best] - base, st.sa_out_ptr[lo], n_in):
                    best = b
            st.req_sel[best] = 1
        a = 0
        while a < n_req:  # accept phase: req_sel 3 = matched
            k = st.req_in[a]
            li = net.rin_links[k]
            best = -1
            b = a
            while b < n_req and st.req_in[b] == k:
                if st.req_sel[b] == 1 and (best < 0 or _rr_distance(net.out_port[st.req_out[b]], st.sa_acc_ptr[li], n_out)
                                           < _rr_distance(net.out_port[st.req_out[best]], st.sa_acc_ptr[li], n_out)):
                    best = b
                b += 1
            if best >= 0:
                st.req_sel[best] = 3
            a = b
    for a in range(n_req):
        if st.req_sel[a] != 3:
            continue
        k = st.req_in[a]
        li = net.rin_links[k]
        lo = st.req_out[a]
        v = st.req_vc[a]
        st.sa_out_ptr[lo] = _wrap(k - base + 1, n_in)
        st.sa_acc_ptr[li] = _wrap(net.out_port[lo] + 1, n_out)
        st.sa_in_ptr[li] = _wrap(v + 1, V)
        _traverse(net, st, r, li, v, lo, slot, cslot, now)


@_stage
def _allocate_switch(net, st, r, slot, cslot, now):
    """4. Switch allocation and traversal of router r (holding flits)."""
    if net.sa_kind == 0:
        n_req = _pick_input_vcs(net, st, r, now)
        _grant_outputs(net, st, r, n_req, slot, cslot, now)
    else:
        n_req = _request_outputs(net, st, r, now)
        _match_switch(net, st, r, n_req, slot, cslot, now)


@_stage
def _routers(net, st, slot, cslot, now):
    """3 and 4, router by router. (A router's VC and switch allocation read and write only its
    own input VCs and output links, and its flits sent this cycle arrive in later cycles, so
    doing both per router gives what all routers' VC allocation, then all routers' switch
    allocation gives: the same flits sent, in the same order.) Only routers holding a flit
    are visited (``r_active``, lowest first); a router's allocation changes no other
    router's membership, and its own only by emptying it, after it was read."""
    for w in range(st.r_active.shape[0]):
        bits = st.r_active[w]
        while bits != 0:
            r = (w << 6) + trailing_zeros(bits)
            bits &= bits - 1
            if st.r_heads[r] != 0 and (st.r_waiting[r] != 0 or st.r_wake[r] <= now):
                _route_and_allocate_vcs(net, st, r, now)
            if st.r_sa_wake[r] <= now:
                _allocate_switch(net, st, r, slot, cslot, now)


# ---- 5. NI injection

@_stage
def _injection_vc(net, st, ep, pkt, l):
    """A VC of the route's first class on injection link l for NI ep's front packet
    (round-robin, so back-to-back packets use different VCs), or -1 when none is free."""
    cls = net.route_class[st.p_row[pkt], st.p_dst[pkt], 0]
    if cls == net.any_cls:
        first, n = 0, net.V
    else:
        first, n = cls * net.vcs_per_class, net.vcs_per_class
    slot = l * net.V + _cls_slot(net, cls)
    for k in range(n):
        c = first + (st.va_ptr[slot] + k) % n
        if st.owner[l, c] < 0 and (not net.vct or st.credit[l, c] >= st.p_flits[pkt]):
            st.owner[l, c] = -2 - ep
            st.ovc_free[l] &= ~_bit(c)
            st.q_vc[ep] = c
            st.va_ptr[slot] = (c - first + 1) % n
            return c
    return -1


@_stage
def _inject_from(net, st, ep, now, slot):
    """NI ``ep`` (a packet queued) sends its front packet's next flit, if it can."""
    pkt = st.q_head[ep]
    l = net.inject_link[ep]
    v = st.q_vc[ep]
    if v < 0:
        v = _injection_vc(net, st, ep, pkt, l)
        if v < 0:
            return
    if st.credit[l, v] <= 0:
        return
    if _link_busy(net, st, l, now):
        return  # a narrow injection link still serialising the previous flit
    seq = st.p_sent[pkt]
    if seq == 0:
        st.p_injected[pkt] = now
    _send(net, st, l, v, pkt, seq, 0, slot, 0, now)
    st.counters[C_INJECTED_FLITS] += 1
    st.p_sent[pkt] = seq + 1
    if seq + 1 == st.p_flits[pkt]:
        _release_vc(net, st, l, v)
        st.q_vc[ep] = -1
        st.q_head[ep] = st.p_next[pkt]
        if st.q_head[ep] < 0:
            st.q_tail[ep] = -1
            _clear_member(st.ep_active, ep)


@_stage
def _inject(net, st, now, slot):
    """5. The front packet of each NI's source queue sends one flit per cycle (NIs with a
    packet queued, ``ep_active``, lowest first)."""
    for w in range(st.ep_active.shape[0]):
        bits = st.ep_active[w]
        while bits != 0:
            ep = (w << 6) + trailing_zeros(bits)
            bits &= bits - 1
            _inject_from(net, st, ep, now, slot)


@_stage
def _check_invariants(net, st):
    """Debug mode: credits within 0..depth, and the VC bit sets, head counts, wake-up
    cycles and active router and NI sets agree with the arrays they summarise; every
    violation counts in C_ERR."""
    for l in range(net.num_links):
        busy = np.int64(0)
        active = np.int64(0)
        free = np.int64(0)
        for v in range(net.V):
            if not net.is_eject[l] and (st.credit[l, v] < 0 or st.credit[l, v] > net.D):
                st.counters[C_ERR] += 1
            if st.buf_count[l, v] > 0:
                busy |= _bit(v)
            if st.vc_state[l, v] == _ACTIVE:
                active |= _bit(v)
            if st.owner[l, v] == -1:
                free |= _bit(v)
        if busy != st.vc_busy[l] or active != st.vc_active[l] or free != st.ovc_free[l]:
            st.counters[C_ERR] += 1
    for r in range(net.num_routers):
        heads = 0
        waiting = 0
        for k in range(net.rin_off[r], net.rin_off[r + 1]):
            li = net.rin_links[k]
            for v in range(net.V):
                s = st.vc_state[li, v]
                if st.buf_count[li, v] > 0 and s != _ACTIVE:
                    heads += 1
                    if s == _WAIT_VA:
                        waiting += 1
                    elif s != _ROUTING or st.vc_ready[li, v] < st.r_wake[r]:
                        st.counters[C_ERR] += 1  # a head not routed, or due before r_wake
        if heads != st.r_heads[r] or waiting != st.r_waiting[r]:
            st.counters[C_ERR] += 1
        if (st.r_active[r >> 6] >> (r & 63)) & 1 != (1 if st.r_flits[r] > 0 else 0):
            st.counters[C_ERR] += 1  # the active-router set disagrees with the flits held
    for ep in range(net.num_endpoints):
        if (st.ep_active[ep >> 6] >> (ep & 63)) & 1 != (1 if st.q_head[ep] >= 0 else 0):
            st.counters[C_ERR] += 1  # the active-NI set disagrees with the source queue


@_stage
def _check_sa_wakes(net, st, now):
    """Debug mode, at the end of cycle ``now``: no router's switch-allocation wake-up cycle
    (r_sa_wake) is later than a cycle in which one of its VCs could request the switch (a
    VC owning an output VC, holding a flit and a credit for it, ready then); each violation
    counts in C_ERR."""
    for r in range(net.num_routers):
        for k in range(net.rin_off[r], net.rin_off[r + 1]):
            li = net.rin_links[k]
            cand = st.vc_busy[li] & st.vc_active[li]
            while cand != 0:
                v = trailing_zeros(cand)
                cand &= cand - 1
                if st.credit[st.vc_out[li, v], st.vc_outvc[li, v]] > 0 and \
                        st.r_sa_wake[r] > max(st.vc_ready[li, v], now + 1):
                    st.counters[C_ERR] += 1


@_kernel
def step(net, st, now):
    """Advance the network by one cycle (``now`` is the current cycle)."""
    moved_before = st.counters[C_MOVED]
    slot = now % net.ring
    cslot = now % net.cring
    _link_arrivals(net, st, now, slot)
    _credit_arrivals(net, st, cslot)
    _routers(net, st, slot, cslot, now)
    _inject(net, st, now, slot)
    # ---- 6. invariants and watchdog
    if net.debug:
        _check_invariants(net, st)
        _check_sa_wakes(net, st, now)
    if st.counters[C_MOVED] == moved_before and st.counters[C_IN_FLIGHT] > 0:
        st.counters[C_IDLE] += 1
    else:
        st.counters[C_IDLE] = 0


@_kernel
def stuck(net, st):
    """True when no flit has moved for ``watchdog_cycles`` while flits are in flight."""
    return st.counters[C_IDLE] >= net.watchdog


@njit(cache=True)
def _run_packets(net, st, inject_cycle, src, dst, nflits, prio, max_cycles):
    n = inject_cycle.shape[0]
    injected = np.full(n, -1, np.int64)
    ejected = np.full(n, -1, np.int64)
    nxt = np.int64(0)  # as now below
    done = 0
    now = np.int64(0)  # not the literal 0: a literal first type compiles step and enqueue_packet twice
    while done < n and now < max_cycles:
        while nxt < n and inject_cycle[nxt] <= now:
            if not enqueue_packet(net, st, src[nxt], dst[nxt], nflits[nxt], prio[nxt], nxt, now):
                break
            nxt += 1
        step(net, st, now)
        while True:
            tag, cyc = pop_ejected(st)
            if tag < 0:
                break
            ejected[tag] = cyc
            injected[tag] = st.ej_inj[(st.ej_r[0] - 1) % st.ej_inj.shape[0]]
            done += 1
        if stuck(net, st):
            return injected, ejected, now, 1
        now += 1
    return injected, ejected, now, 0


def describe_stuck(net: Net, st: State, topology: Topology, limit: int = 8) -> str:
    """The channels holding flits, for a deadlock report: 'link a->b VC v (n flits, waiting for ...)'."""
    parts = []
    states = {0: "empty", 1: "routing", 2: "waiting for an output VC", 3: "waiting for credits"}
    held = list(zip(*np.nonzero(st.buf_count > 0)))
    held.sort(key=lambda lv: (not bool(topology.is_router_link[lv[0]]), int(lv[0]), int(lv[1])))  # the cycle first
    for l, v in held:
        s, d = int(topology.link_src[l]), int(topology.link_dst[l])
        parts.append(f"link {s}->{d} VC {v} ({int(st.buf_count[l, v])} flits, {states[int(st.vc_state[l, v])]})")
        if len(parts) >= limit:
            break
    total = int(np.count_nonzero(st.buf_count > 0))
    more = f" and {total - len(parts)} more" if total > len(parts) else ""
    return "; ".join(parts) + more


def seed_arbiters(net: Net, st: State, seed: int | None) -> None:
    """Start every round-robin pointer of a fresh state at a position drawn from ``seed``
    (uniformly over the pointer's range; ``None`` leaves them all at 0). Each router output
    link has a VC-allocation pointer per VC class over the router's input VCs and a
    switch-allocation pointer over its input ports; each link into a router has a pointer
    over its VCs; an injection link's VC-allocation pointer picks among its class's VCs; and
    the BookSim2 allocators' pointers (``vc_allocator``, ``sw_allocator``) likewise."""
    if seed is None:
        return
    rng = np.random.default_rng(seed)
    nl, V = net.num_links, net.V
    src = np.asarray(net.link_src_router)
    routers = np.maximum(src, 0)
    ports = np.where(src >= 0, np.asarray(net.rin_off)[routers + 1] - np.asarray(net.rin_off)[routers], 0)
    va_range = np.where(src >= 0, ports * V, net.vcs_per_class)  # router outputs / injection links
    st.va_ptr[:] = (rng.random((nl, V)) * va_range[:, None]).astype(np.int64).reshape(-1)
    st.sa_out_ptr[:] = np.where(src >= 0, (rng.random(nl) * np.maximum(ports, 1)).astype(np.int64), 0)
    st.sa_in_ptr[:] = (rng.random(nl) * V).astype(np.int64)
    # BookSim2's allocators (drawn after the others, so the pointers above do not move):
    # per input VC over its router's output VCs, per output VC over its router's input VCs,
    # and per input port over its router's output ports
    dst = np.asarray(net.link_dst_router)
    into = np.maximum(dst, 0)
    outs = np.where(dst >= 0, np.asarray(net.rout_off)[into + 1] - np.asarray(net.rout_off)[into], 1)
    st.va_in_ptr[:] = (rng.random((nl, V)) * (outs * V)[:, None]).astype(np.int64).reshape(-1)
    st.va_out_ptr[:] = (rng.random((nl, V)) * np.maximum(ports * V, 1)[:, None]).astype(np.int64).reshape(-1)
    st.sa_acc_ptr[:] = (rng.random(nl) * outs).astype(np.int64)


def run_packets(topology: Topology, config: FlitNetworkConfig | None, packets: np.ndarray, *,
                max_cycles: int = 10_000_000, net: Net | None = None):
    """Run a packet list ``int[P, 4 or 5]`` of (inject cycle, src NI, dst NI, flits[, priority]),
    sorted by inject cycle. Returns (first-flit injection cycle, tail ejection cycle, state)."""
    cfg = FlitNetworkConfig() if config is None else config
    net = build_network(topology, cfg) if net is None else net
    pk = np.asarray(packets, dtype=np.int64).reshape(len(packets), -1)
    if len(pk) and np.any(np.diff(pk[:, 0]) < 0):
        raise ConfigError("packets must be sorted by injection cycle")
    if len(pk) and (pk[:, 3].min() < 1 or (cfg.flow_control == "vct" and pk[:, 3].max() > cfg.vc_depth_flits)):
        raise ConfigError(f"packet sizes must be >= 1 flit (and <= vc_depth_flits = {cfg.vc_depth_flits} under vct)")
    prio = pk[:, 4] if pk.shape[1] > 4 else np.zeros(len(pk), np.int64)
    st = new_state(net, max(len(pk), 1))
    seed_arbiters(net, st, cfg.arbiter_seed)
    inj, ej, now, dead = _run_packets(net, st, pk[:, 0].copy(), pk[:, 1].copy(), pk[:, 2].copy(), pk[:, 3].copy(),
                                      prio.copy(), max_cycles)
    if dead:
        raise DeadlockError(f"no flit moved for {cfg.watchdog_cycles} cycles at cycle {now} with "
                            f"{int(st.counters[C_IN_FLIGHT])} flits queued or in flight; stuck: {describe_stuck(net, st, topology)}")
    if st.counters[C_ERR]:
        raise AssertionError(f"flit-level invariant violated {int(st.counters[C_ERR])} times (credits or flit order)")
    return inj, ej, st
