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
the bottleneck. With one (``nic.allreduce`` derives it from the flit-level network
config), three more mechanisms of a wormhole virtual-channel network are reproduced at
message level (docs/allreduce.md, "Calibration"):

* **VC holding** (``hold_vcs``: one packet per transfer, the co-designed NIC's bulk flow
  control). The head acquires a VC of its route's class on every hop in turn, in real
  time (it reaches hop ``h``'s router ``head_latency_cycles[:, h]`` after it left or
  after it was last unblocked); it keeps every VC it holds while it waits for the next
  one, and data flows only once the head has reached the destination. A freed VC goes to
  the most urgent waiting head, then round-robin over the router's input ports, one
  pointer per (link, class) (the flit router's VC allocator). ``vcs_per_class`` VCs per
  (link, class) therefore bound how many transfers can cross a link at once, and blocked
  heads block the transfers behind them (chains of waiting heads serialise whole steps).
* **Buffering between the NI and the bottleneck.** A flow held back by a link further
  on fills the buffers in front of that link (``hop_buffer_bytes`` per hop: the VCs the
  flow can use times their depth) while its NI keeps injecting at full speed; the NI is
  free once what is left fits in those buffers, and the rest drains afterwards.
* **One NI, one queue.** The next transfer an NI starts while its previous one is still
  draining queues behind it: it leaves only when the previous transfer's tail has left
  the buffers their routes share, taking over the buffer space it freed. This holds for
  per-packet flows (their packets fill every VC of their class) and for bulk transfers
  with one VC per class; with more, a bulk transfer takes a VC its predecessor does not
  hold, and VC holding alone decides when its head gets through.
* **Shared buffers** (per-packet flows). The packets of every flow crossing a link share
  the VCs at its far end, so the buffer of a hop is shared equally by the flows held back
  beyond it: when several flows converge on a bottleneck, each fills only its part of the
  buffers their routes share in front of it (``hop_buffer_bytes`` divided by their number),
  not ``hop_buffer_bytes`` per hop each. The NI's own injection hop is the flow's alone (the
  one-queue rule above covers the NI's next transfer).
* **Head-of-line blocking** (``head_of_line_limit``: per-packet flows). A router input
  port sends one flit per cycle, whichever VC it comes from. A port whose packets go two
  ways, some ejecting at this router and some continuing into an output that is saturated
  (loaded to ``saturated_share`` of its link: 1, or with one VC per class the rate its
  re-allocation leaves) and also carries a flow from this router's own NI (a
  competitor that is never idle), is served like an input of a 2×2 switch with FIFO inputs
  under saturation: a packet waiting for the busy output blocks the one behind it that
  could eject. Where the continuing flow enters such a port again at the next router (the
  ports form, or lead into, a loop), the port carries at most ``head_of_line_limit`` of
  its link (:data:`HEAD_OF_LINE_LIMIT`, 0.75: the saturation throughput of a 2×2
  input-queued switch, Karol, Hluchyj and Morgan 1987); on an open chain the last port
  drains and nothing is lost. Each input port a flow enters a router by and leaves it
  again is a rate resource at the link's capacity; after the max-min pass the ports that
  qualify with at least that load get the lower capacity, and the rates are shared out
  again.

Rates are max-min fair over the links of the routes and, given ``shared_resources``, over
further capacities a transfer shares with others: ``nic.allreduce`` uses one per (link,
VC class) when per-packet flows have one VC per class, whose re-allocation after every
packet costs the class a cycle per packet on every link.

Times are float cycles. This is the fast model for large sizes; it is calibrated against
the flit-level co-simulation (docs/allreduce.md).

The loop keeps, per transfer, only whether it started, its dependencies left, when its
inputs are ready and its times; everything a transfer needs while it is under way (its
route's resources and latencies, bytes left, rate, VC acquisition) lives in slot ``i mod
P`` of a pool of P slots (a power of two, doubled when two transfers under way want one
slot), filled when it starts. It looks for starts only at nodes where something changed (an
NI released, an input ready, a step opened) and for step ends only at nodes that started or
released something. :func:`simulate_routes` takes the transfers as routes and derives each
one's description when it starts; :func:`simulate_transfers` takes every transfer's arrays.
Given the same description, both give the same times (tests/nic/test_allreduce_scale.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from nic.reduction import reduce_done
from noc.message import max_min_rates

POLICY_BASELINE = 0
POLICY_CODESIGNED = 1

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

# transfer states
_WAITING, _QUEUED, _HEAD, _SENDING, _DRAINING, _IN_FLIGHT, _ARRIVED = 0, 1, 2, 3, 4, 5, 6
_STARTED = 1  # per transfer: no longer waiting (its slot holds the state above)


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


def simulate_transfers(
    *,
    src_node: np.ndarray,
    step: np.ndarray,
    wire_bytes: np.ndarray,
    dep_ptr: np.ndarray,
    dep_idx: np.ndarray,
    path_links: np.ndarray,
    path_len: np.ndarray,
    path_latency_cycles: np.ndarray,
    link_bytes_per_cycle: np.ndarray,
    num_nodes: int,
    nis_per_node: int,
    policy: int,
    issue_delay_cycles: float = 1.0,
    step_advance_cycles: float = 1.0,
    ni_free_delay_cycles: float = 0.0,
    first_start_cycles: float = 0.0,
    wormhole: Wormhole | None = None,
    shared_resources: np.ndarray | None = None,
    shared_capacity: np.ndarray | None = None,
    not_before: np.ndarray | None = None,
    step_priority: bool | None = None,
    dst_node: np.ndarray | None = None,
    reduce_work_cycles: np.ndarray | None = None,
    reduce_last_cycles: np.ndarray | None = None,
    reduce_latency_cycles: int = 0,
    reduce_mode: int = 0,
    tx_buffer_bytes: float = 0.0,
) -> TransferTimes:
    """Run the event loop. Transfers must be listed in schedule order (by step, then table order).

    ``path_links[:, 0]`` is the NI's injection link: its capacity is the rate the NI
    injects at. ``shared_resources[i]`` (int, -1 padded) lists further capacities transfer
    i shares with others besides its links, as indices into ``shared_capacity``
    (bytes/cycle); rates are max-min fair over links and these together.
    ``not_before[i]``: transfer i starts no earlier than this cycle, whatever the NIC policy
    allows (a diagnostic: give it another model's start times to compare the network alone).
    ``step_priority``: flows of earlier steps first on every link (default: with
    ``POLICY_CODESIGNED``). ``reduce_*``: the receivers' reduction unit (``nic.reduction``;
    ``dst_node`` is each transfer's receiving node): a transfer that waits for a REDUCE
    waits for its summation, not only its arrival. ``tx_buffer_bytes``: the NI's transmit
    queue; the NI is free once the rest of its transfer fits in it, and its next transfer
    leaves behind the rest.

    :func:`simulate_routes` is the same loop for transfers given as routes over a
    topology's links, holding no per-transfer array of the network's description.
    """
    t = np.asarray(src_node).shape[0]
    _check_transfers(src_node, step, wire_bytes, path_len, policy)
    not_before = _per_transfer_cycles("not_before", not_before, t)
    links = np.asarray(path_links, np.int64)
    plen = np.asarray(path_len, np.int64)
    link_cap = np.asarray(link_bytes_per_cycle, np.float64)
    if wormhole is None:
        w = Wormhole(np.zeros(links.shape, np.int64), np.zeros(links.shape), np.full(links.shape, -1, np.int64),
                     1, 0, False, 0.0)
    else:
        w = wormhole
    extra, extra_cap = _shared_resources(links.shape[0], shared_resources, shared_capacity)
    _check_shares(w.head_of_line_limit, w.saturated_share, w.hold_vcs)
    tail_slot = _per_transfer_cycles("tail_slot_cycles", w.tail_slot_cycles, t)
    return _simulate(
        src_node, step, wire_bytes, dep_ptr, dep_idx, links, plen, np.asarray(w.vc_class, np.int64), link_cap,
        False, _NO_F, 0.0, _NO_F, _NO_F, np.asarray(path_latency_cycles, np.float64),
        np.asarray(w.head_latency_cycles, np.float64), np.asarray(w.in_port, np.int64), tail_slot,
        0 if extra is None else 2, _NO_I2 if extra is None else extra, _NO_F if extra_cap is None else extra_cap,
        link_cap.shape[0], num_nodes, nis_per_node, policy, issue_delay_cycles, step_advance_cycles,
        ni_free_delay_cycles, first_start_cycles, int(w.num_vc_classes), int(w.vcs_per_class), bool(w.hold_vcs),
        float(w.hop_buffer_bytes), float(w.head_of_line_limit), float(w.saturated_share), not_before, step_priority,
        dst_node, reduce_work_cycles, reduce_last_cycles, reduce_latency_cycles, reduce_mode, tx_buffer_bytes)


def simulate_routes(
    *,
    src_node: np.ndarray,
    step: np.ndarray,
    wire_bytes: np.ndarray,
    dep_ptr: np.ndarray,
    dep_idx: np.ndarray,
    links: np.ndarray,
    path_len: np.ndarray,
    vc_class: np.ndarray,
    link_bytes_per_cycle: np.ndarray,
    link_latency_cycles: np.ndarray,
    router_delay_cycles: float,
    ni_bytes_per_cycle: np.ndarray,
    num_nodes: int,
    nis_per_node: int,
    policy: int,
    issue_delay_cycles: float = 1.0,
    step_advance_cycles: float = 1.0,
    ni_free_delay_cycles: float = 0.0,
    first_start_cycles: float = 0.0,
    wormhole: RouteWormhole | None = None,
    shared_classes: bool = False,
    shared_capacity: np.ndarray | None = None,
    not_before: np.ndarray | None = None,
    step_priority: bool | None = None,
    dst_node: np.ndarray | None = None,
    reduce_work_cycles: np.ndarray | None = None,
    reduce_last_cycles: np.ndarray | None = None,
    reduce_latency_cycles: int = 0,
    reduce_mode: int = 0,
    tx_buffer_bytes: float = 0.0,
) -> TransferTimes:
    """:func:`simulate_transfers` for transfers given as routes over a topology's links
    (``links[i, :path_len[i]]``, injection and ejection links included, with their VC
    classes): the same event loop and the same times, but what it derives from a route
    (path and head latencies from ``link_latency_cycles`` plus ``router_delay_cycles`` per
    router crossed, input ports, the tail slot) it derives when the transfer starts, and it
    holds state only for the transfers under way, so its memory follows the transfers in
    flight rather than the schedule.

    The injection hop is the transfer's own NI: a resource of its own at
    ``ni_bytes_per_cycle[links[i, 0]]`` (whichever of the node's NIs is free sends it; the
    NI count limits a node's concurrent sends). ``shared_classes``: the transfers' packets
    share each (link, VC class) after the injection hop, at ``shared_capacity[link *
    classes + class]`` (per-packet flows with one VC per class)."""
    t = np.asarray(src_node).shape[0]
    _check_transfers(src_node, step, wire_bytes, path_len, policy)
    not_before = None if not_before is None else _per_transfer_cycles("not_before", not_before, t)
    link_cap = np.asarray(link_bytes_per_cycle, np.float64)
    w = RouteWormhole(1, 0, False, 0.0) if wormhole is None else wormhole
    if shared_classes and shared_capacity is None:
        raise ValueError("shared_classes needs shared_capacity (one capacity per link and VC class)")
    _check_shares(w.head_of_line_limit, w.saturated_share, w.hold_vcs)
    tail = np.zeros(link_cap.shape[0]) if w.tail_slot_cycles is None else np.asarray(w.tail_slot_cycles, np.float64)
    if tail.shape != link_cap.shape:
        raise ValueError(f"tail_slot_cycles must be one slot per link ({link_cap.shape[0]}), got shape {tail.shape}")
    ni = np.asarray(ni_bytes_per_cycle, np.float64)
    if ni.shape != link_cap.shape:
        raise ValueError(f"ni_bytes_per_cycle must be one rate per link ({link_cap.shape[0]}), got shape {ni.shape}")
    return _simulate(
        src_node, step, wire_bytes, dep_ptr, dep_idx, links, path_len, vc_class, link_cap,
        True, np.asarray(link_latency_cycles, np.float64), float(router_delay_cycles), ni, tail, _NO_F,
        _NO_F2, _NO_I2, _NO_F, 1 if shared_classes else 0, _NO_I2,
        _NO_F if shared_capacity is None else np.asarray(shared_capacity, np.float64),
        link_cap.shape[0] + t, num_nodes, nis_per_node, policy, issue_delay_cycles, step_advance_cycles,
        ni_free_delay_cycles, first_start_cycles, int(w.num_vc_classes), int(w.vcs_per_class), bool(w.hold_vcs),
        float(w.hop_buffer_bytes), float(w.head_of_line_limit), float(w.saturated_share), not_before, step_priority,
        dst_node, reduce_work_cycles, reduce_last_cycles, reduce_latency_cycles, reduce_mode, tx_buffer_bytes,
        with_heads=wormhole is not None)


_NO_F = np.zeros(1)  # placeholders for arrays a mode does not read
_NO_F2 = np.zeros((1, 1))
_NO_I2 = np.full((1, 1), -1, np.int64)

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


def _simulate(src_node, step, wire_bytes, dep_ptr, dep_idx, links, path_len, vc_class, link_cap, derived, link_lat,
              rd, ni_cap, tail, plat, head_lat, in_port, tail_in, extra_mode, extra, extra_cap, mod_links, num_nodes,
              nis, policy, issue_delay, step_advance, ni_free_delay, first_start, n_cls, vcs_per_class, hold_vcs,
              hop_buf, hol, saturated, not_before, step_priority, dst_node, reduce_work_cycles, reduce_last_cycles,
              reduce_latency_cycles, reduce_mode, tx_buffer_bytes, with_heads=True) -> TransferTimes:
    """Both entry points' common part: the reverse dependencies, the reduction unit's inputs,
    then :func:`_run` in a pool of :func:`initial_pool` slots, doubled until the transfers
    under way never want one slot (``derived``: routes as :func:`simulate_routes` takes them,
    heads' latencies from the links with ``with_heads``; otherwise every transfer's arrays)."""
    t = np.asarray(src_node).shape[0]
    if t >= 2**31 - 1:
        raise ValueError(f"{t:,} transfers are more than the event loop's 32-bit transfer ids hold")
    # one dtype per array whatever the caller built, so the event loop compiles once
    src_node, step, links = (_narrow(x, np.int32, name) for x, name in
                             ((src_node, "src_node"), (step, "step"), (links, "links")))
    path_len, vc_class = _narrow(path_len, np.int16, "path_len"), _narrow(vc_class, np.int8, "vc_class")
    dep_t = np.int32 if np.asarray(dep_idx).size < 2**31 - 1 else np.int64
    dep_ptr, dep_idx = _narrow(dep_ptr, dep_t, "dep_ptr"), _narrow(dep_idx, dep_t, "dep_idx")
    rdep_ptr, rdep_idx = reverse_dependencies(dep_ptr, dep_idx, t)
    prio = (policy == POLICY_CODESIGNED) if step_priority is None else bool(step_priority)
    if int(reduce_mode) != 0 and dst_node is None:
        raise ValueError("a reduction unit needs dst_node (each transfer's receiving node)")
    # the reduction unit's work is read only when there is a unit (otherwise every message is usable on arrival)
    has_red = int(reduce_mode) != 0 and (reduce_work_cycles is not None or reduce_last_cycles is not None)
    zero = np.zeros(1, np.int64)
    red_work = zero if reduce_work_cycles is None else np.asarray(reduce_work_cycles, np.int64)
    red_last = zero if reduce_last_cycles is None else np.asarray(reduce_last_cycles, np.int64)
    if has_red:
        # copied to writable C arrays of one type (as the placeholders are), so the event loop compiles once
        red_work = np.array(np.broadcast_to(red_work, (t,)) if red_work.shape == (1,) else red_work)
        red_last = np.array(np.broadcast_to(red_last, (t,)) if red_last.shape == (1,) else red_last)
        if red_work.shape != (t,) or red_last.shape != (t,):
            raise ValueError(f"reduce_work_cycles and reduce_last_cycles must be one count per transfer ({t})")
    dst = np.zeros(1, np.int32) if dst_node is None else _narrow(dst_node, np.int32, "dst_node")
    keep_ready = int(reduce_mode) != 0
    limit = EVENTS_PER_TRANSFER_LIMIT * (t + int(num_nodes)) + EVENTS_LIMIT_BASE
    hold = bool(hold_vcs and vcs_per_class > 0)
    h = int(links.shape[1])
    hr = h + (max(h - 1, 0) if extra_mode == 1 else (extra.shape[1] if extra_mode == 2 else 0)) + \
        (max(h - 2, 0) if hol > 0.0 else 0)
    nb = _NO_F if not_before is None else not_before
    pool = initial_pool(t, num_nodes, nis)
    # the loop's per-transfer state, allocated here (numpy asks for huge pages for large arrays:
    # the loop reaches these at random)
    work_i8 = np.empty(t, np.int8)
    work_i32 = np.empty((2, t), np.int32)
    work_f64 = np.empty(t)
    while True:
        if pool * hr >= 2**31:
            raise ValueError(f"{pool:,} transfers under way of {hr} rate resources each are more than the event "
                             "loop's 32-bit indices hold")
        start = np.full(t, np.inf)
        sent = np.full(t, np.inf)
        arrive = np.full(t, np.inf)
        ready = np.full(t if keep_ready else 1, np.inf)
        stats = np.zeros(4, np.int64)
        events = _run(
            np.asarray(src_node), np.asarray(step), np.asarray(wire_bytes, np.float64), np.asarray(dep_ptr),
            rdep_ptr, rdep_idx, links, np.asarray(path_len), vc_class, link_cap, derived, derived and with_heads,
            link_lat, float(rd), ni_cap,
            tail, plat, head_lat, in_port, tail_in, int(extra_mode), extra, extra_cap, int(mod_links), hr,
            int(num_nodes), int(nis), int(policy), float(issue_delay), float(step_advance), float(ni_free_delay),
            float(first_start), int(n_cls), int(vcs_per_class), hold, float(hop_buf), float(hol), float(saturated),
            prio, not_before is not None, nb, dst, has_red, red_work, red_last, float(reduce_latency_cycles),
            int(reduce_mode), float(tx_buffer_bytes), start, sent, arrive, ready, keep_ready, pool, limit, stats,
            work_i8, work_i32, work_f64)
        if stats[0] == 0:
            break
        pool *= 2  # two transfers under way wanted one slot: again with twice as many
    if events > limit:
        raise RuntimeError(f"message-level simulation did not finish within {limit:,} events ({t:,} transfers, "
                           f"{int(num_nodes):,} nodes): a time that never advances? (nic.message_sim.EVENTS_PER_TRANSFER_LIMIT)")
    if not np.isfinite(arrive).all():
        bad = int(np.nonzero(~np.isfinite(arrive))[0][0])
        raise RuntimeError(f"message-level simulation stalled: transfer {bad} never arrived (dependency cycle?)")
    return TransferTimes(start, sent, arrive, ready if keep_ready else None)


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


def _check_transfers(src_node, step, wire_bytes, path_len, policy):
    """Inputs the event loop cannot time (it would hang or blame a dependency cycle)."""
    w = np.asarray(wire_bytes, dtype=np.float64)
    if not np.isfinite(w).all() or (w < 0).any():
        bad = int(np.nonzero(~(np.isfinite(w) & (w >= 0)))[0][0])
        raise ValueError(f"wire_bytes must be finite and non-negative; transfer {bad} has {w[bad]}")
    short = np.nonzero(np.asarray(path_len) < 1)[0]
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


@njit(cache=True)
def _head_of_line_caps(active, na, rates, path_links, path_len, link_cap, saturated, in_res, rate_cap, limit, load,
                       injected, in_load, blocked, keep, cap_eff):
    """Lower to ``limit`` of its link the capacity (``cap_eff``) of every head-of-line
    blocked router input: it carries at least that share of its link, a flow ejects at
    this router, and a flow goes on into an output that is saturated, also carries a flow
    injected by this router's NI, and leads into another such input (so the inputs form,
    or lead into, a loop). An output is saturated when its flows fill ``saturated`` of the
    link. Returns True when some input was lowered. The other arguments are scratch
    arrays."""
    load[:] = 0.0
    injected[:] = False
    in_load[:] = 0.0
    blocked[:] = False
    for k in range(na):
        i = active[k]
        n = path_len[i]
        for h in range(n):
            load[path_links[i, h]] += rates[i]
        if n > 2:
            injected[path_links[i, 1]] = True  # leaves the router of its own NI
            blocked[in_res[i, n - 2]] = True  # an input with a flow ejecting next
        for h in range(1, n - 1):
            in_load[in_res[i, h]] += rates[i]
    for r in range(rate_cap.shape[0]):
        blocked[r] = blocked[r] and in_load[r] >= limit * rate_cap[r] * (1.0 - 1e-9)
    # an input stays blocked while one of its flows goes on through a contended output into
    # an input that stays blocked: on an open chain the last input drains and nothing is lost
    changed = True
    while changed:
        keep[:] = False
        for k in range(na):
            i = active[k]
            for h in range(1, path_len[i] - 2):
                out = path_links[i, h + 1]
                if blocked[in_res[i, h]] and blocked[in_res[i, h + 1]] and injected[out] and (
                        load[out] >= saturated * link_cap[out] * (1.0 - 1e-9)):
                    keep[in_res[i, h]] = True
        changed = False
        for r in range(rate_cap.shape[0]):
            if blocked[r] and not keep[r]:
                blocked[r] = False
                changed = True
    lowered = False
    for r in range(rate_cap.shape[0]):
        cap_eff[r] = limit * rate_cap[r] if blocked[r] else rate_cap[r]
        lowered = lowered or blocked[r]
    return lowered


@njit(cache=True, inline="always")
def _activate(s, i, now, catch_hops, sst, status, head_hop, head_key, head_lat, heads, n_heads, active, n_active,
              hold, path_len):
    """Transfer i (in slot s) goes on the network: its head starts acquiring VCs
    (``hold``), or it starts flowing at once. Returns True when the set of flowing
    transfers changed."""
    status[i] = _STARTED
    if hold and path_len[s] > 1:
        sst[s] = _HEAD
        head_hop[s] = 1
        # a transfer queued behind its NI's previous one has its head right behind that
        # one's tail: it is at the first router already, and does not travel the hops
        # the two routes share again
        head_key[s] = now if catch_hops[s] > 0 else now + head_lat[s, 1]
        heads[n_heads[0]] = s
        n_heads[0] += 1
        return False
    sst[s] = _SENDING
    active[n_active[0]] = s
    n_active[0] += 1
    return True


@njit(cache=True)
def _bottlenecks(active, na, rates, path_links, path_len, link_cap, load, max_rate, bneck):
    """Each flow's first bottleneck: the first saturated link of its route on which it gets
    the largest rate (or any saturated one when it is starved); 0 when none."""
    for k in range(na):
        i = active[k]
        for h in range(path_len[i]):
            load[path_links[i, h]] = 0.0
            max_rate[path_links[i, h]] = 0.0
    for k in range(na):
        i = active[k]
        for h in range(path_len[i]):
            lk = path_links[i, h]
            load[lk] += rates[i]
            if rates[i] > max_rate[lk]:
                max_rate[lk] = rates[i]
    for k in range(na):
        i = active[k]
        bn = 0
        for h in range(path_len[i]):
            lk = path_links[i, h]
            if load[lk] >= link_cap[lk] * (1.0 - 1e-9) and (
                    rates[i] >= max_rate[lk] * (1.0 - 1e-9) or rates[i] == 0.0):
                bn = h
                break
        bneck[i] = bn


@njit(cache=True)
def _count_backed(active, na, path_links, bneck, n_backed):
    """Per link: how many flows are held back beyond the buffer at its far end (set on the
    links before each flow's bottleneck, the only ones read)."""
    for k in range(na):
        i = active[k]
        for h in range(bneck[i]):
            n_backed[path_links[i, h]] = 0
    for k in range(na):
        i = active[k]
        for h in range(bneck[i]):
            lk = path_links[i, h]
            n_backed[lk] += 1


@njit(cache=True, inline="always")
def _buffered_beyond(hshare, p, c, bn):
    """Buffer bytes flow p may hold at the ends of hops c .. bn - 1."""
    s = 0.0
    for h in range(c, bn):
        s += hshare[p, h]
    return s


def _per_transfer_cycles(name: str, values, t: int) -> np.ndarray:
    """``values`` as float64[t] cycle counts (zeros for None); a clear error otherwise."""
    out = np.zeros(t) if values is None else np.asarray(values, dtype=np.float64)
    if out.shape != (t,) or not (np.isfinite(out).all() and (out >= 0).all()):
        raise ValueError(f"{name} must be {t} finite cycle counts >= 0, one per transfer")
    return out


@njit(cache=True, inline="always")
def _heap_push(keys, ids, size, key, ident):
    """Push ``(key, ident)`` on the binary min-heap in ``keys[:size]``, ``ids[:size]``; returns the new size."""
    k = size
    keys[k] = key
    ids[k] = ident
    while k > 0:
        parent = (k - 1) // 2
        if keys[parent] < keys[k] or (keys[parent] == keys[k] and ids[parent] <= ids[k]):
            break
        keys[parent], keys[k] = keys[k], keys[parent]
        ids[parent], ids[k] = ids[k], ids[parent]
        k = parent
    return size + 1


@njit(cache=True, inline="always")
def _join_users(res, res_first, nd_next, hr, comp_mark, stamp, comp, nc):
    """Append to ``comp[:nc]`` the flows on resource ``res`` not yet in it (marked with
    ``stamp``); returns the new count."""
    nd = res_first[res]
    while nd >= 0:
        f = nd // hr
        if comp_mark[f] != stamp:
            comp_mark[f] = stamp
            comp[nc] = f
            nc += 1
        nd = nd_next[nd]
    return nc


@njit(cache=True, inline="always")
def _offer_head(s, ident, res, key, b_first, b_next, b_res, hp_key, hp_id, n_hp):
    """Head in slot ``s`` (transfer ``ident``) may take a VC of resource ``res`` in this
    instant: into that resource's bucket and onto the heap by ``(key, ident)`` (grown when
    full). Returns the heap."""
    b_next[s] = b_first[res]
    b_first[res] = s
    b_res[s] = res
    return _heap_push_grow(hp_key, hp_id, n_hp, key, ident)


@njit(cache=True, inline="always")
def _heap_push_grow(keys, ids, size, key, ident):
    """:func:`_heap_push`, doubling the heap's arrays when full. Returns (keys, ids, size)."""
    if size == keys.shape[0]:
        k = np.empty(2 * size + 1)
        d = np.empty(2 * size + 1, dtype=np.int64)
        k[:size] = keys[:size]
        d[:size] = ids[:size]
        keys, ids = k, d
    return keys, ids, _heap_push(keys, ids, size, key, ident)


@njit(cache=True, inline="always")
def _mark(flag, lst, n, v):
    """Add ``v`` to the set kept as ``flag`` and ``lst[:n]``; returns the new count."""
    if not flag[v]:
        flag[v] = True
        lst[n] = v
        n += 1
    return n


@njit(cache=True, inline="always")
def _mark_woken(ident, src_node, num_nodes, flag, lst, n):
    """A wake-up for transfer ``ident`` (-1: every transfer without dependencies) marks its node(s)."""
    if ident < 0:
        for v in range(num_nodes):
            n = _mark(flag, lst, n, v)
        return n
    return _mark(flag, lst, n, src_node[ident])


@njit(cache=True, inline="always")
def _heap_pop(keys, ids, size):
    """Remove the smallest entry of the heap of ``size`` entries; returns the new size."""
    size -= 1
    keys[0] = keys[size]
    ids[0] = ids[size]
    k = 0
    while True:
        a = 2 * k + 1
        if a >= size:
            break
        b = a + 1
        if b < size and (keys[b] < keys[a] or (keys[b] == keys[a] and ids[b] < ids[a])):
            a = b
        if keys[k] < keys[a] or (keys[k] == keys[a] and ids[k] <= ids[a]):
            break
        keys[a], keys[k] = keys[k], keys[a]
        ids[a], ids[k] = ids[k], ids[a]
        k = a
    return size


@njit(cache=True, inline="always")
def _gap_limit(t_next, now):
    """A bound above ``t_next - now`` by far more than the rounding of ``now + x / y`` (and of
    the test ``x >= bound * y``): a quotient x / y at or above it cannot give a time before
    ``t_next``."""
    return (t_next - now) + (abs(t_next - now) + abs(now) + 1.0) * 1e-9


@njit(cache=True, inline="always")
def _state(p, status, tid, mask, sst):
    """Transfer p's state: waiting, the state of its slot, or arrived once its slot is free again."""
    if status[p] == _WAITING:
        return _WAITING
    s = p & mask
    return sst[s] if tid[s] == p else _ARRIVED


@njit(cache=True)
def _run(src_node, step, wire_bytes, dep_ptr, rdep_ptr, rdep_idx, links, path_len, cls_in, link_cap_in, derived,
         heads_from_links, link_lat, rd, ni_cap_link, tail_link, plat_in, head_lat_in, in_port_in, tail_in, extra_mode, extra_in,
         extra_cap, mod_links, hr, num_nodes, nis, policy, issue_delay, step_advance, ni_free_delay, first_start,
         n_cls, vcs_per_class, hold, hop_buf, hol, saturated, step_prio, has_nb, not_before, dst_node, has_red,
         red_work, red_last, red_latency, red_mode, txb, start, sent, arrive, ready, keep_ready, pool, max_events,
         stats, work_i8, work_i32, work_f64):
    """The event loop. State per transfer: whether it started, its dependencies left, when
    its inputs are ready, its times. Everything else a transfer needs while it is under way
    lives in slot ``i & (pool - 1)`` of a pool of ``pool`` slots (a power of two), taken when
    it starts and given back once it has arrived and its NI is released (``stats[0]`` = 1
    and -1 returned when a transfer finds its slot taken; ``stats[1]`` = the most slots in
    use). Returns the number of events."""
    t_count = src_node.shape[0]
    hw = links.shape[1]
    nl = link_cap_in.shape[0]  # links (with ``derived``, the NIs' own resources follow them, one per slot)
    nlr = nl + pool if derived else nl
    n_ext = extra_cap.shape[0] if extra_mode != 0 else 0
    ext_base = nlr
    in_base = nlr + n_ext
    n_res = in_base + (nl if hol > 0.0 else 0)
    # ---- per transfer
    status = work_i8  # _WAITING or _STARTED
    status[:] = _WAITING
    deps_left = work_i32[0]
    rdy = work_f64  # latest time a dependency's data became usable; once none is left, when it may start
    rdy[:] = 0.0
    for i in range(t_count):
        deps_left[i] = dep_ptr[i + 1] - dep_ptr[i]
        if deps_left[i] == 0:
            rdy[i] = first_start
    # ---- per resource: links (then the NIs' own, with ``derived``), shared resources, router inputs
    lcap = np.empty(nlr)
    lcap[:nl] = link_cap_in
    rate_cap = np.empty(n_res)
    rate_cap[:nl] = link_cap_in
    if derived:
        lcap[nl:] = 0.0
        rate_cap[nl:nlr] = 0.0
    rate_cap[ext_base:ext_base + n_ext] = extra_cap[:n_ext]
    if hol > 0.0:
        rate_cap[in_base:] = link_cap_in
    cap_left = np.empty(n_res)
    users = np.empty(n_res, dtype=np.int64)
    load = np.zeros(nlr)
    max_rate = np.zeros(nlr)
    injected = np.zeros(nlr, dtype=np.bool_)
    in_load = np.zeros(n_res)
    blocked = np.zeros(n_res, dtype=np.bool_)
    keep = np.zeros(n_res, dtype=np.bool_)
    cap_eff = rate_cap.copy()
    n_backed = np.zeros(nlr, dtype=np.int64)
    res_first = np.full(n_res, -1, dtype=np.int32)
    res_mark = np.zeros(n_res, dtype=np.int64)
    # wormhole: free VCs per (link, class), VC allocators' round-robin pointers, heads' buckets
    vc_free = np.full(nl * n_cls, vcs_per_class, dtype=np.int32)
    va_ptr = np.full(nl * n_cls, -1, dtype=np.int32)
    b_first = np.full(nl * n_cls, -1, dtype=np.int32)
    # ---- per slot
    tid = np.full(pool, -1, dtype=np.int32)
    sst = np.zeros(pool, dtype=np.int8)
    plink = np.full((pool, hw), -1, dtype=np.int32)  # hop 0 is the NI's own resource with ``derived``
    pcls = np.zeros((pool, hw), dtype=np.int8)
    plen = np.zeros(pool, dtype=np.int32)
    head_lat = np.zeros((pool, hw))
    in_port = np.full((pool, hw), -1, dtype=np.int32)
    hshare = np.zeros((pool, hw))  # buffer bytes a flow may fill at the end of each hop before its bottleneck
    in_res = np.full((pool, hw) if hol > 0.0 else (1, 1), -1, dtype=np.int32)
    rate_links = np.full((pool, hr), -1, dtype=np.int32)
    rate_len = np.zeros(pool, dtype=np.int32)
    path_lat = np.zeros(pool)
    tail_slot = np.zeros(pool)
    wire = np.zeros(pool)
    rem = np.zeros(pool)  # bytes not yet past the bottleneck
    inj = np.zeros(pool)  # bytes not yet out of the NI
    tol = np.zeros(pool)
    cap_ni = np.zeros(pool)
    rates = np.zeros(pool)
    slack = np.zeros(pool)  # bytes the flow may have buffered in the network (pipeline + buffers)
    pipe = np.zeros(pool)  # bytes already in the network when it started flowing
    bneck = np.zeros(pool, dtype=np.int32)  # hop of its first bottleneck
    tail_lat = np.zeros(pool)  # from the last byte passing the bottleneck to the arrival
    done_at = np.full(pool, np.inf)
    priority = np.zeros(pool, dtype=np.int32)
    head_hop = np.zeros(pool, dtype=np.int32)
    head_key = np.zeros(pool)
    waits_on = np.full(pool, -1, dtype=np.int32)  # the transfer a queued one waits behind
    common = np.zeros(pool, dtype=np.int32)  # hops shared with that predecessor (the injection hop included)
    catch_hops = np.zeros(pool, dtype=np.int32)
    inherit = np.zeros(pool)  # bytes injected behind the predecessor while it drained
    buffered_at_sent = np.zeros(pool)
    tx_only = np.zeros(pool, dtype=np.bool_)  # queued only behind its NI's transmit queue
    free_at = np.full(pool, np.inf)  # pending NI releases (finite until the NI is free)
    b_next = np.full(pool, -1, dtype=np.int32)
    b_res = np.full(pool, -1, dtype=np.int32)
    nd_next = np.empty(pool * hr, dtype=np.int32)  # the flows on each rate resource, as linked lists
    nd_prev = np.empty(pool * hr, dtype=np.int32)
    listed = np.zeros(pool, dtype=np.bool_)
    comp_mark = np.zeros(pool, dtype=np.int32)
    mask = pool - 1  # transfer i's slot is i & mask (transfers under way together are close in the schedule)
    live = 0
    pend = np.empty(pool, dtype=np.int32)  # slots given back once this event's departed flows are re-rated
    n_pend = 0
    # lists of slots (queued, due: transfer ids)
    active = np.empty(pool, dtype=np.int32)  # flowing: SENDING or DRAINING
    n_active = np.zeros(1, dtype=np.int64)
    heads = np.empty(pool, dtype=np.int32)  # acquiring VCs
    n_heads = np.zeros(1, dtype=np.int64)
    fly = np.empty(pool, dtype=np.int32)  # IN_FLIGHT
    n_fly = 0
    rel = np.empty(pool, dtype=np.int32)  # NIs being released
    n_rel = 0
    queued = np.empty(pool, dtype=np.int32)  # QUEUED (transfer ids)
    n_queued = 0
    due = np.empty(pool, dtype=np.int32)  # scratch: transfers handled in one pass, in schedule order
    comp = np.empty(pool, dtype=np.int32)
    gone = np.empty(pool, dtype=np.int32)
    n_gone = 0
    stamp = 0
    # ---- per node and NI
    unit_free = np.zeros(num_nodes)  # reduction unit of each node: busy until
    ni_busy = np.zeros(num_nodes, dtype=np.int64)
    slot_tx = np.full(num_nodes * nis, -1, dtype=np.int64)  # the transfer each NI started last
    unstarted_in_step = np.zeros(num_nodes, dtype=np.int64)
    open_step = np.full(num_nodes, -1, dtype=np.int64)
    open_at = np.zeros(num_nodes)
    node_ptr = np.zeros(num_nodes + 1, dtype=np.int64)
    for i in range(t_count):
        node_ptr[src_node[i] + 1] += 1
    for n in range(num_nodes):
        node_ptr[n + 1] += node_ptr[n]
    node_tx = work_i32[1]
    fill = node_ptr[:-1].copy()
    for i in range(t_count):
        node_tx[fill[src_node[i]]] = i
        fill[src_node[i]] += 1
    for n in range(num_nodes):
        if node_ptr[n] < node_ptr[n + 1]:
            s0 = step[node_tx[node_ptr[n]]]
            open_step[n] = s0
            c = 0
            for j in range(node_ptr[n], node_ptr[n + 1]):
                if step[node_tx[j]] == s0:
                    c += 1
            unstarted_in_step[n] = c
    cur = node_ptr[:-1].copy()  # per node: no WAITING transfer before this index of node_tx
    # nodes that may start a transfer (only they are looked at), and nodes whose step may end
    wake_flag = np.zeros(num_nodes, dtype=np.bool_)
    wake_list = np.empty(num_nodes, dtype=np.int64)
    n_wk = 0
    lock_flag = np.zeros(num_nodes, dtype=np.bool_)
    lock_list = np.empty(num_nodes, dtype=np.int64)
    n_lk = 0
    for n in range(num_nodes):
        n_wk = _mark(wake_flag, wake_list, n_wk, n)
    # waiting transfers whose data is ready: a heap of (when they may start, transfer); without
    # not_before, those without dependencies are one entry (transfer -1) at first_start
    wake_key = np.empty(1024)
    wake_id = np.empty(1024, dtype=np.int64)
    n_wake = 0
    any_free = False
    for i in range(t_count):
        if deps_left[i] == 0:
            if has_nb:
                wake_key, wake_id, n_wake = _heap_push_grow(wake_key, wake_id, n_wake, max(rdy[i], not_before[i]), i)
            else:
                any_free = True
    if any_free:
        wake_key, wake_id, n_wake = _heap_push_grow(wake_key, wake_id, n_wake, first_start, -1)
    # steps opening later (co-designed): a heap of (open_at, node)
    open_key = np.empty(num_nodes + 1)
    open_id = np.empty(num_nodes + 1, dtype=np.int64)
    n_open = 0
    hp_key = np.empty(1024)
    hp_id = np.empty(1024, dtype=np.int64)
    share_bufs = hop_buf > 0.0 and not hold
    arrived = 0
    now = 0.0
    rates_dirty = True
    n_events = 0
    while arrived < t_count:
        n_events += 1
        if n_events > max_events:  # a bound, so that no input can keep the compiled loop (and Ctrl-C) waiting
            return n_events
        # ---- start what may start now (schedule order within each node), at the nodes where
        # something changed: an NI released, an input ready, a step opened
        if n_wk > 0:
            whole = n_wk * 8 > num_nodes
            if not whole and n_wk > 1:
                wake_list[:n_wk] = np.sort(wake_list[:n_wk])
            n_scan = num_nodes if whole else n_wk
            for q in range(n_scan):
                n = q if whole else wake_list[q]
                if not wake_flag[n]:
                    continue
                wake_flag[n] = False
                if ni_busy[n] >= nis:
                    continue
                while cur[n] < node_ptr[n + 1] and status[node_tx[cur[n]]] != _WAITING:
                    cur[n] += 1
                for j in range(cur[n], node_ptr[n + 1]):
                    if ni_busy[n] >= nis:
                        break
                    i = node_tx[j]
                    if status[i] != _WAITING:
                        continue
                    if policy == POLICY_CODESIGNED:
                        if step[i] != open_step[n] or open_at[n] > now:
                            break  # later steps wait for the lockstep
                    if deps_left[i] == 0 and rdy[i] <= now and (not has_nb or not_before[i] <= now):
                        start[i] = now
                        # a slot for the transfer's state while it is under way
                        s = i & mask
                        if tid[s] >= 0:  # taken by a transfer still under way
                            stats[0] = 1
                            return -1
                        live += 1
                        if live > stats[1]:
                            stats[1] = live
                        tid[s] = i
                        ln = path_len[i]
                        plen[s] = ln
                        for h in range(hw):
                            plink[s, h] = links[i, h]
                            pcls[s, h] = cls_in[i, h] if (heads_from_links or not derived) else 0
                            hshare[s, h] = 0.0
                        if derived:
                            l0 = links[i, 0]
                            plink[s, 0] = nl + s
                            lcap[nl + s] = ni_cap_link[l0]
                            rate_cap[nl + s] = ni_cap_link[l0]
                            cap_ni[s] = ni_cap_link[l0]
                            tail_slot[s] = tail_link[l0]
                            pl = 0.0
                            for h in range(ln):
                                pl += link_lat[links[i, h]]
                            path_lat[s] = pl + rd * max(ln - 1, 0)
                            head_lat[s, 0] = 0.0
                            in_port[s, 0] = -1
                            for h in range(1, hw):
                                if heads_from_links:
                                    pv = links[i, h - 1]
                                    head_lat[s, h] = head_lat[s, h - 1] + (link_lat[pv] if pv >= 0 else 0.0) + rd
                                    in_port[s, h] = pv
                                else:
                                    head_lat[s, h] = 0.0
                                    in_port[s, h] = -1
                        else:
                            cap_ni[s] = link_cap_in[links[i, 0]]
                            tail_slot[s] = tail_in[i]
                            path_lat[s] = plat_in[i]
                            for h in range(hw):
                                head_lat[s, h] = head_lat_in[i, h]
                                in_port[s, h] = in_port_in[i, h]
                        rl = 0
                        for h in range(ln):
                            rate_links[s, rl] = plink[s, h]
                            rl += 1
                        if extra_mode == 1:
                            for h in range(1, ln):
                                rate_links[s, rl] = ext_base + links[i, h] * n_cls + cls_in[i, h]
                                rl += 1
                        elif extra_mode == 2:
                            for e in range(extra_in.shape[1]):
                                if extra_in[i, e] >= 0:
                                    rate_links[s, rl] = ext_base + extra_in[i, e]
                                    rl += 1
                        if hol > 0.0:
                            for h in range(hw):
                                in_res[s, h] = -1
                            for h in range(1, ln - 1):
                                in_res[s, h] = in_base + links[i, h]
                                rate_links[s, rl] = in_base + links[i, h]
                                rl += 1
                        rate_len[s] = rl
                        w = wire_bytes[i]
                        wire[s] = w
                        rem[s] = w
                        inj[s] = w
                        tol[s] = 1e-9 * w + 1e-12
                        rates[s] = 0.0
                        slack[s] = 0.0
                        pipe[s] = 0.0
                        bneck[s] = 0
                        tail_lat[s] = path_lat[s] - tail_slot[s]
                        done_at[s] = np.inf
                        priority[s] = step[i] if step_prio else 0
                        head_hop[s] = 0
                        head_key[s] = 0.0
                        waits_on[s] = -1
                        common[s] = 0
                        catch_hops[s] = 0
                        inherit[s] = 0.0
                        buffered_at_sent[s] = 0.0
                        tx_only[s] = False
                        free_at[s] = np.inf
                        b_next[s] = -1
                        b_res[s] = -1
                        listed[s] = False
                        comp_mark[s] = 0
                        ni_busy[n] += 1
                        if policy == POLICY_CODESIGNED:
                            unstarted_in_step[n] -= 1
                            n_lk = _mark(lock_flag, lock_list, n_lk, n)
                        slot = n * nis  # the lowest free NI
                        while slot_tx[slot] >= 0:
                            p = slot_tx[slot]
                            if _state(p, status, tid, mask, sst) > _SENDING and (
                                    tid[p & mask] != p or free_at[p & mask] == np.inf):
                                break
                            slot += 1
                        prev = slot_tx[slot]
                        slot_tx[slot] = i
                        pst = _state(prev, status, tid, mask, sst) if prev >= 0 else _WAITING
                        ps = prev & mask
                        # per-packet flows fill every VC of their class: the next transfer is behind
                        # the draining one; a bulk packet holds one VC per hop, and with more per class
                        # the next one takes another VC (VC holding decides when it can go on)
                        in_tx = txb > 0.0 and prev >= 0 and pst == _DRAINING and inj[ps] > tol[ps]
                        if prev >= 0 and pst == _DRAINING and (in_tx or not (hold and vcs_per_class > 1)):
                            # with a bulk packet per VC, only the rest in the transmit queue is ahead of it
                            tx_only[s] = hold and vcs_per_class > 1
                            status[i] = _STARTED
                            sst[s] = _QUEUED
                            queued[n_queued] = i
                            n_queued += 1
                            waits_on[s] = prev
                            c = 1
                            while c < plen[s] and c < plen[ps] and plink[s, c] == plink[ps, c]:
                                c += 1
                            common[s] = c
                        elif _activate(s, i, now, catch_hops, sst, status, head_hop, head_key, head_lat, heads,
                                       n_heads, active, n_active, hold, plen):
                            rates_dirty = True
            n_wk = 0
        # ---- heads acquire VCs hop by hop: a free VC goes to the most urgent head, then
        # round-robin over input ports from the one served last, then the earliest (then the
        # one earlier in the schedule); resources are served in the order of their earliest
        # eligible head
        if n_heads[0] > 0:
            n_hp = 0
            # (a resource without a free VC now has none in this instant either: its heads are not offered)
            for k in range(n_heads[0]):
                s = heads[k]
                h = head_hop[s]
                if head_key[s] <= now or h < catch_hops[s]:
                    r = plink[s, h] * n_cls + pcls[s, h]
                    if vc_free[r] > 0:
                        hp_key, hp_id, n_hp = _offer_head(s, tid[s], r, head_key[s], b_first, b_next, b_res, hp_key,
                                                          hp_id, n_hp)
            while n_hp > 0:
                c = hp_id[0] & mask
                ck = hp_key[0]
                n_hp = _heap_pop(hp_key, hp_id, n_hp)
                r = b_res[c] if ck == head_key[c] else -1  # an entry from before the head moved on: stale
                while r >= 0 and vc_free[r] > 0 and b_res[c] == r:
                    best = -1
                    best_prev = -1
                    best_d = 0
                    prev = -1
                    s = b_first[r]
                    while s >= 0:
                        d = (in_port[s, head_hop[s]] - va_ptr[r] - 1) % mod_links
                        if best < 0:
                            better = True
                        else:
                            better = priority[s] < priority[best] or (priority[s] == priority[best] and (
                                d < best_d or (d == best_d and (head_key[s] < head_key[best] or (
                                    head_key[s] == head_key[best] and tid[s] < tid[best])))))
                        if better:
                            best = s
                            best_prev = prev
                            best_d = d
                        prev = s
                        s = b_next[s]
                    s = best
                    h = head_hop[s]
                    if best_prev < 0:
                        b_first[r] = b_next[s]
                    else:
                        b_next[best_prev] = b_next[s]
                    b_res[s] = -1
                    va_ptr[r] = in_port[s, h]
                    vc_free[r] -= 1
                    if h + 1 < plen[s]:
                        head_hop[s] = h + 1
                        if h + 1 < catch_hops[s]:
                            head_key[s] = now
                        else:
                            head_key[s] = max(head_key[s], now) + head_lat[s, h + 1] - head_lat[s, h]
                        rn = plink[s, h + 1] * n_cls + pcls[s, h + 1]
                        if (head_key[s] <= now or h + 1 < catch_hops[s]) and vc_free[rn] > 0:  # on at once: eligible again
                            hp_key, hp_id, n_hp = _offer_head(s, tid[s], rn, head_key[s], b_first, b_next, b_res, hp_key,
                                                              hp_id, n_hp)
                    else:  # the head is at the destination: the data follows at the flow's rate
                        sst[s] = _SENDING
                        active[n_active[0]] = s
                        n_active[0] += 1
                        rates_dirty = True
                        # the NI kept injecting behind the head: those bytes are in the network
                        pre = max(head_lat[s, h] * cap_ni[s], inherit[s])
                        if pre > wire[s]:
                            pre = wire[s]
                        inj[s] = wire[s] - pre
                        pipe[s] = pre
                        tail_lat[s] = path_lat[s] - head_lat[s, h] - tail_slot[s]
            # empty the buckets; keep the heads still acquiring, in their order
            kept = 0
            for k in range(n_heads[0]):
                s = heads[k]
                if b_res[s] >= 0:
                    b_first[b_res[s]] = -1
                    b_res[s] = -1
                if sst[s] == _HEAD:
                    heads[kept] = s
                    kept += 1
            n_heads[0] = kept
        if rates_dirty:
            na = n_active[0]
            if hol > 0.0:  # the head-of-line rule looks at every input port: all flows at once
                nc = na
                comp[:na] = active[:na]
            else:
                # only the flows that share a rate resource, transitively, with a flow that
                # came or went: max-min fairness splits into these components
                stamp += 1
                nc = 0
                for k in range(na):
                    s = active[k]
                    if not listed[s]:
                        listed[s] = True
                        for h in range(rate_len[s]):
                            nd = s * hr + h
                            rr = rate_links[s, h]
                            nd_next[nd] = res_first[rr]
                            nd_prev[nd] = -1
                            if res_first[rr] >= 0:
                                nd_prev[res_first[rr]] = nd
                            res_first[rr] = nd
                        comp_mark[s] = stamp
                        comp[nc] = s
                        nc += 1
                for g in range(n_gone):
                    s = gone[g]
                    for h in range(rate_len[s]):
                        nc = _join_users(rate_links[s, h], res_first, nd_next, hr, comp_mark, stamp, comp, nc)
                n_gone = 0
                q = 0
                while q < nc:
                    s = comp[q]
                    q += 1
                    for h in range(rate_len[s]):
                        rr = rate_links[s, h]
                        if res_mark[rr] == stamp:
                            continue
                        res_mark[rr] = stamp
                        nc = _join_users(rr, res_first, nd_next, hr, comp_mark, stamp, comp, nc)
            max_min_rates(comp[:nc], priority, rate_links, rate_len, rate_cap, rates, cap_left, users)
            if hol > 0.0 and _head_of_line_caps(active, na, rates, plink, plen, lcap, saturated, in_res,
                                                rate_cap, hol, load, injected, in_load, blocked, keep, cap_eff):
                max_min_rates(active[:na], priority, rate_links, rate_len, cap_eff, rates, cap_left, users)
            rates_dirty = False
            if hop_buf > 0.0:
                _bottlenecks(comp, nc, rates, plink, plen, lcap, load, max_rate, bneck)
                if share_bufs:
                    _count_backed(comp, nc, plink, bneck, n_backed)
                for k in range(nc):
                    s = comp[k]
                    sl = 0.0
                    for h in range(bneck[s]):
                        hshare[s, h] = hop_buf / n_backed[plink[s, h]] if share_bufs else hop_buf
                        sl += hshare[s, h]
                    slack[s] = sl + pipe[s]
            else:
                for k in range(nc):
                    slack[comp[k]] = pipe[comp[k]]
        # the slots of transfers that are over (departed flows have been re-rated above)
        for q in range(n_pend):
            tid[pend[q]] = -1
            live -= 1
        n_pend = 0
        # ---- the next event. A time now + x / y is computed only when it may come before the
        # earliest so far: with x >= lim * y it is later (lim: that gap, widened by far more than
        # the rounding of the division and the sums), and the division is skipped.
        t_next = np.inf
        lim = np.inf
        for k in range(n_active[0]):
            s = active[k]
            r = rates[s]
            if r > 0.0 and rem[s] < lim * r:
                tt = now + rem[s] / r
                if tt < t_next:
                    t_next = tt
                    lim = _gap_limit(t_next, now)
            if sst[s] == _SENDING:
                b = rem[s] - inj[s]
                left = max(inj[s] - txb, 0.0)  # to leave the NI before it is free
                if b < slack[s] - tol[s] and cap_ni[s] > r * (1.0 + 1e-12):
                    # filling the buffers: the NI injects at full speed until they are full
                    if slack[s] - b < lim * (cap_ni[s] - r) or left < lim * cap_ni[s]:
                        tt = now + min((slack[s] - b) / (cap_ni[s] - r), left / cap_ni[s])
                        if tt < t_next:
                            t_next = tt
                            lim = _gap_limit(t_next, now)
                elif r > 0.0 and left < lim * r:
                    tt = now + left / r
                    if tt < t_next:
                        t_next = tt
                        lim = _gap_limit(t_next, now)
            elif sst[s] == _DRAINING and inj[s] > tol[s] and r > 0.0 and inj[s] < lim * r:
                tt = now + inj[s] / r  # its transmit queue is empty
                if tt < t_next:
                    t_next = tt
                    lim = _gap_limit(t_next, now)
        for k in range(n_heads[0]):
            s = heads[k]
            if now < head_key[s] < t_next:
                t_next = head_key[s]
        for q in range(n_queued):
            s = queued[q] & mask
            p = waits_on[s]
            ps = p & mask
            if _state(p, status, tid, mask, sst) == _DRAINING and rates[ps] > 0.0:
                tt = now + (rem[ps] - _buffered_beyond(hshare, ps, common[s], bneck[ps])) / rates[ps]
                if now < tt < t_next:
                    t_next = tt
        for q in range(n_fly):
            s = fly[q]
            if done_at[s] + tail_lat[s] < t_next:
                t_next = done_at[s] + tail_lat[s]
        while n_wake > 0 and wake_key[0] <= now:  # those may start (or wait for their NI or step) now
            n_wk = _mark_woken(wake_id[0], src_node, num_nodes, wake_flag, wake_list, n_wk)
            n_wake = _heap_pop(wake_key, wake_id, n_wake)
        if n_wake > 0 and wake_key[0] < t_next:
            t_next = wake_key[0]
        while n_open > 0 and open_key[0] <= now:
            n_wk = _mark(wake_flag, wake_list, n_wk, open_id[0])
            n_lk = _mark(lock_flag, lock_list, n_lk, open_id[0])
            n_open = _heap_pop(open_key, open_id, n_open)
        if n_open > 0 and open_key[0] < t_next:
            t_next = open_key[0]
        for q in range(n_rel):
            if free_at[rel[q]] < t_next:
                t_next = free_at[rel[q]]
        if t_next == np.inf:
            return n_events  # stalled: the caller reports the transfer that never arrived
        dt = t_next - now
        now = t_next
        # ---- flows move on; the last byte left the NI: the NI is free; the last byte passed
        # the bottleneck: in flight
        k = 0
        while k < n_active[0]:
            s = active[k]
            r = rates[s]
            if sst[s] == _SENDING:
                b = rem[s] - inj[s]
                if b < slack[s] - tol[s] and cap_ni[s] > r * (1.0 + 1e-12):
                    inj[s] -= cap_ni[s] * dt
                else:
                    inj[s] -= r * dt
                if inj[s] < 0.0:
                    inj[s] = 0.0
            elif sst[s] == _DRAINING and inj[s] > 0.0:
                inj[s] = max(inj[s] - r * dt, 0.0)  # the rest in the transmit queue leaves
            rem[s] -= r * dt
            if sst[s] == _SENDING and (inj[s] <= txb + tol[s] or rem[s] <= tol[s]):
                sst[s] = _DRAINING
                sent[tid[s]] = now
                free_at[s] = now + ni_free_delay  # released below, in this pass when there is no delay
                rel[n_rel] = s
                n_rel += 1
                buffered_at_sent[s] = max(rem[s] - inj[s], 0.0)
            if rem[s] <= tol[s]:
                sst[s] = _IN_FLIGHT
                fly[n_fly] = s
                n_fly += 1
                done_at[s] = now
                # the last flow in the list moves here, and is moved on when this place is looked at again
                active[k] = active[n_active[0] - 1]
                n_active[0] -= 1
                rates_dirty = True
                if listed[s]:  # off its resources' lists; its neighbours are rated again
                    listed[s] = False
                    for h in range(rate_len[s]):
                        nd = s * hr + h
                        if nd_prev[nd] >= 0:
                            nd_next[nd_prev[nd]] = nd_next[nd]
                        else:
                            res_first[rate_links[s, h]] = nd_next[nd]
                        if nd_next[nd] >= 0:
                            nd_prev[nd_next[nd]] = nd_prev[nd]
                    gone[n_gone] = s
                    n_gone += 1
                if hold:
                    for h in range(1, plen[s]):
                        vc_free[plink[s, h] * n_cls + pcls[s, h]] += 1
            else:
                k += 1
        # wake-ups that are due now
        while n_wake > 0 and wake_key[0] <= now:
            n_wk = _mark_woken(wake_id[0], src_node, num_nodes, wake_flag, wake_list, n_wk)
            n_wake = _heap_pop(wake_key, wake_id, n_wake)
        while n_open > 0 and open_key[0] <= now:
            n_wk = _mark(wake_flag, wake_list, n_wk, open_id[0])
            n_lk = _mark(lock_flag, lock_list, n_lk, open_id[0])
            n_open = _heap_pop(open_key, open_id, n_open)
        # ---- queued transfers go once their predecessor's tail has left the shared buffers
        if n_queued > 0:
            n_due = n_queued
            due[:n_due] = np.sort(queued[:n_queued])  # in schedule order
            n_queued = 0
            for q in range(n_due):
                i = due[q]
                s = i & mask
                p = waits_on[s]
                ps = p & mask
                pst = _state(p, status, tid, mask, sst)
                thr = 0.0
                go = True
                if pst == _DRAINING and tx_only[s]:
                    if inj[ps] > tol[ps]:
                        go = False
                    thr = rem[ps]
                elif pst == _DRAINING:
                    thr = _buffered_beyond(hshare, ps, common[s], bneck[ps])
                    if rem[ps] > thr + tol[ps]:
                        go = False
                if not go:
                    queued[n_queued] = i
                    n_queued += 1
                    continue
                inherit[s] = 1e-9 if tx_only[s] else min(max(buffered_at_sent[ps] - thr, 1e-9), wire[s])
                catch_hops[s] = common[s]
                if _activate(s, i, now, catch_hops, sst, status, head_hop, head_key, head_lat, heads, n_heads, active,
                             n_active, hold, plen):
                    inj[s] = wire[s] - inherit[s]
                    pipe[s] = inherit[s]
                    rates_dirty = True
        # ---- NIs whose last transfer left ni_free_delay ago take the next one
        q = 0
        while q < n_rel:
            s = rel[q]
            if free_at[s] <= now:
                free_at[s] = np.inf
                v = src_node[tid[s]]
                ni_busy[v] -= 1
                n_wk = _mark(wake_flag, wake_list, n_wk, v)
                if policy == POLICY_CODESIGNED:
                    n_lk = _mark(lock_flag, lock_list, n_lk, v)
                n_rel -= 1
                rel[q] = rel[n_rel]
                if sst[s] == _ARRIVED:  # over: the slot is free again
                    pend[n_pend] = s
                    n_pend += 1
            else:
                q += 1
        # ---- arrivals release dependents, in schedule order
        n_due = 0
        q = 0
        while q < n_fly:
            s = fly[q]
            if done_at[s] + tail_lat[s] <= now:
                due[n_due] = tid[s]
                n_due += 1
                n_fly -= 1
                fly[q] = fly[n_fly]
            else:
                q += 1
        if n_due > 1:
            due[:n_due] = np.sort(due[:n_due])
        for q in range(n_due):
            i = due[q]
            s = i & mask
            sst[s] = _ARRIVED
            a = done_at[s] + tail_lat[s]
            arrive[i] = a
            if has_red:
                rd_i = reduce_done(unit_free, dst_node[i], a, red_work[i], red_last[i], red_latency, red_mode)
            else:
                rd_i = reduce_done(unit_free, 0, a, 0, 0, red_latency, red_mode)
            if keep_ready:
                ready[i] = rd_i
            arrived += 1
            for r in range(rdep_ptr[i], rdep_ptr[i + 1]):
                d = rdep_idx[r]
                deps_left[d] -= 1
                rdy[d] = max(rdy[d], rd_i)
                if deps_left[d] == 0:
                    rdy[d] = rdy[d] + issue_delay
                    key = max(rdy[d], not_before[d]) if has_nb else rdy[d]
                    wake_key, wake_id, n_wake = _heap_push_grow(wake_key, wake_id, n_wake, key, d)
                    if key <= now:
                        n_wk = _mark(wake_flag, wake_list, n_wk, src_node[d])
            if free_at[s] == np.inf:  # its NI was released already: the slot is free again
                pend[n_pend] = s
                n_pend += 1
        # ---- lockstep: open the next step where the current one is over
        if policy == POLICY_CODESIGNED:
            for q in range(n_lk):
                n = lock_list[q]
                lock_flag[n] = False
                if open_step[n] >= 0 and unstarted_in_step[n] == 0 and ni_busy[n] == 0 and open_at[n] <= now:
                    # the next step with unstarted transfers: that of the node's first WAITING one
                    while cur[n] < node_ptr[n + 1] and status[node_tx[cur[n]]] != _WAITING:
                        cur[n] += 1
                    if cur[n] == node_ptr[n + 1]:
                        open_step[n] = -1
                    else:
                        nxt = step[node_tx[cur[n]]]
                        open_step[n] = nxt
                        open_at[n] = now + step_advance
                        c = 0
                        j = cur[n]
                        while j < node_ptr[n + 1] and step[node_tx[j]] == nxt:
                            if status[node_tx[j]] == _WAITING:
                                c += 1
                            j += 1
                        unstarted_in_step[n] = c
                        if open_at[n] <= now:
                            n_wk = _mark(wake_flag, wake_list, n_wk, n)
                        else:
                            open_key, open_id, n_open = _heap_push_grow(open_key, open_id, n_open, open_at[n], n)
            n_lk = 0
    return n_events
