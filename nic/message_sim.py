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
    """
    t = src_node.shape[0]
    _check_transfers(src_node, step, wire_bytes, path_len, policy)
    not_before = _per_transfer_cycles("not_before", not_before, t)
    # reverse dependencies (who waits for me), as CSR
    counts = np.bincount(dep_idx, minlength=t) if dep_idx.size else np.zeros(t, dtype=np.int64)
    rdep_ptr = np.zeros(t + 1, dtype=np.int64)
    np.cumsum(counts, out=rdep_ptr[1:])
    order = np.argsort(dep_idx, kind="stable")
    owner = np.repeat(np.arange(t), np.diff(dep_ptr))
    rdep_idx = owner[order].astype(np.int64)
    start = np.full(t, np.inf)
    sent = np.full(t, np.inf)
    arrive = np.full(t, np.inf)
    links = np.asarray(path_links, np.int64)
    if wormhole is None:
        w = Wormhole(np.zeros(links.shape, np.int64), np.zeros(links.shape), np.full(links.shape, -1, np.int64),
                     1, 0, False, 0.0)
    else:
        w = wormhole
    rate_links, rate_len, rate_cap = _rate_resources(links, np.asarray(path_len, np.int64),
                                                     np.asarray(link_bytes_per_cycle, np.float64), shared_resources,
                                                     shared_capacity)
    for name in ("head_of_line_limit", "saturated_share"):
        if not 0.0 <= getattr(w, name) <= 1.0:
            raise ValueError(f"{name} must be a share of a link in [0, 1], got {getattr(w, name)}")
    if w.hold_vcs and w.head_of_line_limit > 0.0:
        raise ValueError("head_of_line_limit is for per-packet flows: with hold_vcs every transfer is one packet, "
                         "and no packet waits behind another in a VC; give 0")
    hol = float(w.head_of_line_limit)
    tail_slot = _per_transfer_cycles("tail_slot_cycles", w.tail_slot_cycles, t)
    if hol > 0.0:
        rate_links, rate_len, rate_cap, in_res = _input_resources(
            links, np.asarray(path_len, np.int64), rate_links, rate_len, rate_cap, np.asarray(link_bytes_per_cycle, np.float64))
    else:
        in_res = np.full((1, 1), -1, dtype=np.int64)  # not read without the head-of-line rule
    if t * rate_links.shape[1] >= 2**31:
        raise ValueError(f"{t:,} transfers of {rate_links.shape[1]} rate resources each are more than the event "
                         "loop's 32-bit indices hold")
    prio = (policy == POLICY_CODESIGNED) if step_priority is None else bool(step_priority)
    ready = np.full(t, np.inf)
    zeros = np.zeros(t, dtype=np.int64)
    red_work = zeros if reduce_work_cycles is None else np.asarray(reduce_work_cycles, np.int64)
    red_last = zeros if reduce_last_cycles is None else np.asarray(reduce_last_cycles, np.int64)
    if int(reduce_mode) != 0 and dst_node is None:
        raise ValueError("a reduction unit needs dst_node (each transfer's receiving node)")
    dst = zeros if dst_node is None else np.asarray(dst_node, np.int64)
    limit = EVENTS_PER_TRANSFER_LIMIT * (t + int(num_nodes)) + EVENTS_LIMIT_BASE
    events = _run(
        np.asarray(src_node, np.int64), np.asarray(step, np.int64), np.asarray(wire_bytes, np.float64),
        np.asarray(dep_ptr, np.int64), rdep_ptr, rdep_idx, links, np.asarray(path_len, np.int64),
        np.asarray(path_latency_cycles, np.float64), np.asarray(link_bytes_per_cycle, np.float64),
        int(num_nodes), int(nis_per_node), int(policy), float(issue_delay_cycles), float(step_advance_cycles),
        float(ni_free_delay_cycles), float(first_start_cycles),
        np.asarray(w.vc_class, np.int64), np.asarray(w.head_latency_cycles, np.float64), np.asarray(w.in_port, np.int64),
        int(w.num_vc_classes), int(w.vcs_per_class), bool(w.hold_vcs and w.vcs_per_class > 0),
        float(w.hop_buffer_bytes), rate_links, rate_len, rate_cap, start, sent, arrive, not_before, in_res, hol,
        float(w.saturated_share), tail_slot, prio, dst, red_work, red_last, float(reduce_latency_cycles),
        int(reduce_mode), ready, float(tx_buffer_bytes), limit,
    )
    if events > limit:
        raise RuntimeError(f"message-level simulation did not finish within {limit:,} events ({t:,} transfers, "
                           f"{int(num_nodes):,} nodes): a time that never advances? (nic.message_sim.EVENTS_PER_TRANSFER_LIMIT)")
    if not np.isfinite(arrive).all():
        bad = int(np.nonzero(~np.isfinite(arrive))[0][0])
        raise RuntimeError(f"message-level simulation stalled: transfer {bad} never arrived (dependency cycle?)")
    return TransferTimes(start, sent, arrive, ready)


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
        order = np.argsort(np.asarray(src_node), kind="stable")  # each node's transfers, in listed order
        src, st = np.asarray(src_node)[order], np.asarray(step)[order]
        back = np.nonzero((np.diff(st) < 0) & (np.diff(src) == 0))[0]
        if back.size:
            k = int(back[0])
            raise ValueError(f"node {int(src[k])} lists step {int(st[k + 1])} after step {int(st[k])}: transfers must "
                             "be in schedule order (by step, then table order)")


def _rate_resources(links, path_len, link_cap, extra, extra_cap):
    """What rates are shared over: each transfer's links, then its ``extra`` resources
    (numbered after the links)."""
    if (extra is None) != (extra_cap is None):
        raise ValueError("shared_resources and shared_capacity go together: give both or neither")
    if extra is None:
        return links, path_len, link_cap
    extra = np.asarray(extra, dtype=np.int64)
    if extra.ndim != 2 or extra.shape[0] != links.shape[0]:
        raise ValueError(f"shared_resources must have one row per transfer ({links.shape[0]}), got shape {extra.shape}")
    extra_cap = np.asarray(extra_cap, dtype=np.float64)
    if extra_cap.ndim != 1:
        raise ValueError(f"shared_capacity must be one capacity per resource, got shape {extra_cap.shape}")
    if extra.size and (extra.max() >= len(extra_cap) or extra.min() < -1):
        raise ValueError(f"shared_resources names resources {int(extra.min())}..{int(extra.max())} but shared_capacity "
                         f"has {len(extra_cap)} (use -1 for none)")
    n_extra = (extra >= 0).sum(axis=1)
    rate_len = path_len + n_extra
    rate_links = np.full((links.shape[0], int(rate_len.max(initial=0))), -1, dtype=np.int64)
    for i in range(links.shape[0]):
        rate_links[i, : path_len[i]] = links[i, : path_len[i]]
        rate_links[i, path_len[i] : rate_len[i]] = extra[i][extra[i] >= 0] + link_cap.shape[0]
    return rate_links, rate_len, np.concatenate([link_cap, np.asarray(extra_cap, dtype=np.float64)])


def _input_resources(links, path_len, rate_links, rate_len, rate_cap, link_cap):
    """Add a rate resource per router input port transfers pass through: the link of each
    hop ``1 .. len - 2`` (it enters a router by it and leaves again), all VC classes
    together (the port sends one flit per cycle whichever VC it comes from), at the link's
    capacity, which the link itself already bounds until the head-of-line rule lowers it.
    Returns the new resources and, per transfer and hop, its input's resource (-1: none)."""
    hop = np.arange(links.shape[1])
    inner = (hop[None, :] >= 1) & (hop[None, :] < path_len[:, None] - 1)
    used, dense = np.unique(links[inner], return_inverse=True)
    in_res = np.full(links.shape, -1, dtype=np.int64)
    in_res[inner] = dense.reshape(-1) + rate_cap.shape[0]
    new_len = rate_len + inner.sum(axis=1)
    new_links = np.full((links.shape[0], max(int(new_len.max(initial=0)), rate_links.shape[1])), -1, dtype=np.int64)
    new_links[:, : rate_links.shape[1]] = rate_links
    for i in range(links.shape[0]):
        new_links[i, rate_len[i] : new_len[i]] = in_res[i, inner[i]]
    return new_links, new_len, np.concatenate([rate_cap, link_cap[used]]), in_res


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


@njit(cache=True)
def _activate(i, now, catch_hops, status, head_hop, head_key, head_lat, heads, n_heads, active, n_active, hold,
              path_len):
    """Transfer i goes on the network: its head starts acquiring VCs (``hold``), or it
    starts flowing at once. Returns True when the set of flowing transfers changed."""
    if hold and path_len[i] > 1:
        status[i] = _HEAD
        head_hop[i] = 1
        # a transfer queued behind its NI's previous one has its head right behind that
        # one's tail: it is at the first router already, and does not travel the hops
        # the two routes share again
        head_key[i] = now if catch_hops[i] > 0 else now + head_lat[i, 1]
        heads[n_heads[0]] = i
        n_heads[0] += 1
        return False
    status[i] = _SENDING
    active[n_active[0]] = i
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


@njit(cache=True)
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


@njit(cache=True)
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


@njit(cache=True)
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


@njit(cache=True)
def _offer_head(i, res, key, b_first, b_next, b_res, hp_key, hp_id, n_hp):
    """Head ``i`` may take a VC of resource ``res`` in this instant: into that resource's
    bucket and onto the heap by ``key`` (grown when full). Returns the heap."""
    b_next[i] = b_first[res]
    b_first[res] = i
    b_res[i] = res
    if n_hp == hp_key.shape[0]:
        k = np.empty(2 * n_hp)
        d = np.empty(2 * n_hp, dtype=np.int64)
        k[:n_hp] = hp_key
        d[:n_hp] = hp_id
        hp_key, hp_id = k, d
    return hp_key, hp_id, _heap_push(hp_key, hp_id, n_hp, key, i)


@njit(cache=True)
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


@njit(cache=True)
def _run(src_node, step, wire_bytes, dep_ptr, rdep_ptr, rdep_idx, path_links, path_len, path_lat, link_cap,
         num_nodes, nis, policy, issue_delay, step_advance, ni_free_delay, first_start, path_cls, head_lat, in_port,
         n_cls, vcs_per_class, hold, hop_buf, rate_links, rate_len, rate_cap, start, sent, arrive, not_before, in_res, hol, saturated, tail_slot, step_prio,
         dst_node, red_work, red_last, red_latency, red_mode, ready, txb, max_events):
    t_count = src_node.shape[0]
    n_links = link_cap.shape[0]
    status = np.zeros(t_count, dtype=np.int8)
    deps_left = np.empty(t_count, dtype=np.int32)
    ready_at = np.full(t_count, np.inf)
    for i in range(t_count):
        deps_left[i] = dep_ptr[i + 1] - dep_ptr[i]
        if deps_left[i] == 0:
            ready_at[i] = first_start
    rem = wire_bytes.copy()  # bytes not yet past the bottleneck
    inj = wire_bytes.copy()  # bytes not yet out of the NI
    tol = 1e-9 * wire_bytes + 1e-12
    cap_ni = np.empty(t_count)
    for i in range(t_count):
        cap_ni[i] = link_cap[path_links[i, 0]]
    rates = np.zeros(t_count)
    slack = np.zeros(t_count)  # bytes the flow may have buffered in the network (pipeline + buffers)
    pipe = np.zeros(t_count)  # bytes already in the network when it started flowing
    bneck = np.zeros(t_count, dtype=np.int32)  # hop of its first bottleneck
    # from the last byte passing the bottleneck to the arrival (the tail flit's latency runs
    # from the start of its slot)
    tail_lat = path_lat - tail_slot
    done_at = np.full(t_count, np.inf)
    priority = step.copy() if step_prio else np.zeros(t_count, dtype=np.int64)
    unit_free = np.zeros(num_nodes)  # reduction unit of each node: busy until
    dep_ready = np.zeros(t_count)  # latest time a dependency's data became usable
    cap_left = np.empty(rate_cap.shape[0])
    users = np.empty(rate_cap.shape[0], dtype=np.int64)
    load = np.zeros(n_links)
    max_rate = np.zeros(n_links)
    # head-of-line rule: scratch per link and per rate resource, and the lowered capacities
    injected = np.zeros(n_links, dtype=np.bool_)
    in_load = np.zeros(rate_cap.shape[0])
    blocked = np.zeros(rate_cap.shape[0], dtype=np.bool_)
    keep = np.zeros(rate_cap.shape[0], dtype=np.bool_)
    cap_eff = rate_cap.copy()
    # wormhole: free VCs per (link, class), heads waiting for one, VC allocators' round-robin pointers
    vc_free = np.full(n_links * n_cls, vcs_per_class, dtype=np.int64)
    head_hop = np.zeros(t_count, dtype=np.int32)
    head_key = np.zeros(t_count)
    va_ptr = np.full(n_links * n_cls, -1, dtype=np.int64)  # per (link, class)
    # NIs: the transfer each NI (node, slot) started last; queued transfers wait for it
    slot_tx = np.full(num_nodes * nis, -1, dtype=np.int64)
    waits_on = np.full(t_count, -1, dtype=np.int32)
    common = np.zeros(t_count, dtype=np.int32)  # hops shared with that predecessor (the injection hop included)
    catch_hops = np.zeros(t_count, dtype=np.int32)
    inherit = np.zeros(t_count)  # bytes injected behind the predecessor while it drained
    buffered_at_sent = np.zeros(t_count)
    tx_only = np.zeros(t_count, dtype=np.bool_)  # queued only behind its NI's transmit queue
    hshare = np.zeros(path_links.shape)  # buffer bytes a flow may fill at the end of each hop before its bottleneck
    share_bufs = hop_buf > 0.0 and not hold
    n_backed = np.zeros(n_links, dtype=np.int64)  # flows held back beyond each link's buffer
    ni_busy = np.zeros(num_nodes, dtype=np.int64)
    # an NI takes its next transfer ni_free_delay after its last byte left
    free_at = np.full(t_count, np.inf)  # pending releases (finite until the NI is free)
    n_rel = 0
    # lockstep bookkeeping (co-designed): per node, the open step and when it opened
    unstarted_in_step = np.zeros(num_nodes, dtype=np.int64)
    open_step = np.full(num_nodes, -1, dtype=np.int64)
    open_at = np.zeros(num_nodes)
    node_ptr = np.zeros(num_nodes + 1, dtype=np.int64)
    for i in range(t_count):
        node_ptr[src_node[i] + 1] += 1
    for n in range(num_nodes):
        node_ptr[n + 1] += node_ptr[n]
    node_tx = np.empty(t_count, dtype=np.int32)
    fill = node_ptr[:-1].copy()
    for i in range(t_count):
        node_tx[fill[src_node[i]]] = i
        fill[src_node[i]] += 1
    for n in range(num_nodes):
        if node_ptr[n] < node_ptr[n + 1]:
            s = step[node_tx[node_ptr[n]]]
            open_step[n] = s
            c = 0
            for j in range(node_ptr[n], node_ptr[n + 1]):
                if step[node_tx[j]] == s:
                    c += 1
            unstarted_in_step[n] = c

    # waiting transfers whose data is ready: a heap of (when they may start, transfer)
    wake_key = np.empty(t_count)
    wake_id = np.empty(t_count, dtype=np.int32)
    n_wake = 0
    for i in range(t_count):
        if deps_left[i] == 0:
            n_wake = _heap_push(wake_key, wake_id, n_wake, max(ready_at[i], not_before[i]), i)
    cur = node_ptr[:-1].copy()  # per node: no WAITING transfer before this index of node_tx
    fly = np.empty(t_count, dtype=np.int32)  # IN_FLIGHT transfers
    n_fly = 0
    rel = np.empty(t_count, dtype=np.int32)  # transfers whose NI is being released
    queued = np.empty(t_count, dtype=np.int32)  # QUEUED transfers
    due = np.empty(t_count, dtype=np.int32)  # scratch: transfers handled in one pass, in index order
    # heads eligible for a VC in this instant: buckets per (link, class) and a heap by (head_key, transfer)
    b_first = np.full(n_links * n_cls, -1, dtype=np.int64)
    b_next = np.full(t_count, -1, dtype=np.int32)
    b_res = np.full(t_count, -1, dtype=np.int64)
    hp_key = np.empty(1024)
    hp_id = np.empty(1024, dtype=np.int64)
    # the flows on each rate resource (linked lists of (flow, hop) nodes), for rating only the
    # flows whose share changed
    hr = rate_links.shape[1]
    res_first = np.full(rate_cap.shape[0], -1, dtype=np.int64)
    nd_next = np.empty(t_count * hr, dtype=np.int32)  # simulate_transfers keeps t_count * hr < 2**31
    nd_prev = np.empty(t_count * hr, dtype=np.int32)
    listed = np.zeros(t_count, dtype=np.bool_)
    comp = np.empty(t_count, dtype=np.int64)
    comp_mark = np.zeros(t_count, dtype=np.int32)
    res_mark = np.zeros(rate_cap.shape[0], dtype=np.int64)
    stamp = 0
    gone = np.empty(t_count, dtype=np.int32)
    n_gone = 0
    active = np.empty(t_count, dtype=np.int64)  # flowing: SENDING or DRAINING
    n_active = np.zeros(1, dtype=np.int64)
    heads = np.empty(t_count, dtype=np.int64)  # acquiring VCs
    n_heads = np.zeros(1, dtype=np.int64)
    arrived = 0
    n_queued = 0
    now = 0.0
    rates_dirty = True
    n_events = 0
    while arrived < t_count:
        n_events += 1
        if n_events > max_events:  # a bound, so that no input can keep the compiled loop (and Ctrl-C) waiting
            return n_events
        # ---- start what may start now (schedule order within each node)
        for n in range(num_nodes):
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
                if ready_at[i] <= now and not_before[i] <= now:
                    start[i] = now
                    ni_busy[n] += 1
                    if policy == POLICY_CODESIGNED:
                        unstarted_in_step[n] -= 1
                    slot = n * nis  # the lowest free NI
                    while slot_tx[slot] >= 0 and (status[slot_tx[slot]] <= _SENDING or free_at[slot_tx[slot]] < np.inf):
                        slot += 1
                    prev = slot_tx[slot]
                    slot_tx[slot] = i
                    # per-packet flows fill every VC of their class: the next transfer is behind
                    # the draining one; a bulk packet holds one VC per hop, and with more per class
                    # the next one takes another VC (VC holding decides when it can go on)
                    in_tx = txb > 0.0 and prev >= 0 and status[prev] == _DRAINING and inj[prev] > tol[prev]
                    if prev >= 0 and status[prev] == _DRAINING and (in_tx or not (hold and vcs_per_class > 1)):
                        # with a bulk packet per VC, only the rest in the transmit queue is ahead of it
                        tx_only[i] = hold and vcs_per_class > 1
                        status[i] = _QUEUED
                        queued[n_queued] = i
                        n_queued += 1
                        waits_on[i] = prev
                        c = 1
                        while c < path_len[i] and c < path_len[prev] and path_links[i, c] == path_links[prev, c]:
                            c += 1
                        common[i] = c
                    elif _activate(i, now, catch_hops, status, head_hop, head_key, head_lat, heads, n_heads, active,
                                   n_active, hold, path_len):
                        rates_dirty = True
        # ---- heads acquire VCs hop by hop: a free VC goes to the most urgent head, then
        # round-robin over input ports from the one served last, then the earliest (then the
        # one earlier in the schedule); resources are served in the order of their earliest
        # eligible head
        if n_heads[0] > 0:
            n_hp = 0
            for k in range(n_heads[0]):
                i = heads[k]
                h = head_hop[i]
                if head_key[i] <= now or h < catch_hops[i]:
                    hp_key, hp_id, n_hp = _offer_head(i, path_links[i, h] * n_cls + path_cls[i, h], head_key[i], b_first,
                                                      b_next, b_res, hp_key, hp_id, n_hp)
            while n_hp > 0:
                c = hp_id[0]
                ck = hp_key[0]
                n_hp = _heap_pop(hp_key, hp_id, n_hp)
                r = b_res[c] if ck == head_key[c] else -1  # an entry from before the head moved on: stale
                while r >= 0 and vc_free[r] > 0 and b_res[c] == r:
                    best = -1
                    best_prev = -1
                    best_d = 0
                    prev = -1
                    i = b_first[r]
                    while i >= 0:
                        d = (in_port[i, head_hop[i]] - va_ptr[r] - 1) % n_links
                        if best < 0:
                            better = True
                        else:
                            better = priority[i] < priority[best] or (priority[i] == priority[best] and (
                                d < best_d or (d == best_d and (head_key[i] < head_key[best] or (
                                    head_key[i] == head_key[best] and i < best)))))
                        if better:
                            best = i
                            best_prev = prev
                            best_d = d
                        prev = i
                        i = b_next[i]
                    i = best
                    h = head_hop[i]
                    if best_prev < 0:
                        b_first[r] = b_next[i]
                    else:
                        b_next[best_prev] = b_next[i]
                    b_res[i] = -1
                    va_ptr[r] = in_port[i, h]
                    vc_free[r] -= 1
                    if h + 1 < path_len[i]:
                        head_hop[i] = h + 1
                        if h + 1 < catch_hops[i]:
                            head_key[i] = now
                        else:
                            head_key[i] = max(head_key[i], now) + head_lat[i, h + 1] - head_lat[i, h]
                        if head_key[i] <= now or h + 1 < catch_hops[i]:  # on at once: eligible again
                            hp_key, hp_id, n_hp = _offer_head(i, path_links[i, h + 1] * n_cls + path_cls[i, h + 1],
                                                              head_key[i], b_first, b_next, b_res, hp_key, hp_id, n_hp)
                    else:  # the head is at the destination: the data follows at the flow's rate
                        status[i] = _SENDING
                        active[n_active[0]] = i
                        n_active[0] += 1
                        rates_dirty = True
                        # the NI kept injecting behind the head: those bytes are in the network
                        pre = max(head_lat[i, h] * cap_ni[i], inherit[i])
                        if pre > wire_bytes[i]:
                            pre = wire_bytes[i]
                        inj[i] = wire_bytes[i] - pre
                        pipe[i] = pre
                        tail_lat[i] = path_lat[i] - head_lat[i, h] - tail_slot[i]
            # empty the buckets; keep the heads still acquiring, in their order
            kept = 0
            for k in range(n_heads[0]):
                i = heads[k]
                if b_res[i] >= 0:
                    b_first[b_res[i]] = -1
                    b_res[i] = -1
                if status[i] == _HEAD:
                    heads[kept] = i
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
                    i = active[k]
                    if not listed[i]:
                        listed[i] = True
                        for h in range(rate_len[i]):
                            nd = i * hr + h
                            rr = rate_links[i, h]
                            nd_next[nd] = res_first[rr]
                            nd_prev[nd] = -1
                            if res_first[rr] >= 0:
                                nd_prev[res_first[rr]] = nd
                            res_first[rr] = nd
                        comp_mark[i] = stamp
                        comp[nc] = i
                        nc += 1
                for g in range(n_gone):
                    i = gone[g]
                    for h in range(rate_len[i]):
                        nc = _join_users(rate_links[i, h], res_first, nd_next, hr, comp_mark, stamp, comp, nc)
                n_gone = 0
                q = 0
                while q < nc:
                    i = comp[q]
                    q += 1
                    for h in range(rate_len[i]):
                        rr = rate_links[i, h]
                        if res_mark[rr] == stamp:
                            continue
                        res_mark[rr] = stamp
                        nc = _join_users(rr, res_first, nd_next, hr, comp_mark, stamp, comp, nc)
            max_min_rates(comp[:nc], priority, rate_links, rate_len, rate_cap, rates, cap_left, users)
            if hol > 0.0 and _head_of_line_caps(active, na, rates, path_links, path_len, link_cap, saturated, in_res,
                                                rate_cap, hol, load, injected, in_load, blocked, keep, cap_eff):
                max_min_rates(active[:na], priority, rate_links, rate_len, cap_eff, rates, cap_left, users)
            rates_dirty = False
            if hop_buf > 0.0:
                _bottlenecks(comp, nc, rates, path_links, path_len, link_cap, load, max_rate, bneck)
                if share_bufs:
                    _count_backed(comp, nc, path_links, bneck, n_backed)
                for k in range(nc):
                    i = comp[k]
                    sl = 0.0
                    for h in range(bneck[i]):
                        hshare[i, h] = hop_buf / n_backed[path_links[i, h]] if share_bufs else hop_buf
                        sl += hshare[i, h]
                    slack[i] = sl + pipe[i]
            else:
                for k in range(nc):
                    slack[comp[k]] = pipe[comp[k]]
        # ---- the next event
        t_next = np.inf
        for k in range(n_active[0]):
            i = active[k]
            r = rates[i]
            if r > 0.0:
                tt = now + rem[i] / r
                if tt < t_next:
                    t_next = tt
            if status[i] == _SENDING:
                b = rem[i] - inj[i]
                left = max(inj[i] - txb, 0.0)  # to leave the NI before it is free
                if b < slack[i] - tol[i] and cap_ni[i] > r * (1.0 + 1e-12):
                    # filling the buffers: the NI injects at full speed until they are full
                    tt = now + min((slack[i] - b) / (cap_ni[i] - r), left / cap_ni[i])
                elif r > 0.0:
                    tt = now + left / r
                else:
                    tt = np.inf
                if tt < t_next:
                    t_next = tt
            elif status[i] == _DRAINING and inj[i] > tol[i] and r > 0.0:
                tt = now + inj[i] / r  # its transmit queue is empty
                if tt < t_next:
                    t_next = tt
        for k in range(n_heads[0]):
            i = heads[k]
            if now < head_key[i] < t_next:
                t_next = head_key[i]
        for q in range(n_queued):
            i = queued[q]
            p = waits_on[i]
            if status[p] == _DRAINING and rates[p] > 0.0:
                tt = now + (rem[p] - _buffered_beyond(hshare, p, common[i], bneck[p])) / rates[p]
                if now < tt < t_next:
                    t_next = tt
        for q in range(n_fly):
            i = fly[q]
            if done_at[i] + tail_lat[i] < t_next:
                t_next = done_at[i] + tail_lat[i]
        while n_wake > 0 and wake_key[0] <= now:  # those may start (or wait for their NI or step) now
            n_wake = _heap_pop(wake_key, wake_id, n_wake)
        if n_wake > 0 and wake_key[0] < t_next:
            t_next = wake_key[0]
        if policy == POLICY_CODESIGNED:
            for n in range(num_nodes):
                if now < open_at[n] < t_next:
                    t_next = open_at[n]
        for q in range(n_rel):
            if free_at[rel[q]] < t_next:
                t_next = free_at[rel[q]]
        if t_next == np.inf:
            return n_events  # stalled: the caller reports the transfer that never arrived
        dt = t_next - now
        for k in range(n_active[0]):
            i = active[k]
            r = rates[i]
            if status[i] == _SENDING:
                b = rem[i] - inj[i]
                if b < slack[i] - tol[i] and cap_ni[i] > r * (1.0 + 1e-12):
                    inj[i] -= cap_ni[i] * dt
                else:
                    inj[i] -= r * dt
                if inj[i] < 0.0:
                    inj[i] = 0.0
            elif status[i] == _DRAINING and inj[i] > 0.0:
                inj[i] = max(inj[i] - r * dt, 0.0)  # the rest in the transmit queue leaves
            rem[i] -= r * dt
        now = t_next
        # ---- the last byte left the NI: the NI is free; the last byte passed the bottleneck
        k = 0
        while k < n_active[0]:
            i = active[k]
            if status[i] == _SENDING and (inj[i] <= txb + tol[i] or rem[i] <= tol[i]):
                status[i] = _DRAINING
                sent[i] = now
                free_at[i] = now + ni_free_delay  # released below, in this pass when there is no delay
                rel[n_rel] = i
                n_rel += 1
                buffered_at_sent[i] = max(rem[i] - inj[i], 0.0)
            if rem[i] <= tol[i]:
                status[i] = _IN_FLIGHT
                fly[n_fly] = i
                n_fly += 1
                done_at[i] = now
                active[k] = active[n_active[0] - 1]
                n_active[0] -= 1
                rates_dirty = True
                if listed[i]:  # off its resources' lists; its neighbours are rated again
                    listed[i] = False
                    for h in range(rate_len[i]):
                        nd = i * hr + h
                        if nd_prev[nd] >= 0:
                            nd_next[nd_prev[nd]] = nd_next[nd]
                        else:
                            res_first[rate_links[i, h]] = nd_next[nd]
                        if nd_next[nd] >= 0:
                            nd_prev[nd_next[nd]] = nd_prev[nd]
                    gone[n_gone] = i
                    n_gone += 1
                if hold:
                    for h in range(1, path_len[i]):
                        vc_free[path_links[i, h] * n_cls + path_cls[i, h]] += 1
            else:
                k += 1
        # ---- queued transfers go once their predecessor's tail has left the shared buffers
        if n_queued > 0:
            n_due = n_queued
            due[:n_due] = np.sort(queued[:n_queued])  # in schedule order
            n_queued = 0
            for q in range(n_due):
                i = due[q]
                p = waits_on[i]
                thr = 0.0
                go = True
                if status[p] == _DRAINING and tx_only[i]:
                    if inj[p] > tol[p]:
                        go = False
                    thr = rem[p]
                elif status[p] == _DRAINING:
                    thr = _buffered_beyond(hshare, p, common[i], bneck[p])
                    if rem[p] > thr + tol[p]:
                        go = False
                if not go:
                    queued[n_queued] = i
                    n_queued += 1
                    continue
                inherit[i] = 1e-9 if tx_only[i] else min(max(buffered_at_sent[p] - thr, 1e-9), wire_bytes[i])
                catch_hops[i] = common[i]
                if _activate(i, now, catch_hops, status, head_hop, head_key, head_lat, heads, n_heads, active,
                             n_active, hold, path_len):
                    inj[i] = wire_bytes[i] - inherit[i]
                    pipe[i] = inherit[i]
                    rates_dirty = True
        # ---- NIs whose last transfer left ni_free_delay ago take the next one
        q = 0
        while q < n_rel:
            i = rel[q]
            if free_at[i] <= now:
                free_at[i] = np.inf
                ni_busy[src_node[i]] -= 1
                n_rel -= 1
                rel[q] = rel[n_rel]
            else:
                q += 1
        # ---- arrivals release dependents, in schedule order
        n_due = 0
        q = 0
        while q < n_fly:
            i = fly[q]
            if done_at[i] + tail_lat[i] <= now:
                due[n_due] = i
                n_due += 1
                n_fly -= 1
                fly[q] = fly[n_fly]
            else:
                q += 1
        if n_due > 1:
            due[:n_due] = np.sort(due[:n_due])
        for q in range(n_due):
            i = due[q]
            status[i] = _ARRIVED
            arrive[i] = done_at[i] + tail_lat[i]
            ready[i] = reduce_done(unit_free, dst_node[i], arrive[i], red_work[i], red_last[i], red_latency,
                                   red_mode)
            arrived += 1
            for r in range(rdep_ptr[i], rdep_ptr[i + 1]):
                d = rdep_idx[r]
                deps_left[d] -= 1
                dep_ready[d] = max(dep_ready[d], ready[i])
                if deps_left[d] == 0:
                    ready_at[d] = dep_ready[d] + issue_delay
                    n_wake = _heap_push(wake_key, wake_id, n_wake, max(ready_at[d], not_before[d]), d)
        # ---- lockstep: open the next step where the current one is over
        if policy == POLICY_CODESIGNED:
            for n in range(num_nodes):
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
    return n_events
