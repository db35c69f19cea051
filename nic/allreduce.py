"""All-reduce simulation: a Schedule run by NICs over a network, into an AllreduceResult.

``simulate_allreduce(topology, schedule, nic, network, size_bytes, model=...)``:

* ``model="message"`` — the fast message-level model (``nic.message_sim`` over
  ``noc.message``): each transfer holds its route's links for its serialisation time,
  pipelined across hops, sharing links max-min fairly (with step priority for the
  co-designed NIC); given the flit-level network config it also reproduces the wormhole
  network's VC holding (a bulk transfer's head acquires a VC per hop and blocks the
  transfers behind it), the buffering between an NI and a route's bottleneck, and the
  one-queue-per-NI order of packets (:func:`message_flow_control`);
* ``model="flit"`` — the flit-level co-simulation (``nic.flit_cosim``): the NIC scheduler
  cycle model of every node over the flit-level network of ``noc``.

Two NIC designs (:class:`NicConfig`): the **co-designed** NIC (schedule tables, strict
lockstep, step priority in the routers, bulk flow control: one head flit per transfer)
and the **baseline** NIC (sends as soon as its data is ready, per-packet flow control:
a head flit per ``packet_bytes`` of payload, no priority). Flow control and step
priority are also switches of their own; a node's reduction unit (``nic.reduction``) sums
each received REDUCE before anything waiting for it may go, and an NI may have a
transmit queue (``tx_buffer_flits``).

The result is checked: the schedule is executed on exact integers by the functional
verifier, the simulated times are checked to honour every dependency (no transfer starts
before the messages it waits for arrived), and the verifier replays the schedule in the
simulated order (each transfer carries its sender's data as it was when it started, and
is applied when it arrives), so the timed run performed the exact all-reduce.
"""

from __future__ import annotations

import threading
import warnings
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Annotated, Literal, Optional

import numpy as np
from numba import njit
from pydantic import Field, model_validator

from nic.collectives import Schedule, ScheduleError, bounds, verify
from nic.message_sim import (HEAD_OF_LINE_LIMIT, POLICY_BASELINE, POLICY_CODESIGNED, RouteWormhole, TransferTimes,
                             Wormhole, simulate_routes)
from nic.reduction import MODES as REDUCTION_MODES, reduction_work
from nic.result import AllreduceResult
from nic.scheduler import OP_GATHER, OP_REDUCE
from nic.variants import DESIGNS, VARIANT_NIC, VARIANTS  # the NIC registry (VARIANTS re-exported)
from noc.config import StrictModel, check_seed, finite, finite_rule
from noc.errors import ConfigError, DeadlockError, DeadlockRiskWarning, HwModelsError
from noc.routing import PairRoutes, RouteTable, check_deadlock_free, check_vc_classes, route_pairs
from noc.topology import Topology, parse_spec

MODELS = ("message", "flit")

# What a message-level run holds at its peak, fitted to bench/allreduce_scale.py on 24x24 to
# 64x64 tori with 4 NIs (3-link paths; docs/allreduce.md, "Scale"): per transfer (the
# schedule, its layout for the simulators, the times and the per-transfer state of the event
# loop, the timed replay's sorted events), per link of its path (the routes), and the
# verifier's vectors, at most three int64 values per node and element (2 elements per flow
# and 1: its partial sums, final values and per node and flow counts). The event loop's
# state for transfers under way, a few hundred bytes per NI, is in the per-transfer figure.
MESSAGE_BYTES_PER_TRANSFER = 100
MESSAGE_BYTES_PER_PATH_LINK = 8
# A run estimated to need more is refused before it starts (the machine would swap or kill it).
MAX_RUN_BYTES = 8 << 30


class NicConfig(StrictModel):
    """The network interface: which design, how it packetises, the clock."""

    design: Literal[tuple(DESIGNS)] = Field(
        "codesigned", description="; ".join(f"{name}: {what}" for name, what in DESIGNS.items()) + ".")
    flow_control: Literal["default", "bulk", "packet"] = Field(
        "default", description="bulk: one head flit per transfer; packet: one per packet_bytes. default: the design's own.")
    packet_bytes: int = Field(256, ge=16, le=1 << 20, description="Payload bytes per packet in per-packet mode (256 B = 16 flits of 16 B).")
    flit_bytes: int = Field(16, ge=1, le=1024, description="Bytes per flit (the head flit's size).")
    element_bytes: int = Field(4, ge=1, le=16, description="Bytes per vector element (fp32 = 4).")
    issue_delay_cycles: int = Field(1, ge=0, le=1000, description="Baseline NIC: cycles from a message's arrival to "
                                    "a send it unblocks (the co-designed NIC's delays are its scheduler's).")
    clock_ghz: Annotated[float, finite(1e-3, 100.0)] = Field(1.0, description="Cycles to seconds and GB/s.")
    step_priority: Optional[bool] = Field(
        None, description="Packets carry their schedule step as switch priority (earlier steps first). "
                          "Default: the design's (on for codesigned, off for baseline).")
    reduction: Literal["free", "chunk", "stream"] = Field(
        "free", description="How a received REDUCE is summed before it can be forwarded. free: no cost; chunk: the "
                            "node's reduction unit starts once the whole message is in; stream: it works on the data "
                            "as it arrives, so only the last packet's share is left after the tail.")
    reduce_elements_per_cycle: Annotated[float, finite(1e-6, 1 << 20)] = Field(
        32.0, description="Reduction unit throughput in elements (element_bytes each) per cycle: "
                          f"{finite_rule(1e-6, 1 << 20)}.")
    reduce_granule_elements: int = Field(
        1, ge=1, le=1 << 20, description="The unit works on whole granules of this many elements (a partial "
                                         "granule costs a whole one).")
    reduce_latency_cycles: int = Field(0, ge=0, le=100_000, description="Pipeline latency of the reduction unit.")
    tx_buffer_flits: int = Field(
        0, ge=0, le=1 << 24, description="The NI's transmit queue, in flits: the NI is free for its next transfer "
                                         "once the rest of its message fits in it (0: once the last flit has left).")

    @model_validator(mode="after")
    def _issue_delay_is_the_baselines(self) -> "NicConfig":
        if self.design == "codesigned" and self.issue_delay_cycles != 1:
            raise ValueError(f"issue_delay_cycles={self.issue_delay_cycles} is for the baseline NIC: the co-designed "
                             "NIC's scheduler offers a send 3 cycles after the arrival it waits for "
                             "(docs/nic_scheduler.md); leave it at 1 or use design='baseline'")
        return self

    @property
    def bulk(self) -> bool:
        if self.flow_control == "default":
            return self.design == "codesigned"
        return self.flow_control == "bulk"

    @property
    def prioritised(self) -> bool:
        """Whether packets carry their step as switch priority."""
        return self.design == "codesigned" if self.step_priority is None else bool(self.step_priority)

    def reduce_cycles(self, elements: int) -> int:
        """Cycles the reduction unit is busy summing ``elements`` elements (0 when free):
        whole granules at ``reduce_elements_per_cycle``, rounded up to whole cycles."""
        if self.reduction == "free" or elements <= 0:
            return 0
        g = self.reduce_granule_elements
        return int(np.ceil((-(-int(elements) // g) * g) / self.reduce_elements_per_cycle - 1e-9))

    def key_fields(self) -> dict:
        """The fields that determine a run, for result-store keys: options added later are
        left out at their defaults, so results stored before they existed are still found."""
        data = self.model_dump(mode="json")
        for name in _LATER_FIELDS:
            if data[name] == NicConfig.model_fields[name].default:
                del data[name]
        return data

    @property
    def packet_flits(self) -> int:
        """Flits of a full packet in per-packet mode: a head flit plus ``packet_bytes`` of
        payload in whole flits."""
        return 1 + -(-self.packet_bytes // self.flit_bytes)

    @property
    def policy(self) -> int:
        return POLICY_CODESIGNED if self.design == "codesigned" else POLICY_BASELINE

    def wire_bytes(self, payload_bytes: np.ndarray) -> np.ndarray:
        """Bytes on the wire: whole flits, as the packetiser sends them. Each packet is a head
        flit plus its payload rounded up to whole flits; bulk: one packet per transfer,
        per-packet: ``packet_bytes`` each, the last one shorter (an empty transfer is a head)."""
        payload = np.asarray(payload_bytes, dtype=np.int64)
        f = self.flit_bytes
        if self.bulk:
            flits = 1 + -(-payload // f)
        else:
            full, rest = payload // self.packet_bytes, payload % self.packet_bytes
            flits = full * self.packet_flits + np.where(rest > 0, 1 + -(-rest // f), 0)
            flits = np.where(payload == 0, 1, flits)
        return (flits * f).astype(np.float64)


# NicConfig fields added after results were first stored (left out of keys at their defaults)
_LATER_FIELDS = ("step_priority", "reduction", "reduce_elements_per_cycle", "reduce_granule_elements",
                 "reduce_latency_cycles", "tx_buffer_flits")


def honours_priority(network) -> bool:
    """Whether the routers' switch allocation lets a more urgent packet go first: not with
    iSLIP, which matches inputs and outputs round-robin whatever the packets' priority (a
    packet's step then only orders the VCs of one input). The message model gives the
    co-designed NIC's step priority on links only where the flit level would."""
    return getattr(network, "sw_allocator", "vc_first") != "islip"


def router_delay_cycles(network) -> int:
    """Per-router head delay of a network config (pipeline stages), 0 for ``None``."""
    if network is None:
        return 0
    names = ("routing_delay_cycles", "vc_alloc_delay_cycles", "sw_alloc_delay_cycles", "st_delay_cycles")
    return int(sum(int(getattr(network, n, 0)) for n in names))


@dataclass(frozen=True)
class Prepared:
    """A schedule laid out for the simulators: one row per transfer, schedule order."""

    src_node: np.ndarray  # int32: the schedule's own columns
    dst_node: np.ndarray
    step: np.ndarray
    payload_bytes: np.ndarray  # int64
    wire_bytes: np.ndarray  # float64
    src_ep: np.ndarray  # int32: NI (endpoint) the transfer leaves from
    dst_ep: np.ndarray  # int32: NI it arrives at
    dep_ptr: np.ndarray  # CSR (int32 where the counts fit): transfers each one waits for
    dep_idx: np.ndarray
    reduce_work: np.ndarray  # int64 cycles of the receiver's reduction unit (0: a GATHER, or free)
    reduce_last: np.ndarray  # int64 cycles of the last packet's share (streaming reduction)


def dependencies(schedule: Schedule) -> tuple[np.ndarray, np.ndarray]:
    """CSR (ptr[T+1], idx) of the transfers each transfer waits for (docs/collectives.md
    rule): a REDUCE waits for the REDUCEs of its flow arriving at its sender; a GATHER for
    the GATHER of its flow arriving there, or, where none does (the root), for the REDUCEs.
    Each transfer's list is in schedule order. int32 arrays where the counts fit."""
    t = schedule.num_transfers
    n, nf = schedule.num_nodes, max(schedule.num_flows, 1)
    if 2 * n * nf <= 4 * t + (1 << 20):  # every (node, flow, op) an arrival group: count them in place
        return _dependencies_dense(schedule.src, schedule.dst, schedule.flow, schedule.op, n, nf, OP_GATHER)
    return _dependencies_sorted(schedule)


def _dependencies_sorted(schedule: Schedule) -> tuple[np.ndarray, np.ndarray]:
    """:func:`dependencies` by sorting the arrivals (for schedules with few transfers per
    (node, flow))."""
    t = schedule.num_transfers
    nf = np.int64(max(schedule.num_flows, 1))
    # arrivals grouped by (receiver, flow, op), schedule order within a group
    arr_key = (schedule.dst.astype(np.int64) * nf + schedule.flow) * 2 + (schedule.op == OP_GATHER)
    order = np.argsort(arr_key, kind="stable")
    sorted_key = arr_key[order]
    base = (schedule.src.astype(np.int64) * nf + schedule.flow) * 2
    # look up in ascending order of keys (sequential, not random, access), then put back
    q = np.argsort(base, kind="stable")
    sorted_base = base[q]
    red_lo, red_hi, gat_lo, gat_hi = (np.empty(t, dtype=np.int64) for _ in range(4))
    red_lo[q] = np.searchsorted(sorted_key, sorted_base, side="left")
    red_hi[q] = gat_lo[q] = np.searchsorted(sorted_key, sorted_base + 1, side="left")  # the keys are integers
    gat_hi[q] = np.searchsorted(sorted_key, sorted_base + 2, side="left")
    use_gather = (schedule.op == OP_GATHER) & (gat_hi > gat_lo)
    lo = np.where(use_gather, gat_lo, red_lo)
    hi = np.where(use_gather, gat_hi, red_hi)
    counts = hi - lo
    ptr = np.zeros(t + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    # idx[ptr[i] + k] = order[lo[i] + k]
    within = np.arange(int(ptr[-1]), dtype=np.int64) - np.repeat(ptr[:-1], counts)
    idx = order[np.repeat(lo, counts) + within].astype(np.int64)
    return _narrow(ptr, t), _narrow(idx, t)


def _narrow(a: np.ndarray, t: int) -> np.ndarray:
    """``a`` as int32 when its values (and the transfer count ``t``) fit, else int64."""
    top = max(int(a.max(initial=0)), t)
    return a.astype(np.int32) if top < 2**31 - 1 else a.astype(np.int64)


@njit(cache=True)
def _dependency_groups(src, dst, flow, op, nf, gather_op, off, arr):
    """Arrivals grouped by (receiver, flow, op) in ``arr``, schedule order within a group;
    afterwards ``off[k]`` is the end of group ``k`` (so group k is ``arr[off[k-1]:off[k]]``)."""
    for j in range(src.shape[0]):
        off[(dst[j] * nf + flow[j]) * 2 + (1 if op[j] == gather_op else 0) + 1] += 1
    for k in range(off.shape[0] - 1):
        off[k + 1] += off[k]
    for j in range(src.shape[0]):
        key = (dst[j] * nf + flow[j]) * 2 + (1 if op[j] == gather_op else 0)
        arr[off[key]] = j
        off[key] += 1


@njit(cache=True)
def _dependency_lists(src, flow, op, nf, gather_op, off, arr, ptr, idx, fill):
    """Per transfer: the group it waits for (its sender's arrivals of its flow: GATHERs for a
    GATHER when there are any, else REDUCEs); counts into ``ptr`` or, with ``fill``, the
    members into ``idx``."""
    for i in range(src.shape[0]):
        kr = (src[i] * nf + flow[i]) * 2
        lo = off[kr - 1] if kr > 0 else 0
        hi = off[kr]
        if op[i] == gather_op and off[kr + 1] > off[kr]:
            lo = off[kr]
            hi = off[kr + 1]
        if fill:
            for k in range(hi - lo):
                idx[ptr[i] + k] = arr[lo + k]
        else:
            ptr[i + 1] = ptr[i] + hi - lo


def _dependencies_dense(src, dst, flow, op, n, nf, gather_op) -> tuple[np.ndarray, np.ndarray]:
    t = src.shape[0]
    wide = 2 * n * nf + 1 >= 2**31 - 1 or t >= 2**31 - 1
    off = np.zeros(2 * n * nf + 1, np.int64 if wide else np.int32)
    arr = np.empty(t, np.int64 if wide else np.int32)
    _dependency_groups(src, dst, flow, op, nf, gather_op, off, arr)
    ptr = np.zeros(t + 1, np.int64)
    _dependency_lists(src, flow, op, nf, gather_op, off, arr, ptr, arr[:0], False)
    idx = np.empty(int(ptr[-1]), arr.dtype)
    _dependency_lists(src, flow, op, nf, gather_op, off, arr, ptr, idx, True)
    return _narrow(ptr, t), idx


@njit(cache=True)
def _step_ranks(step, node, num_nodes, nis, out):
    """out[i] = (rank of transfer i among the transfers of its (step, node), in schedule
    order) mod ``nis``; ``step`` must not decrease."""
    seen_step = np.full(num_nodes, -1, np.int64)
    count = np.zeros(num_nodes, np.int64)
    for i in range(step.shape[0]):
        v = node[i]
        if seen_step[v] != step[i]:
            seen_step[v] = step[i]
            count[v] = 0
        out[i] = count[v] % nis
        count[v] += 1


def _ni_slots(step: np.ndarray, node: np.ndarray, nis: int, within: np.ndarray | None = None) -> np.ndarray:
    """k-th transfer of (step, node), in schedule order (or by ``within``, then schedule
    order) -> NI k mod nis (spreads a step over the NIs)."""
    if within is None and (step.size < 2 or bool((step[1:] >= step[:-1]).all())):
        out = np.empty(step.shape[0], np.int32 if nis < 2**31 else np.int64)
        _step_ranks(step, node, int(node.max()) + 1 if node.size else 1, nis, out)
        return out
    key = step.astype(np.int64) * (int(node.max()) + 1 if node.size else 1) + node
    order = np.argsort(key, kind="stable") if within is None else np.lexsort((within, key))
    sk = key[order]
    first = np.r_[0, np.nonzero(np.diff(sk))[0] + 1]
    rank = np.arange(len(sk)) - np.repeat(first, np.diff(np.r_[first, len(sk)]))
    out = np.empty(len(sk), dtype=np.int64)
    out[order] = rank % nis
    return out


def check_size(schedule: Schedule, nic: NicConfig, size_bytes: int) -> None:
    """A :class:`ConfigError` unless ``size_bytes`` is a whole number of elements, at least one per flow."""
    if size_bytes % nic.element_bytes:
        raise ConfigError(f"size {size_bytes} B is not a whole number of {nic.element_bytes}-byte elements "
                          "(element_bytes)")
    if size_bytes < nic.element_bytes * schedule.num_flows:
        raise ConfigError(f"size {size_bytes} B is smaller than one {nic.element_bytes}-byte element per flow "
                          f"({schedule.num_flows} flows): at least {nic.element_bytes * schedule.num_flows} B")


def _built_for(schedule: Schedule, topology: Topology) -> bool:
    if schedule.num_nodes != topology.num_nodes:
        return False
    if schedule.topology == topology.name:  # every built schedule: no spec to parse
        return True
    try:  # a hand-made schedule's label, e.g. 'Torus:4x4', naming the same topology
        return parse_spec(schedule.topology).name == topology.name
    except HwModelsError:  # a label that is no spec names some other network
        return False


def prepare(topology: Topology, schedule: Schedule, nic: NicConfig, size_bytes: int) -> Prepared:
    """Lay ``schedule`` out for the simulators (:class:`Prepared`). The node and step columns
    are the schedule's own (int32) arrays; a transfer's payload, wire bytes and reduction
    work follow from its flow (and op), so they are computed per flow."""
    if not _built_for(schedule, topology):
        raise ScheduleError(f"schedule {schedule.algorithm!r} was built for {schedule.topology} "
                            f"({schedule.num_nodes} nodes), not for {topology.name}: build it for this topology")
    check_size(schedule, nic, size_bytes)
    elems = size_bytes // nic.element_bytes
    flow_payload = np.diff(schedule.chunk_bounds(elems)) * nic.element_bytes  # int64 per flow
    payload = flow_payload[schedule.flow]
    wire = nic.wire_bytes(flow_payload)[schedule.flow]
    nis = topology.nis_per_node
    ep = topology.node_endpoints
    src_ep = ep[schedule.src, _ni_slots(schedule.step, schedule.src, nis)]
    # a schedule may ask for its receivers' NIs to be dealt in flow order (ring2d_4dir: a
    # node's four senders' concurrent transfers then arrive at four different NIs)
    within = schedule.flow if schedule.params.get("recv_ni_order") == "flow" else None
    dst_ep = ep[schedule.dst, _ni_slots(schedule.step, schedule.dst, nis, within)]
    ptr, idx = dependencies(schedule)
    if nic.reduction == "free":  # no work anywhere: one zero, seen as one per transfer
        work = last = np.broadcast_to(np.zeros(1, np.int64), (schedule.num_transfers,))
    else:
        w_flow, l_flow = reduction_work(nic, np.full(schedule.num_flows, OP_REDUCE), flow_payload)
        is_reduce = schedule.op == OP_REDUCE
        work = np.where(is_reduce, w_flow[schedule.flow], 0)
        last = np.where(is_reduce, l_flow[schedule.flow], 0)
    small = np.int32 if topology.num_endpoints < 2**31 else np.int64
    return Prepared(schedule.src, schedule.dst, schedule.step, payload.astype(np.int64), wire, src_ep.astype(small),
                    dst_ep.astype(small), ptr, idx, work, last)


_VERIFIED: OrderedDict = OrderedDict()  # (schedule, seed) verified step by step; the 64 latest
_VERIFIED_LOCK = threading.Lock()


def _verified(schedule: Schedule, seed: int) -> bool:
    """Verify ``schedule`` step by step on ``seed``'s vectors once (it raises on a fault)."""
    if _is_verified(schedule, seed):
        return True
    verify(schedule, seed=seed)
    with _VERIFIED_LOCK:
        _VERIFIED[(schedule, seed)] = True
        if len(_VERIFIED) > 64:
            _VERIFIED.popitem(last=False)
    return True


def _is_verified(schedule: Schedule, seed: int) -> bool:
    with _VERIFIED_LOCK:
        if (schedule, seed) not in _VERIFIED:
            return False
        _VERIFIED.move_to_end((schedule, seed))
        return True


def _check_arguments(topology, schedule, nic, network, size_bytes) -> int:
    """Wrong types get a TypeError naming the argument (a network of the wrong type would
    otherwise silently run the pure fluid model); returns the size as an int."""
    from noc.flit import FlitNetworkConfig  # noqa: PLC0415

    for name, value, cls in (("topology", topology, Topology), ("schedule", schedule, Schedule), ("nic", nic, NicConfig)):
        if not isinstance(value, cls):
            raise TypeError(f"{name} must be a {cls.__name__}, not {type(value).__name__}")
    if network is not None and not isinstance(network, FlitNetworkConfig):
        raise TypeError(f"network must be a FlitNetworkConfig or None, not {type(network).__name__}")
    if isinstance(size_bytes, (bool, np.bool_)) or not isinstance(size_bytes, (int, np.integer)):
        raise TypeError(f"size_bytes must be an int number of bytes, not {size_bytes!r} "
                        "(hw_models.units.parse_size_bytes reads '64KiB')")
    return int(size_bytes)


def check_times(prep: Prepared, start: np.ndarray, arrive: np.ndarray, issue_delay: float = 0.0) -> None:
    """Raise unless every transfer arrived and started after each transfer it waits for
    arrived (``arrive``: when its data was usable, after the receiver's reduction)."""
    if not np.isfinite(arrive).all():
        bad = int(np.nonzero(~np.isfinite(arrive))[0][0])
        raise RuntimeError(f"simulation lost transfer {bad}: it never arrived")
    k = _first_late(prep.dep_ptr, prep.dep_idx, np.asarray(start, np.float64), np.asarray(arrive, np.float64),
                    float(issue_delay))
    if k >= 0:
        owner = int(np.searchsorted(prep.dep_ptr, k, side="right")) - 1
        dep = int(prep.dep_idx[k])
        raise RuntimeError(f"simulation broke a dependency: transfer {owner} started at "
                           f"{start[owner]:.1f} before transfer {dep} arrived at {arrive[dep]:.1f}")


@njit(cache=True)
def _first_late(dep_ptr, dep_idx, start, arrive, issue_delay):
    """The first dependency (index into ``dep_idx``) whose transfer started before it
    arrived (within 1e-6 cycles), or -1."""
    for i in range(dep_ptr.shape[0] - 1):
        for k in range(dep_ptr[i], dep_ptr[i + 1]):
            if start[i] + 1e-6 < arrive[dep_idx[k]] + issue_delay:
                return k
    return -1


@njit(cache=True)
def _busy_cycles(node, start, sent, num_nodes):
    """Per node, the length of the union of its [start, sent] intervals, taken in order of
    start (ties in schedule order)."""
    t = node.shape[0]
    ptr = np.zeros(num_nodes + 1, np.int64)
    for i in range(t):
        ptr[node[i] + 1] += 1
    for v in range(num_nodes):
        ptr[v + 1] += ptr[v]
    mine = np.empty(t, np.int64)  # each node's transfers, in schedule order
    fill = ptr[:-1].copy()
    for i in range(t):
        mine[fill[node[i]]] = i
        fill[node[i]] += 1
    busy = np.zeros(num_nodes)
    for v in range(num_nodes):
        ids = mine[ptr[v]:ptr[v + 1]]
        st = np.empty(ids.shape[0])
        for k in range(ids.shape[0]):
            st[k] = start[ids[k]]
        by_start = np.argsort(st, kind="mergesort")
        reach = -np.inf
        for k in range(ids.shape[0]):
            i = ids[by_start[k]]
            lo = max(start[i], reach)
            if sent[i] > lo:
                busy[v] += sent[i] - lo
            reach = max(reach, sent[i])
    return busy


def _idle_fraction(prep: Prepared, start: np.ndarray, sent: np.ndarray, num_nodes: int, total: float) -> tuple[float, ...]:
    """Per node, the share of the run in which none of its NIs was sending."""
    if total <= 0:
        return tuple(0.0 for _ in range(num_nodes))
    busy = _busy_cycles(prep.src_node, np.asarray(start, np.float64), np.asarray(sent, np.float64), num_nodes)
    return tuple(round(1.0 - float(b) / total, 6) for b in busy)


@njit(cache=True)
def _step_ends(step, arrive, num_steps):
    """Per step, the last arrival of its transfers (0 for a step without any)."""
    out = np.zeros(num_steps)
    for i in range(step.shape[0]):
        if arrive[i] > out[step[i]]:
            out[step[i]] = arrive[i]
    return out


def message_run_bytes(schedule: Schedule, paths: PairRoutes) -> int:
    """Estimated peak bytes of a message-level run of ``schedule`` over ``paths`` (its
    transfers' routes): :data:`MESSAGE_BYTES_PER_TRANSFER` and
    :data:`MESSAGE_BYTES_PER_PATH_LINK`, and the verifier's vectors."""
    t = schedule.num_transfers
    verifier = 3 * 8 * schedule.num_nodes * (2 * schedule.num_flows + 1)
    return int(t * (MESSAGE_BYTES_PER_TRANSFER + MESSAGE_BYTES_PER_PATH_LINK * paths.max_links) + verifier)


def check_run_bytes(topology: Topology, schedule: Schedule, paths: PairRoutes) -> None:
    """A :class:`ConfigError` with the estimate when a message-level run would need more than
    :data:`MAX_RUN_BYTES`."""
    need = message_run_bytes(schedule, paths)
    if need > MAX_RUN_BYTES:
        raise ConfigError(f"{schedule.algorithm} on {topology.name}: {schedule.num_transfers:,} transfers; the "
                          f"message-level run would hold about {need / 2**30:,.1f} GiB (limit "
                          f"{MAX_RUN_BYTES >> 30} GiB); use a smaller network or fewer NIs per node")


def deadlock_risk(topology: Topology, schedule: Schedule, paths: PairRoutes) -> str:
    """'' when the channel-dependency graph of the run's own paths is acyclic; else a
    sentence naming a cycle (e.g. a torus without dateline VC classes). A cycle means the
    network *can* deadlock: the flit level stops with a deadlock error if it does, while the
    message model has no such mechanism and would time the run as if it could not."""
    rep = check_deadlock_free(topology, paths)
    if rep.deadlock_free:
        return ""
    cyc = " -> ".join(f"link {lk} class {c}" for lk, c in rep.cycle[:6]) + (" -> ..." if len(rep.cycle) > 6 else "")
    return (f"{schedule.algorithm} on {topology.name}: the routing ({paths.algorithm}) can deadlock on this "
            f"schedule's paths: their channel dependencies close a cycle ({cyc}); dateline VC classes (router "
            "dateline = true, num_vcs a multiple of 2) or dimension order avoid it")


def transfer_routes(topology: Topology, prep: Prepared, network,
                    routes: RouteTable | PairRoutes | None = None) -> PairRoutes:
    """The routes of the prepared transfers, one row each: ``routes`` itself when it already
    is (:class:`PairRoutes`, one row per transfer), the rows of a full table, else only these
    pairs' paths (:func:`noc.routing.route_pairs`), with the network config's routing and
    dateline (the family's own without one)."""
    if isinstance(routes, PairRoutes):
        if routes.links.shape[0] != len(prep.src_ep):
            raise ValueError(f"routes has {routes.links.shape[0]} rows, one per transfer needed ({len(prep.src_ep)})")
        return routes
    if routes is not None:
        length = routes.length[prep.src_ep, prep.dst_ep]
        w = max(int(length.max(initial=0)), 1)
        return PairRoutes(routes.algorithm, routes.links[prep.src_ep, prep.dst_ep, :w],
                          routes.vc_class[prep.src_ep, prep.dst_ep, :w], length, routes.num_vc_classes)
    if network is None:
        return route_pairs(topology, prep.src_ep, prep.dst_ep, "auto")
    return route_pairs(topology, prep.src_ep, prep.dst_ep, getattr(network, "routing", "auto"),
                       dateline=bool(getattr(network, "dateline", True)))


def check_router_flit_bytes(network, nic: NicConfig) -> None:
    """The router's ``flit_bytes``, when set, must be the NIC's (both models refuse a mismatch)."""
    fb = getattr(network, "flit_bytes", None)
    if fb is not None and fb != nic.flit_bytes:
        raise ConfigError(f"router flit_bytes = {fb} and the NIC's flit_bytes = {nic.flit_bytes} disagree; "
                          "set one of them")


def check_message_router(topology: Topology, routes: RouteTable | PairRoutes, nic: NicConfig, network) -> None:
    """A :class:`ConfigError` unless the message model can represent ``network`` on these
    routes with this NIC: VCs that split into the routes' classes, the NIC's flit size,
    wormhole flow control."""
    check_vc_classes(topology, routes, int(network.num_vcs))  # as the flit level refuses it
    check_router_flit_bytes(network, nic)
    if getattr(network, "flow_control", "wormhole") != "wormhole":
        raise ConfigError(f"flow_control = {network.flow_control!r}: the message model represents wormhole routers "
                          "only; use the flit level (model='flit') for virtual cut-through")


def route_flow_control(topology: Topology, paths: PairRoutes, nic: NicConfig,
                       network) -> tuple[RouteWormhole | None, np.ndarray, np.ndarray | None]:
    """What the message model takes from the flit-level network config, per link: the
    wormhole description (VC classes and counts, buffers, the tail flit's slot per
    injection link; ``None`` without a network config: a pure fluid), the rate an NI
    injects at when its route starts with each link, in bytes/cycle, and the capacity of
    each (link, VC class) the transfers' packets share after the injection hop, or ``None``
    (for :func:`nic.message_sim.simulate_routes`).

    Per-packet flow control with one VC per class re-allocates that VC for every packet:
    the head of the next packet waits for the route and VC allocation stages after the
    tail of the previous one left, so the packets of a class move ``L`` flits in
    ``L + rc + va`` cycles on every link: the NI injects at that rate, and all transfers
    whose packets use a link in the same class share that rate, while a link carrying two
    classes is busy in one class's allocation bubble with the other's flits. Per-packet
    flows also get the wormhole's head-of-line rule (:data:`nic.message_sim.HEAD_OF_LINE_LIMIT`):
    a router input port holds packets for more than one output.
    """
    link_bw = topology.link_bytes_per_cycle.astype(np.float64)
    ni_bw = link_bw
    if network is None or not hasattr(network, "num_vcs"):
        return None, ni_bw, None
    check_message_router(topology, paths, nic, network)
    classes = int(paths.num_vc_classes)
    vcs = int(network.num_vcs) // classes
    packet_flits = nic.packet_flits
    shared = None
    bubble = int(network.routing_delay_cycles) + int(network.vc_alloc_delay_cycles)
    if not nic.bulk and vcs == 1:
        ni_bw = ni_bw * packet_flits / (packet_flits + bubble)
        # one resource per (link, VC class) after the injection hop, at the bubbled rate
        shared = np.repeat(link_bw, classes) * packet_flits / (packet_flits + bubble)
    per_hop_vcs = 1 if nic.bulk else vcs  # one packet holds one VC per hop; packets of a flow spread over all
    wormhole = RouteWormhole(
        num_vc_classes=classes, vcs_per_class=vcs, hold_vcs=nic.bulk,
        hop_buffer_bytes=float(per_hop_vcs * int(network.vc_depth_flits) * nic.flit_bytes),
        # per-packet flows queue packets for two outputs in one input port
        head_of_line_limit=0.0 if nic.bulk else HEAD_OF_LINE_LIMIT,
        # with one VC per class, packets fill a link of one class at the re-allocation rate above
        saturated_share=packet_flits / (packet_flits + bubble) if not nic.bulk and vcs == 1 else 1.0,
        # a flit crosses a link in one cycle, or ser cycles on a link narrower than a flit
        tail_slot_cycles=np.maximum(1.0, nic.flit_bytes / link_bw))
    return wormhole, ni_bw, shared


def message_flow_control(topology: Topology, paths: PairRoutes, prep: Prepared, nic: NicConfig,
                         network) -> tuple[Wormhole | None, np.ndarray, tuple[np.ndarray, np.ndarray] | None]:
    """:func:`route_flow_control` as per-transfer arrays, for
    :func:`nic.message_sim.simulate_transfers`: the wormhole description (``None``: a pure
    fluid), each transfer's NI injection rate in bytes/cycle, and the VCs its packets share
    with other transfers' as ``(resources per transfer, capacities)`` (or ``None``).
    :func:`run_message` holds none of these arrays (it runs
    :func:`nic.message_sim.simulate_routes`, which derives them transfer by transfer)."""
    route_wh, ni_link, shared_cap = route_flow_control(topology, paths, nic, network)
    links = np.asarray(paths.links, np.int64)
    ni_bw = ni_link[links[:, 0]]
    if route_wh is None:
        return None, ni_bw, None
    classes = route_wh.num_vc_classes
    shared = None
    if shared_cap is not None:
        res = np.where(links >= 0, links * classes + paths.vc_class.astype(np.int64), -1)
        res[:, 0] = -1
        shared = (res, shared_cap)
    link_lat = topology.link_latency_cycles.astype(np.float64)
    rd = router_delay_cycles(network)
    head_lat = np.zeros(links.shape)
    for h in range(1, links.shape[1]):
        prev = links[:, h - 1]
        head_lat[:, h] = head_lat[:, h - 1] + np.where(prev >= 0, link_lat[np.maximum(prev, 0)], 0.0) + rd
    in_port = np.full(links.shape, -1, dtype=np.int64)
    in_port[:, 1:] = links[:, :-1]
    wormhole = Wormhole(
        vc_class=np.asarray(paths.vc_class, np.int64), head_latency_cycles=head_lat, in_port=in_port,
        num_vc_classes=classes, vcs_per_class=route_wh.vcs_per_class, hold_vcs=route_wh.hold_vcs,
        hop_buffer_bytes=route_wh.hop_buffer_bytes, head_of_line_limit=route_wh.head_of_line_limit,
        saturated_share=route_wh.saturated_share, tail_slot_cycles=route_wh.tail_slot_cycles[links[:, 0]])
    return wormhole, ni_bw, shared


@njit(cache=True)
def _link_bytes(links, wire_bytes, num_links):
    """Bytes each link carried: every transfer's wire bytes on each link of its path (added
    in transfer order, as ``np.bincount`` adds them)."""
    out = np.zeros(num_links)
    for i in range(links.shape[0]):
        for h in range(links.shape[1]):
            lk = links[i, h]
            if lk >= 0:
                out[lk] += wire_bytes[i]
    return out


def run_message(topology: Topology, prep: Prepared, nic: NicConfig, network, *,
                routes: RouteTable | PairRoutes | None = None,
                not_before: np.ndarray | None = None) -> tuple[TransferTimes, np.ndarray]:
    """Time a prepared schedule with the message-level model: per-transfer times and the
    bytes each link carried. ``not_before``: per transfer, a cycle it may not start before
    (e.g. the flit level's start times, to compare the two networks on one start order)."""
    paths = transfer_routes(topology, prep, network, routes)
    wormhole, ni_bw, shared = route_flow_control(topology, paths, nic, network)
    # The sending NI is whichever of the node's NIs is free (the NI count limits a node's
    # concurrent sends), so the injection hop is a private resource per transfer at the NI's
    # bandwidth rather than one particular NI's link (simulate_routes).
    times = simulate_routes(
        src_node=prep.src_node, step=prep.step, wire_bytes=prep.wire_bytes, dep_ptr=prep.dep_ptr,
        dep_idx=prep.dep_idx, links=paths.links, path_len=paths.length, vc_class=paths.vc_class,
        link_bytes_per_cycle=topology.link_bytes_per_cycle, link_latency_cycles=topology.link_latency_cycles,
        router_delay_cycles=router_delay_cycles(network), ni_bytes_per_cycle=ni_bw, num_nodes=topology.num_nodes,
        nis_per_node=topology.nis_per_node, policy=nic.policy, **nic_delays(nic),
        wormhole=wormhole, shared_classes=shared is not None, shared_capacity=shared, not_before=not_before,
        step_priority=nic.prioritised and honours_priority(network), dst_node=prep.dst_node,
        reduce_work_cycles=None if nic.reduction == "free" else prep.reduce_work,
        reduce_last_cycles=None if nic.reduction == "free" else prep.reduce_last,
        reduce_latency_cycles=nic.reduce_latency_cycles,
        reduce_mode=REDUCTION_MODES[nic.reduction], tx_buffer_bytes=float(nic.tx_buffer_flits * nic.flit_bytes),
    )
    return times, _link_bytes(paths.links, np.asarray(prep.wire_bytes, np.float64), topology.num_links)


def simulate_allreduce(topology: Topology, schedule: Schedule, nic: NicConfig | None = None, network=None,
                       size_bytes: int = 1 << 20, *, model: str = "message", routes: RouteTable | PairRoutes | None = None,
                       seed: int = 0, times_out: dict | None = None) -> AllreduceResult:
    """Simulate one all-reduce of ``size_bytes`` (a whole number of ``nic.element_bytes``
    elements, at least one per flow); see the module docstring. ``seed`` seeds the
    functional verifier's random input vectors; both timing models are deterministic.
    ``times_out``: a dict that receives the per-transfer times (schedule order; arrays
    ``start_cycles``, ``sent_cycles``, ``arrive_cycles``, ``src_ep``, ``dst_ep``,
    ``payload_bytes`` and the route ``links``, -1 padded), e.g. for a trace; the result is
    the same with or without it."""
    nic = NicConfig() if nic is None else nic
    size_bytes = _check_arguments(topology, schedule, nic, network, size_bytes)
    seed = check_seed(seed, "seed")
    if model not in MODELS:
        raise ConfigError(f"model {model!r} is unknown; choose one of {', '.join(MODELS)}")
    # the schedule is verified step by step (on a second core, when there is one) while it is
    # laid out, routed and its channel dependencies checked; any error of those comes first.
    # A schedule verified before on this seed (a sweep's many sizes of one schedule) starts no
    # thread: starting and joining one costs more than a small run.
    already = _is_verified(schedule, int(seed))
    with nullcontext() if already else ThreadPoolExecutor(max_workers=1, thread_name_prefix="verify") as side:
        verifying = None if already else side.submit(_verified, schedule, int(seed))
        prep = prepare(topology, schedule, nic, size_bytes)
        paths = None
        if model == "message":
            paths = transfer_routes(topology, prep, network, routes)
            check_run_bytes(topology, schedule, paths)
        risk = ""
        if network is not None and hasattr(network, "num_vcs"):  # VC routers: run the dependency check first
            risk = deadlock_risk(topology, schedule, paths if paths is not None else route_pairs(
                topology, prep.src_ep, prep.dst_ep, network.routing, dateline=network.dateline,
                vc_rule=getattr(network, "vc_class_rule", "dateline")))
            if risk:
                warnings.warn(risk, DeadlockRiskWarning, stacklevel=2)
        verified = True if verifying is None else verifying.result()
    if model == "flit":
        from nic.flit_cosim import run_flit  # noqa: PLC0415 (needs the flit-level network)

        try:
            timing = run_flit(topology, schedule, prep, nic, network)
        except DeadlockError as exc:
            if not risk:
                raise
            raise DeadlockError(f"{risk}; the flit level stopped in it: {exc}") from None
        start, sent, arrive = timing.start_cycles, timing.sent_cycles, timing.arrive_cycles
        ready = timing.ready_cycles
        link_bytes = timing.link_bytes
        extra = dict(timing.extra)
    else:
        try:
            times, link_bytes = run_message(topology, prep, nic, network, routes=paths)
        except RuntimeError as exc:
            if not risk:
                raise
            # the heads of bulk transfers hold VCs: around the cycle they wait for each other
            raise DeadlockError(f"{risk}; the message model stalled in it: {exc}") from None
        start, sent, arrive = times.start_cycles, times.sent_cycles, times.arrive_cycles
        ready = times.usable_cycles
        extra = {}
    check_times(prep, start, ready)
    # the reduction the simulation performed: the schedule replayed on exact integers in the
    # simulated order (each transfer carries its sender's data as it was when it started)
    verify(schedule, seed=int(seed), times=(start, arrive))
    if times_out is not None:
        route = paths if paths is not None else transfer_routes(topology, prep, network, routes)
        times_out.update(start_cycles=np.asarray(start, np.float64), sent_cycles=np.asarray(sent, np.float64),
                         arrive_cycles=np.asarray(arrive, np.float64), src_ep=np.asarray(prep.src_ep),
                         dst_ep=np.asarray(prep.dst_ep), payload_bytes=np.asarray(prep.payload_bytes),
                         links=np.asarray(route.links))
    total = float(arrive.max()) if arrive.size else 0.0
    step_end = _step_ends(prep.step, np.asarray(arrive, np.float64), schedule.num_steps)
    router = topology.is_router_link
    util = link_bytes / topology.link_bytes_per_cycle / total if total > 0 else np.zeros(topology.num_links)
    b = bounds(topology, int(size_bytes))
    if nic.reduction != "free":
        busy = np.bincount(prep.dst_node, weights=prep.reduce_work, minlength=topology.num_nodes)
        extra.update({"reduction": nic.reduction, "reduce_busy_cycles_max": int(busy.max())})
    if risk:
        extra["deadlock_risk"] = risk
    extra.update({"flow_control": "bulk" if nic.bulk else "packet", "packet_bytes": nic.packet_bytes,
                  "router_delay_cycles": router_delay_cycles(network), "schedule_steps": schedule.num_steps})
    return AllreduceResult(
        topology=topology.name, algorithm=schedule.algorithm, nic=nic.design, model=model,
        size_bytes=int(size_bytes), num_nodes=topology.num_nodes, nis_per_node=topology.nis_per_node,
        total_cycles=total, clock_ghz=nic.clock_ghz, bound_cycles=float(b.bandwidth_cycles), verified=verified,
        step_end_cycles=tuple(float(x) for x in step_end),
        node_idle_fraction=_idle_fraction(prep, start, sent, topology.num_nodes, total),
        link_utilisation_mean=float(util[router].mean()) if router.any() else 0.0,
        link_utilisation_max=float(util[router].max()) if router.any() else 0.0,
        link_utilisation=tuple(float(x) for x in util),
        seed=seed, extra=extra,
    )


def nic_delays(nic: NicConfig) -> dict[str, float]:
    """The NIC's own cycle delays, as the flit level has them (``simulate_transfers`` keywords).

    Co-designed (the scheduler contract, docs/nic_scheduler.md): the start pulse is in
    cycle 0, the scheduler runs from cycle 1 and its send-request register offers the first
    send in cycle 2; an arrival is a receive event in the next cycle and counts at that
    cycle's edge, the entry it unblocks is taken into the request register at the next
    edge, so its send is offered 3 cycles after the arrival; ``ni_done`` pulses the cycle
    after the last flit left and the NI is idle from that edge, so the NI's next send is
    offered 3 cycles after; a step whose sends are over advances one cycle after its NIs
    are idle (and its request register is empty), so its first send is offered one cycle
    after the one an idle NI of the same step would have been offered. Baseline
    (``nic.flit_cosim``): a free NI looks again the cycle after its last flit left, and a
    send waits ``issue_delay_cycles`` after the arrival it needs.
    """
    if nic.policy == POLICY_CODESIGNED:
        return {"first_start_cycles": 2.0, "issue_delay_cycles": 3.0, "ni_free_delay_cycles": 3.0,
                "step_advance_cycles": 1.0}
    return {"first_start_cycles": 0.0, "issue_delay_cycles": float(nic.issue_delay_cycles),
            "ni_free_delay_cycles": 1.0, "step_advance_cycles": 1.0}


def ring_allreduce_cycles(n: int, size_bytes: float, link_bytes_per_cycle: float, alpha_cycles: float) -> float:
    """The textbook ring all-reduce time 2(N-1)(alpha + M/(N B)), in cycles."""
    return 2 * (n - 1) * (alpha_cycles + size_bytes / (n * link_bytes_per_cycle))


__all__ = ["MAX_RUN_BYTES", "MODELS", "VARIANTS", "VARIANT_NIC", "NicConfig", "Prepared", "check_run_bytes", "check_size", "check_times",
           "dependencies", "message_flow_control", "message_run_bytes", "prepare", "route_flow_control", "transfer_routes",
           "ring_allreduce_cycles", "router_delay_cycles", "run_message", "simulate_allreduce"]
