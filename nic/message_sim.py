"""Message-level co-simulation: NIC start rules over the fluid network of ``noc.message``.

Each transfer starts when the NIC policy allows it, is served at the max-min fair rate
of its route (recomputed whenever the set of flows changes), frees its NI
``ni_free_delay_cycles`` after its last byte has left the NI, and arrives ``path
latency`` cycles after its last byte passed the route's bottleneck (with a
:class:`Wormhole`, after its tail flit's slot *began*: ``tail_slot_cycles`` earlier). A
transfer may start once every transfer it depends on has *arrived*, plus
``issue_delay_cycles``, and not before ``first_start_cycles``. ``nic.allreduce.nic_delays``
gives these delays for the two NIC designs, as the flit level has them.

Policies (the two NIC designs):

* ``POLICY_BASELINE`` — sends as soon as its data is ready and an NI of the node is free,
  in schedule order; no priority in the network.
* ``POLICY_CODESIGNED`` — strict lockstep per node: the node's next step opens only when
  every transfer of its current step has started and all its NIs are idle (then after
  ``step_advance_cycles``); flows of earlier steps take priority on every link.

Without a :class:`Wormhole` description the network is a pure fluid: a transfer occupies
its whole route while it is being sent and the NI is busy until the last byte has passed
the bottleneck. With one (``nic.flow_control`` derives it from the flit-level network
config), the mechanisms of a wormhole virtual-channel network are reproduced at message
level: VC holding, buffering between the NI and the bottleneck, one queue per NI, shared
buffers and head-of-line blocking (docs/allreduce.md, "Calibration"). Each is one stage of
the event loop in :mod:`nic.message_loop`, whose docstring names the stages in the order
the loop runs them and whose stages' docstrings state the rules.

A run is one value: :class:`TransferRun` (every transfer's arrays) or :class:`RouteRun`
(transfers as routes over a topology's links, each one's description derived when it
starts); :func:`simulate` times it. :func:`simulate_transfers` and
:func:`simulate_routes` are the same with the run's fields as keywords. Given the same
description, both kinds of run give the same times (tests/nic/test_allreduce_scale.py).

Times are float cycles. This is the fast model for large sizes; it is calibrated against
the flit-level co-simulation (docs/allreduce.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from nic import message_loop as loop
from nic.message_loop import POLICY_BASELINE, POLICY_CODESIGNED

__all__ = ["POLICY_BASELINE", "POLICY_CODESIGNED", "MODEL_VERSION", "HEAD_OF_LINE_LIMIT", "TransferTimes", "Wormhole",
           "RouteWormhole", "TransferRun", "RouteRun", "simulate", "simulate_transfers", "simulate_routes",
           "initial_pool", "reverse_dependencies"]


# Bumped whenever the model's results change, so stored sweep results are not reused.
# 2: VC holding, buffering before the bottleneck, one queue per NI.
# 3: VC allocation round-robin per (link, VC class), as the flit level's (noc.flit MODEL_VERSION 2).
# 4: per-packet flows with one VC per class share its allocation cycles per (link, class).
# 5: a bulk transfer queues behind its NI's draining previous one only with one VC per class.
# 6: wire bytes are whole flits per packet (a payload that is not a multiple of flit_bytes is padded).
# 7: per-packet flows share each hop's buffer equally with the other flows held back beyond it.
# 8: head-of-line blocking caps router input ports in loops of ports that eject one flow and pass one on.
# 9: the NICs' own cycle delays (first send, issue after an arrival, NI release) and the tail flit's latency
#    from the start of its slot, as at flit level: uncontended schedules now match it to the cycle.
# 10: the co-designed NIC's step priority only where the flit level's switch allocator honours
#     priorities (not iSLIP); the receivers' reduction unit and the NI's transmit queue (options).
# 11: event loop in time that follows the active transfers (not all of them); heads that tie for a VC
#     in priority, input port and time go in schedule order.
# 12: the co-designed NIC's delays with the scheduler's registered send request (first send in
#     cycle 2, a send 3 cycles after its arrival, an NI's next send 3 cycles after it freed).
MODEL_VERSION = 12

# The event loop ends with an error after this many events per transfer and node (plus the
# base): far above any run's count (a 32x32 torus's MultiTree: 0.01 per transfer), so it only
# stops a loop whose time no longer advances.
EVENTS_PER_TRANSFER_LIMIT = 1000
EVENTS_LIMIT_BASE = 1_000_000

# The saturation throughput of a 2x2 switch with FIFO input queues and uniform traffic
# (Karol, Hluchyj, Morgan, "Input versus output queueing on a space-division packet
# switch", IEEE Trans. Commun. 35(12), 1987: 0.75 for N = 2, 2 - sqrt(2) as N grows).
HEAD_OF_LINE_LIMIT = 0.75

@dataclass(frozen=True)
class TransferTimes:
    """Per-transfer times in cycles (float)."""

    start_cycles: np.ndarray
    sent_cycles: np.ndarray  # the last byte left the NI: the NI is free again
    arrive_cycles: np.ndarray
    # when the data is usable at the receiver: the arrival, or for a REDUCE the end of its
    # summation by the node's reduction unit (nic.reduction); None: the arrival
    ready_cycles: np.ndarray | None = None

    @property
    def usable_cycles(self) -> np.ndarray:
        return self.arrive_cycles if self.ready_cycles is None else self.ready_cycles

    @property
    def total_cycles(self) -> float:
        return float(self.arrive_cycles.max()) if self.arrive_cycles.size else 0.0


@dataclass(frozen=True)
class Wormhole:
    """The flit-level network's flow control, as the message model sees it (arrays per
    transfer and hop, aligned with ``path_links``)."""

    vc_class: np.ndarray  # int[T, H]: VC class of each hop
    head_latency_cycles: np.ndarray  # float[T, H]: zero-load time from the NI to the router allocating hop h
    in_port: np.ndarray  # int[T, H]: the link the head enters that router by (round-robin key)
    num_vc_classes: int
    vcs_per_class: int
    hold_vcs: bool  # one packet per transfer: it holds a VC per hop from its head to its tail
    hop_buffer_bytes: float  # buffer at the end of each hop a flow can fill (per-packet flows share it)
    head_of_line_limit: float = 0.0  # share of its link a head-of-line blocked input carries (0: no such rule)
    saturated_share: float = 1.0  # load share at which a link counts as saturated (below 1: a VC per class)
    # float[T] or None (fluid): the tail flit's slot on the injection link, in cycles; the tail
    # arrives the path latency after its slot *began*, one slot before the last byte left
    tail_slot_cycles: np.ndarray | None = None


@dataclass(frozen=True)
class RouteWormhole:
    """:class:`Wormhole` for transfers given as routes (:func:`simulate_routes`): its
    per-transfer arrays follow from each transfer's route and the links, so none is held.
    A head reaches hop ``h``'s router after the links before it plus ``router_delay_cycles``
    per router, enters it by the previous hop's link, and uses the route's VC classes; the
    tail flit's slot is that of the route's first (injection) link."""

    num_vc_classes: int
    vcs_per_class: int
    hold_vcs: bool
    hop_buffer_bytes: float
    head_of_line_limit: float = 0.0
    saturated_share: float = 1.0
    tail_slot_cycles: np.ndarray | None = None  # float[L] per injection link, or None (fluid: 0)

@dataclass(frozen=True, kw_only=True)
class _Run:
    """What both kinds of run have: the schedule, the NIC's timing, the reduction unit.

    Transfers are listed in schedule order (by step, then table order). ``not_before[i]``:
    transfer i starts no earlier than this cycle, whatever the NIC policy allows (a
    diagnostic: give it another model's start times to compare the network alone).
    ``step_priority``: flows of earlier steps first on every link (default: with
    ``POLICY_CODESIGNED``). ``reduce_*``: the receivers' reduction unit (``nic.reduction``;
    ``dst_node`` is each transfer's receiving node): a transfer that waits for a REDUCE
    waits for its summation, not only its arrival. ``tx_buffer_bytes``: the NI's transmit
    queue; the NI is free once the rest of its transfer fits in it, and its next transfer
    leaves behind the rest."""

    src_node: np.ndarray
    step: np.ndarray
    wire_bytes: np.ndarray
    dep_ptr: np.ndarray
    dep_idx: np.ndarray
    path_len: np.ndarray
    link_bytes_per_cycle: np.ndarray
    num_nodes: int
    nis_per_node: int
    policy: int
    issue_delay_cycles: float = 1.0
    step_advance_cycles: float = 1.0
    ni_free_delay_cycles: float = 0.0
    first_start_cycles: float = 0.0
    not_before: np.ndarray | None = None
    step_priority: bool | None = None
    dst_node: np.ndarray | None = None
    reduce_work_cycles: np.ndarray | None = None
    reduce_last_cycles: np.ndarray | None = None
    reduce_latency_cycles: int = 0
    reduce_mode: int = 0
    tx_buffer_bytes: float = 0.0


@dataclass(frozen=True, kw_only=True)
class TransferRun(_Run):
    """A run over every transfer's arrays. ``path_links[:, 0]`` is the NI's injection link:
    its capacity is the rate the NI injects at. ``shared_resources[i]`` (int, -1 padded)
    lists further capacities transfer i shares with others besides its links, as indices
    into ``shared_capacity`` (bytes/cycle); rates are max-min fair over links and these
    together."""

    path_links: np.ndarray
    path_latency_cycles: np.ndarray
    wormhole: Wormhole | None = None
    shared_resources: np.ndarray | None = None
    shared_capacity: np.ndarray | None = None


@dataclass(frozen=True, kw_only=True)
class RouteRun(_Run):
    """A run over transfers given as routes over a topology's links (``links[r,
    :path_len[r]]`` with ``r = route_of[i]``, or ``r = i`` without ``route_of``, injection
    and ejection links included, with their VC classes): what a
    route implies (path and head latencies from ``link_latency_cycles`` plus
    ``router_delay_cycles`` per router crossed, input ports, the tail slot) is derived when
    the transfer starts, and state is held only for the transfers under way, so its memory
    follows the transfers in flight rather than the schedule.

    The injection hop is the transfer's own NI: a resource of its own at
    ``ni_bytes_per_cycle[links[i, 0]]`` (whichever of the node's NIs is free sends it; the
    NI count limits a node's concurrent sends). ``shared_classes``: the transfers' packets
    share each (link, VC class) after the injection hop, at ``shared_capacity[link *
    classes + class]`` (per-packet flows with one VC per class)."""

    links: np.ndarray
    vc_class: np.ndarray
    link_latency_cycles: np.ndarray
    router_delay_cycles: float
    ni_bytes_per_cycle: np.ndarray
    wormhole: RouteWormhole | None = None
    shared_classes: bool = False
    shared_capacity: np.ndarray | None = None
    # int[T]: transfer i's row of links, vc_class and path_len (None: row i); schedules of
    # neighbour transfers share a few rows per node (nic.preparation.distinct_routes)
    route_of: np.ndarray | None = None


def simulate_transfers(**fields) -> TransferTimes:
    """:func:`simulate` of ``TransferRun(**fields)``."""
    return simulate(TransferRun(**fields))


def simulate_routes(**fields) -> TransferTimes:
    """:func:`simulate` of ``RouteRun(**fields)``."""
    return simulate(RouteRun(**fields))


def simulate(run: TransferRun | RouteRun) -> TransferTimes:
    """Time one run: the event loop (:func:`nic.message_loop.run`) in a pool of
    :func:`initial_pool` slots, doubled until the transfers under way never want one slot."""
    t = np.asarray(run.src_node).shape[0]
    if t >= 2**31 - 1:
        raise ValueError(f"{t:,} transfers are more than the event loop's 32-bit transfer ids hold")
    route_of = _route_rows(run, t) if isinstance(run, RouteRun) else None
    _check_transfers(run.src_node, run.step, run.wire_bytes, run.path_len, run.policy, route_of)
    if isinstance(run, RouteRun):
        tr, rt, wh = _route_inputs(run, t, route_of)
    else:
        tr, rt, wh = _transfer_inputs(run, t)
    nt = loop.NicTiming(int(run.num_nodes), int(run.nis_per_node), int(run.policy), float(run.issue_delay_cycles),
                        float(run.step_advance_cycles), float(run.ni_free_delay_cycles), float(run.first_start_cycles),
                        float(run.tx_buffer_bytes))
    red = _reduction_unit(run, t)
    h = int(tr.links.shape[1])
    hr = h + (max(h - 1, 0) if rt.extra_mode == 1 else (rt.extra.shape[1] if rt.extra_mode == 2 else 0)) + \
        (max(h - 2, 0) if wh.hol > 0.0 else 0)
    limit = EVENTS_PER_TRANSFER_LIMIT * (t + int(run.num_nodes)) + EVENTS_LIMIT_BASE
    pool = initial_pool(t, run.num_nodes, run.nis_per_node)
    # the loop's per-transfer state, allocated here (numpy asks for huge pages for large arrays:
    # the loop reaches these at random)
    work_i8 = np.empty(t, np.int8)
    work_i32 = np.empty((2, t), np.int32)
    work_f64 = np.empty(t)
    while True:
        if pool * hr >= 2**31:
            raise ValueError(f"{pool:,} transfers under way of {hr} rate resources each are more than the event "
                             "loop's 32-bit indices hold")
        out = loop.Output(np.full(t, np.inf), np.full(t, np.inf), np.full(t, np.inf),
                          np.full(t if red.keep_ready else 1, np.inf), np.zeros(4, np.int64), int(limit))
        events = loop.run(tr, rt, wh, nt, red, out, int(pool), int(hr), work_i8, work_i32, work_f64)
        if out.stats[0] == 0:
            break
        pool *= 2  # two transfers under way wanted one slot: again with twice as many
    if events > limit:
        raise RuntimeError(f"message-level simulation did not finish within {limit:,} events ({t:,} transfers, "
                           f"{int(run.num_nodes):,} nodes): a time that never advances? (nic.message_sim.EVENTS_PER_TRANSFER_LIMIT)")
    if not np.isfinite(out.arrive).all():
        bad = int(np.nonzero(~np.isfinite(out.arrive))[0][0])
        raise RuntimeError(f"message-level simulation stalled: transfer {bad} never arrived (dependency cycle?)")
    return TransferTimes(out.start, out.sent, out.arrive, out.ready if red.keep_ready else None)


def _transfer_arrays(run: _Run, t: int, links, vc_class, not_before, route_of=None) -> loop.TransferArrays:
    """The schedule as the loop reads it: one dtype per array whatever the caller built, so
    the loop compiles once."""
    src_node, step = _narrow(run.src_node, np.int32, "src_node"), _narrow(run.step, np.int32, "step")
    dep_t = np.int32 if np.asarray(run.dep_idx).size < 2**31 - 1 else np.int64
    dep_ptr, dep_idx = _narrow(run.dep_ptr, dep_t, "dep_ptr"), _narrow(run.dep_idx, dep_t, "dep_idx")
    rdep_ptr, rdep_idx = reverse_dependencies(dep_ptr, dep_idx, t)
    return loop.TransferArrays(
        src_node, step, np.ascontiguousarray(run.wire_bytes, np.float64), dep_ptr, rdep_ptr, rdep_idx,
        _narrow(links, np.int32, "links"), _narrow(run.path_len, np.int16, "path_len"),
        _narrow(vc_class, np.int8, "vc_class"), np.zeros(0, np.int32) if route_of is None else route_of,
        route_of is not None, np.zeros(0) if not_before is None else not_before, not_before is not None)


def _wormhole_params(w, policy: int, step_priority) -> loop.WormholeParams:
    _check_shares(w.head_of_line_limit, w.saturated_share, w.hold_vcs)
    hold = bool(w.hold_vcs and w.vcs_per_class > 0)
    prio = (policy == POLICY_CODESIGNED) if step_priority is None else bool(step_priority)
    return loop.WormholeParams(int(w.num_vc_classes), int(w.vcs_per_class), hold, float(w.hop_buffer_bytes),
                               float(w.head_of_line_limit), float(w.saturated_share), prio,
                               bool(w.hop_buffer_bytes > 0.0 and not hold))


def _transfer_inputs(run: TransferRun, t: int):
    """(TransferArrays, RouteArrays, WormholeParams) of a run over every transfer's arrays."""
    not_before = _per_transfer_cycles("not_before", run.not_before, t)  # zeros without: always read
    links = np.asarray(run.path_links, np.int64)
    link_cap = np.ascontiguousarray(run.link_bytes_per_cycle, np.float64)
    w = run.wormhole
    if w is None:
        w = Wormhole(np.zeros(links.shape, np.int64), np.zeros(links.shape), np.full(links.shape, -1, np.int64),
                     1, 0, False, 0.0)
    extra, extra_cap = _shared_resources(links.shape[0], run.shared_resources, run.shared_capacity)
    tail_slot = _per_transfer_cycles("tail_slot_cycles", w.tail_slot_cycles, t)
    wh = _wormhole_params(w, run.policy, run.step_priority)
    tr = _transfer_arrays(run, t, links, w.vc_class, not_before)
    none = np.zeros(0)
    rt = loop.RouteArrays(
        False, False, link_cap, none, 0.0, none, none, np.ascontiguousarray(run.path_latency_cycles, np.float64),
        np.ascontiguousarray(w.head_latency_cycles, np.float64), np.ascontiguousarray(w.in_port, np.int64), tail_slot,
        0 if extra is None else 2, np.zeros((0, 0), np.int64) if extra is None else np.ascontiguousarray(extra),
        none if extra_cap is None else np.ascontiguousarray(extra_cap), int(link_cap.shape[0]))
    return tr, rt, wh


def _route_rows(run: RouteRun, t: int) -> np.ndarray | None:
    """``run.route_of`` as int32[t] rows of its routes, or None (row i); a row that is not
    one is a ValueError."""
    if run.route_of is None:
        return None
    rows = np.asarray(run.links).shape[0]
    r = _narrow(run.route_of, np.int32, "route_of")
    if r.shape != (t,):
        raise ValueError(f"route_of must be one row per transfer ({t}), got shape {r.shape}")
    if r.size and (int(r.min()) < 0 or int(r.max()) >= rows):
        raise ValueError(f"route_of names rows {int(r.min())}..{int(r.max())}, not all of 0..{rows - 1}")
    return r


def _route_inputs(run: RouteRun, t: int, route_of: np.ndarray | None):
    """(TransferArrays, RouteArrays, WormholeParams) of a run over routes."""
    not_before = None if run.not_before is None else _per_transfer_cycles("not_before", run.not_before, t)
    link_cap = np.ascontiguousarray(run.link_bytes_per_cycle, np.float64)
    w = RouteWormhole(1, 0, False, 0.0) if run.wormhole is None else run.wormhole
    if run.shared_classes and run.shared_capacity is None:
        raise ValueError("shared_classes needs shared_capacity (one capacity per link and VC class)")
    wh = _wormhole_params(w, run.policy, run.step_priority)
    tail = np.zeros(link_cap.shape[0]) if w.tail_slot_cycles is None else np.asarray(w.tail_slot_cycles, np.float64)
    if tail.shape != link_cap.shape:
        raise ValueError(f"tail_slot_cycles must be one slot per link ({link_cap.shape[0]}), got shape {tail.shape}")
    ni = np.ascontiguousarray(run.ni_bytes_per_cycle, np.float64)
    if ni.shape != link_cap.shape:
        raise ValueError(f"ni_bytes_per_cycle must be one rate per link ({link_cap.shape[0]}), got shape {ni.shape}")
    tr = _transfer_arrays(run, t, run.links, run.vc_class, not_before, route_of)
    none = np.zeros(0)
    rt = loop.RouteArrays(
        True, run.wormhole is not None, link_cap, np.ascontiguousarray(run.link_latency_cycles, np.float64),
        float(run.router_delay_cycles), ni, np.ascontiguousarray(tail), none, np.zeros((0, 0)),
        np.zeros((0, 0), np.int64), none, 1 if run.shared_classes else 0, np.zeros((0, 0), np.int64),
        none if run.shared_capacity is None else np.ascontiguousarray(run.shared_capacity, np.float64),
        int(link_cap.shape[0] + t))
    return tr, rt, wh


def _reduction_unit(run: _Run, t: int) -> loop.ReductionUnit:
    """The receivers' reduction unit as the loop reads it (its work is read only when there
    is a unit: otherwise every message is usable on arrival)."""
    mode = int(run.reduce_mode)
    if mode != 0 and run.dst_node is None:
        raise ValueError("a reduction unit needs dst_node (each transfer's receiving node)")
    has_red = mode != 0 and (run.reduce_work_cycles is not None or run.reduce_last_cycles is not None)
    none = np.zeros(0, np.int64)
    work = none if run.reduce_work_cycles is None else np.asarray(run.reduce_work_cycles, np.int64)
    last = none if run.reduce_last_cycles is None else np.asarray(run.reduce_last_cycles, np.int64)
    if has_red:
        zero = np.zeros(t, np.int64)
        work = zero if run.reduce_work_cycles is None else np.array(np.broadcast_to(work, (t,)) if work.shape == (1,) else work)
        last = zero if run.reduce_last_cycles is None else np.array(np.broadcast_to(last, (t,)) if last.shape == (1,) else last)
        if work.shape != (t,) or last.shape != (t,):
            raise ValueError(f"reduce_work_cycles and reduce_last_cycles must be one count per transfer ({t})")
    dst = np.zeros(0, np.int32) if run.dst_node is None else _narrow(run.dst_node, np.int32, "dst_node")
    return loop.ReductionUnit(has_red, dst, np.ascontiguousarray(work), np.ascontiguousarray(last),
                              float(run.reduce_latency_cycles), mode, mode != 0)


# The event loop holds the state of the transfers under way in a pool of slots: transfer i's
# is slot i mod the pool's size (a power of two), so transfers that run together (nearby
# in the schedule) have nearby slots. It starts with this many slots per NI (at least
# POOL_MIN); a run in which two transfers under way want one slot runs again with twice as
# many (a pool as large as the schedule always fits).
POOL_PER_NI = 8
POOL_MIN = 1024


def initial_pool(t: int, num_nodes: int, nis: int) -> int:
    """Slots the event loop starts with for ``t`` transfers over ``num_nodes`` nodes of ``nis`` NIs."""
    want = min(max(int(t), 1), max(POOL_MIN, POOL_PER_NI * int(num_nodes) * int(nis)))
    return 1 << (want - 1).bit_length()


@njit(cache=True)
def _reverse_csr(dep_ptr, dep_idx, t, rptr, ridx):
    for i in range(t):
        for k in range(dep_ptr[i], dep_ptr[i + 1]):
            rptr[dep_idx[k] + 1] += 1
    for i in range(t):
        rptr[i + 1] += rptr[i]
    fill = rptr[:-1].copy()
    for i in range(t):
        for k in range(dep_ptr[i], dep_ptr[i + 1]):
            d = dep_idx[k]
            ridx[fill[d]] = i
            fill[d] += 1


def _narrow(x, dtype, name: str) -> np.ndarray:
    """``x`` as a C-contiguous array of ``dtype`` (the event loop's types; a copy only when it is
    not one already); a value the type cannot hold is a ValueError naming the array."""
    a = np.asarray(x)
    if a.dtype != dtype:
        info = np.iinfo(dtype)
        if a.size and (int(a.max()) > info.max or int(a.min()) < info.min):
            raise ValueError(f"{name} holds {int(a.min())}..{int(a.max())}; the event loop's {np.dtype(dtype).name} "
                             f"holds {info.min}..{info.max}")
        a = a.astype(dtype)
    return np.ascontiguousarray(a)


def reverse_dependencies(dep_ptr: np.ndarray, dep_idx: np.ndarray, t: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR (ptr[T+1], idx) of the transfers waiting for each transfer, in schedule order
    (int32 where the counts fit)."""
    n = int(dep_ptr[-1]) if t else 0
    if dep_idx.size and (int(dep_idx.min()) < 0 or int(dep_idx.max()) >= t):
        raise ValueError(f"dep_idx names transfers {int(dep_idx.min())}..{int(dep_idx.max())}, not all of 0..{t - 1}")
    dt = np.int32 if max(n, t) < 2**31 - 1 else np.int64
    rptr = np.zeros(t + 1, dt)
    ridx = np.empty(n, dt)
    _reverse_csr(dep_ptr, dep_idx, t, rptr, ridx)
    return rptr, ridx


@njit(cache=True)
def _step_order_fault(src_node, step, num_nodes):
    """(node, earlier step, later step) of the first node (lowest id) that lists a step
    after a later one, or (-1, 0, 0)."""
    last = np.full(num_nodes, -1, np.int64)
    bad_a = np.full(num_nodes, -1, np.int64)
    bad_b = np.zeros(num_nodes, np.int64)
    for i in range(src_node.shape[0]):
        v = src_node[i]
        s = step[i]
        if last[v] > s and bad_a[v] < 0:
            bad_a[v] = last[v]
            bad_b[v] = s
        last[v] = s
    for v in range(num_nodes):
        if bad_a[v] >= 0:
            return v, bad_a[v], bad_b[v]
    return -1, 0, 0


def _check_transfers(src_node, step, wire_bytes, path_len, policy, route_of=None):
    """Inputs the event loop cannot time (it would hang or blame a dependency cycle);
    ``route_of``: each transfer's row of ``path_len`` (None: row i)."""
    w = np.asarray(wire_bytes, dtype=np.float64)
    if not np.isfinite(w).all() or (w < 0).any():
        bad = int(np.nonzero(~(np.isfinite(w) & (w >= 0)))[0][0])
        raise ValueError(f"wire_bytes must be finite and non-negative; transfer {bad} has {w[bad]}")
    no_route = np.asarray(path_len) < 1
    short = np.nonzero(no_route if route_of is None else no_route[route_of])[0]
    if short.size:
        raise ValueError(f"transfer {int(short[0])} has no route (path_len 0: source and destination are the same "
                         "endpoint?)")
    if policy == POLICY_CODESIGNED:
        src = np.asarray(src_node)
        if src.size and src.min() < 0:
            raise ValueError(f"src_node must be node ids >= 0, got {int(src.min())}")
        v, a, b = _step_order_fault(src, np.asarray(step), int(src.max()) + 1 if src.size else 0)
        if v >= 0:
            raise ValueError(f"node {v} lists step {b} after step {a}: transfers must be in schedule order (by step, "
                             "then table order)")


def _shared_resources(t, extra, extra_cap):
    """The validated ``shared_resources`` (int64[T, K]) and ``shared_capacity``, or Nones."""
    if (extra is None) != (extra_cap is None):
        raise ValueError("shared_resources and shared_capacity go together: give both or neither")
    if extra is None:
        return None, None
    extra = np.asarray(extra, dtype=np.int64)
    if extra.ndim != 2 or extra.shape[0] != t:
        raise ValueError(f"shared_resources must have one row per transfer ({t}), got shape {extra.shape}")
    extra_cap = np.asarray(extra_cap, dtype=np.float64)
    if extra_cap.ndim != 1:
        raise ValueError(f"shared_capacity must be one capacity per resource, got shape {extra_cap.shape}")
    if extra.size and (extra.max() >= len(extra_cap) or extra.min() < -1):
        raise ValueError(f"shared_resources names resources {int(extra.min())}..{int(extra.max())} but shared_capacity "
                         f"has {len(extra_cap)} (use -1 for none)")
    return extra, extra_cap


def _check_shares(hol, saturated, hold_vcs):
    for name, v in (("head_of_line_limit", hol), ("saturated_share", saturated)):
        if not 0.0 <= v <= 1.0:
            raise ValueError(f"{name} must be a share of a link in [0, 1], got {v}")
    if hold_vcs and hol > 0.0:
        raise ValueError("head_of_line_limit is for per-packet flows: with hold_vcs every transfer is one packet, "
                         "and no packet waits behind another in a VC; give 0")


def _per_transfer_cycles(name: str, values, t: int) -> np.ndarray:
    """``values`` as float64[t] cycle counts (zeros for None); a clear error otherwise."""
    out = np.zeros(t) if values is None else np.asarray(values, dtype=np.float64)
    if out.shape != (t,) or not (np.isfinite(out).all() and (out >= 0).all()):
        raise ValueError(f"{name} must be {t} finite cycle counts >= 0, one per transfer")
    return out

