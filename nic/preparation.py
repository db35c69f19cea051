"""A schedule laid out for the simulators: one row per transfer (:class:`Prepared`).

:func:`prepare` turns a ``nic.collectives.Schedule`` for a NIC (``nic.nic_config.NicConfig``)
and a size into transfers: the NI each one leaves from and arrives at (a node's transfers of
a step dealt over its NIs), its payload, its bytes on the wire (whole flits, as the NIC
packetises), the receiver's reduction work, and the transfers each one waits for
(:func:`dependencies`, the docs/collectives.md rule). :func:`transfer_routes` gives the
transfers' routes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from nic.collectives import Schedule, ScheduleError
from nic.nic_config import NicConfig
from nic.reduction import reduction_work
from nic.scheduler import OP_GATHER, OP_REDUCE
from noc.base.errors import ConfigError, HwModelsError
from noc.routing import PairRoutes, RouteTable, route_pairs
from noc.topology import Topology, parse_spec


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
    small = np.int32 if topology.num_endpoints < 2**31 else np.int64
    ep = topology.node_endpoints.astype(small)  # so the transfers' endpoints come out in their own type
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
    return Prepared(schedule.src, schedule.dst, schedule.step, np.asarray(payload, np.int64), wire, src_ep, dst_ep,
                    ptr, idx, work, last)


def transfer_routes(topology: Topology, prep: Prepared, network,
                    routes: RouteTable | PairRoutes | None = None) -> PairRoutes:
    """The routes of the prepared transfers, one row each: ``routes`` itself when it already
    is (:class:`PairRoutes`, one row per transfer), the rows of a full table, else only these
    pairs' paths (:func:`noc.routing.route_pairs`), with the network config's routing and
    dateline (the family's own without one)."""
    if isinstance(routes, PairRoutes):
        if routes.links.shape[0] != len(prep.src_node):
            raise ValueError(f"routes has {routes.links.shape[0]} rows, one per transfer needed ({len(prep.src_node)})")
        return routes
    return _pair_routes(topology, prep.src_ep, prep.dst_ep, network, routes)


def _pair_routes(topology: Topology, src_ep, dst_ep, network, table: RouteTable | None) -> PairRoutes:
    """The routes of the endpoint pairs ``(src_ep[p], dst_ep[p])``: rows of ``table``, or routed."""
    if table is not None:
        length = table.length[src_ep, dst_ep]
        w = max(int(length.max(initial=0)), 1)
        return PairRoutes(table.algorithm, table.links[src_ep, dst_ep, :w], table.vc_class[src_ep, dst_ep, :w], length,
                          table.num_vc_classes)
    if network is None:
        return route_pairs(topology, src_ep, dst_ep, "auto")
    return route_pairs(topology, src_ep, dst_ep, getattr(network, "routing", "auto"),
                       dateline=bool(getattr(network, "dateline", True)))


def distinct_routes(topology: Topology, prep: Prepared, network,
                    routes: RouteTable | PairRoutes | None = None) -> tuple[PairRoutes, np.ndarray | None]:
    """The routes of the prepared transfers' distinct endpoint pairs and, per transfer, its
    row (int32; ``None``: one row per transfer, when ``routes`` is already one per transfer).
    Row ``route_of[i]`` is :func:`transfer_routes`'s row ``i``: a schedule of neighbour
    transfers holds a few rows per node rather than one per transfer."""
    if isinstance(routes, PairRoutes):
        return transfer_routes(topology, prep, network, routes), None
    src, dst = np.asarray(prep.src_ep), np.asarray(prep.dst_ep)
    route_of = np.empty(src.shape[0], np.int32)
    pairs = _distinct_pair_rows(src, dst, route_of)
    return _pair_routes(topology, pairs[:, 0].copy(), pairs[:, 1].copy(), network, routes), route_of


@njit(cache=True)
def _distinct_pair_rows(src, dst, row):
    """The distinct pairs ``(src[p], dst[p])`` (int64[P, 2], in order of first appearance);
    ``row[p]`` is pair ``p``'s index among them. An open-addressing hash table of the pairs
    seen, doubled when half full."""
    cap = 1 << 12
    keys = np.full(cap, -1, np.int64)
    ids = np.zeros(cap, np.int32)
    out = np.empty((16, 2), np.int64)
    n = 0
    for p in range(src.shape[0]):
        key = (np.int64(src[p]) << 32) | np.int64(dst[p])
        h = (key * np.int64(-7046029254386353131)) & (cap - 1)
        while keys[h] >= 0 and keys[h] != key:
            h = (h + 1) & (cap - 1)
        if keys[h] < 0:
            if n == out.shape[0]:
                grown = np.empty((2 * n, 2), np.int64)
                grown[:n] = out
                out = grown
            keys[h] = key
            ids[h] = n
            out[n, 0] = src[p]
            out[n, 1] = dst[p]
            n += 1
            if 2 * n > cap:  # rehash into twice the slots
                cap *= 2
                new_keys = np.full(cap, -1, np.int64)
                new_ids = np.zeros(cap, np.int32)
                for q in range(n):
                    kq = (out[q, 0] << 32) | out[q, 1]
                    hq = (kq * np.int64(-7046029254386353131)) & (cap - 1)
                    while new_keys[hq] >= 0:
                        hq = (hq + 1) & (cap - 1)
                    new_keys[hq] = kq
                    new_ids[hq] = q
                keys, ids = new_keys, new_ids
                h = -1
        row[p] = ids[h] if h >= 0 else n - 1
    return out[:n].copy()


__all__ = ["Prepared", "check_size", "dependencies", "distinct_routes", "prepare", "transfer_routes"]
