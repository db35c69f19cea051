"""Link contention of a Schedule, lower bounds for all-reduce, and the ideal schedule time.

* Contention: every transfer is routed (``noc.routing``) from its source node to its
  destination node; per step, the messages on each directed router-to-router link are
  counted (on switched networks the NI links count too).
* Bounds for an ``M``-byte all-reduce on N nodes:
  - injection: every node must send (and receive) at least 2(N-1)/N * M bytes, so
    time >= 2(N-1)/N * M / B_node, with B_node the smaller of the node's NI injection
    bandwidth and (on direct networks) its outgoing router-link bandwidth;
  - bisection: each half must learn the other half's sum, so at least M bytes cross the
    cut each way: time >= M / B_bisection (one direction);
  - steps: a tree all-reduce adds N(N-1) tree edges, at most min(links, N(kary-1)) per
    step, so it needs >= ceil(N(N-1) / that) construction steps.
* Ideal time: steps in lockstep, zero latency, each step as long as its busiest resource
  (router link, NI injection or ejection) needs to move that step's bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from nic.collectives.schedule import Schedule, ScheduleError
from noc.routing import RouteTable, route_pairs
from noc.topology import Topology


@dataclass(frozen=True)
class Contention:
    """Per step: the most messages sharing one directed link, and the link."""

    max_per_step: tuple[int, ...]
    worst_link_per_step: tuple[int, ...]  # link id, -1 when a step has no network hop
    link_messages: np.ndarray  # int64[L]: messages over each link in the whole schedule

    @property
    def max_messages_per_link_step(self) -> int:
        return max(self.max_per_step, default=0)

    @property
    def contention_free(self) -> bool:
        return self.max_messages_per_link_step <= 1


def _check_fit(schedule: Schedule, topology: Topology) -> None:
    if schedule.num_nodes != topology.num_nodes:
        raise ScheduleError(f"schedule has {schedule.num_nodes} nodes but {topology.name} has {topology.num_nodes}")


def transfer_paths(schedule: Schedule, topology: Topology, routes: RouteTable | None = None):
    """(CSR offsets[T+1], link ids): the links each transfer uses, from the route table.

    A node's transfer is routed from its first NI to the destination's first NI. On
    direct networks the NI links are left out (they belong to the NIs, which the NIC
    schedules); on switched networks they are the node's only links and are kept.
    """
    _check_fit(schedule, topology)
    ep = topology.node_endpoints[:, 0]
    s_ep, d_ep = ep[schedule.src], ep[schedule.dst]
    # [T, H]: the table's rows, or only these pairs' paths
    links = route_pairs(topology, s_ep, d_ep).links if routes is None else routes.links[s_ep, d_ep]
    valid = links >= 0
    if topology.is_direct:
        valid &= topology.is_router_link[np.maximum(links, 0)]
    counts = valid.sum(axis=1)
    off = np.zeros(schedule.num_transfers + 1, dtype=np.int64)
    np.cumsum(counts, out=off[1:])
    return off, links[valid].astype(np.int64)


def message_starts(schedule: Schedule) -> np.ndarray:
    """bool[T]: the transfers that start a message.

    Transfers of one step with the same sender and receiver (a 2D ring's row phase moves
    several flows at once, halving-doubling moves half a vector of flows) go as one
    message; transfers are in canonical order, so a message's transfers are adjacent
    once sorted by (step, src, dst).
    """
    order = np.lexsort((schedule.dst, schedule.src, schedule.step))
    key = np.stack([schedule.step[order], schedule.src[order], schedule.dst[order]], axis=1)
    first = np.ones(schedule.num_transfers, dtype=bool)
    first[1:] = np.any(key[1:] != key[:-1], axis=1)
    out = np.zeros(schedule.num_transfers, dtype=bool)
    out[order] = first
    return out


def contention(schedule: Schedule, topology: Topology, routes: RouteTable | None = None) -> Contention:
    """Messages per directed link per step (transfers sharing step, sender and receiver are one message)."""
    off, flat = transfer_paths(schedule, topology, routes)
    lengths = np.diff(off) * message_starts(schedule)
    keep = np.repeat(message_starts(schedule), np.diff(off))
    flat = flat[keep]
    step_of_link_use = np.repeat(schedule.step.astype(np.int64), lengths)
    nl = topology.num_links
    key = step_of_link_use * nl + flat
    uses = np.bincount(key, minlength=schedule.num_steps * nl).reshape(schedule.num_steps, nl) \
        if schedule.num_steps else np.zeros((0, nl), dtype=np.int64)
    return Contention(
        max_per_step=tuple(int(x) for x in uses.max(axis=1)) if nl else (),
        worst_link_per_step=tuple(int(np.argmax(u)) if u.max() > 0 else -1 for u in uses),
        link_messages=uses.sum(axis=0),
    )


@dataclass(frozen=True)
class Bounds:
    size_bytes: int
    injection_cycles: float
    bisection_cycles: float
    node_bytes_per_cycle: float
    bisection_bytes_per_cycle: float
    min_tree_steps: int

    @property
    def bandwidth_cycles(self) -> float:
        """The tighter of the two bandwidth bounds."""
        return max(self.injection_cycles, self.bisection_cycles)


def node_bytes_per_cycle(topology: Topology) -> float:
    """What one node can inject per cycle: its NIs' links, capped by its router links."""
    ep = topology.node_endpoints
    inj = topology.link_bytes_per_cycle[topology.inject_link[ep]].sum(axis=1)
    bw = float(inj.min())
    if topology.is_direct:
        offsets, links = topology.router_out_links
        per_router = np.add.reduceat(topology.link_bytes_per_cycle[links], offsets[:-1]) \
            if len(links) else np.zeros(topology.num_routers)
        per_router = np.where(np.diff(offsets) > 0, per_router, 0.0)
        if topology.num_nodes > 1:
            bw = min(bw, float(per_router.min()))
    return bw


def bisection_bytes_per_cycle(topology: Topology) -> float:
    side = topology.bisection_partition()
    cross = (side[topology.link_src] == 0) & (side[topology.link_dst] == 1)
    return float(topology.link_bytes_per_cycle[cross].sum())


def bounds(topology: Topology, size_bytes: int, nis: int | None = None) -> Bounds:
    """Lower bounds for an all-reduce of ``size_bytes`` on ``topology``."""
    n = topology.num_nodes
    nis = topology.nis_per_node if nis is None else int(nis)
    b_node = node_bytes_per_cycle(topology)
    b_bis = bisection_bytes_per_cycle(topology)
    inj = 2 * (n - 1) / n * size_bytes / b_node if n > 1 else 0.0
    bis = size_bytes / b_bis if (n > 1 and b_bis > 0) else 0.0
    if topology.is_direct:
        usable = min(int(np.count_nonzero(topology.is_router_link)), n * nis)
    else:
        usable = n * nis
    steps = math.ceil(n * (n - 1) / usable) if n > 1 else 0
    return Bounds(size_bytes=int(size_bytes), injection_cycles=inj, bisection_cycles=bis,
                  node_bytes_per_cycle=b_node, bisection_bytes_per_cycle=b_bis, min_tree_steps=steps)


def ideal_cycles(schedule: Schedule, topology: Topology, size_bytes: int, *, element_bytes: int = 4,
                 routes: RouteTable | None = None) -> float:
    """Lockstep, zero-latency time: per step, the busiest link or NI's bytes / bandwidth."""
    off, flat = transfer_paths(schedule, topology, routes)
    elems = max(1, size_bytes // element_bytes)
    tb = schedule.transfer_elements(elems).astype(np.float64) * element_bytes
    nl = topology.num_links
    steps = schedule.num_steps
    lengths = np.diff(off)
    link_bytes = np.zeros((steps, nl))
    np.add.at(link_bytes, (np.repeat(schedule.step, lengths), flat), np.repeat(tb, lengths))
    link_time = (link_bytes / topology.link_bytes_per_cycle[None, :]).max(axis=1) if nl else np.zeros(steps)
    # NIs: a node's sends share its NIs (each at its inject-link bandwidth), likewise receives
    ep = topology.node_endpoints
    inj_bw = topology.link_bytes_per_cycle[topology.inject_link[ep]].sum(axis=1)  # per node
    ej_bw = topology.link_bytes_per_cycle[topology.eject_link[ep]].sum(axis=1)
    n = schedule.num_nodes
    sent = np.zeros((steps, n))
    recv = np.zeros((steps, n))
    np.add.at(sent, (schedule.step, schedule.src), tb)
    np.add.at(recv, (schedule.step, schedule.dst), tb)
    ni_time = np.maximum(sent / inj_bw[None, :], recv / ej_bw[None, :]).max(axis=1)
    return float(np.maximum(link_time, ni_time).sum())


def ni_occupancy_cycles(schedule: Schedule, topology: Topology, size_bytes: int, *, element_bytes: int = 4,
                        routes: RouteTable | None = None) -> float:
    """A lower bound on the schedule's time on NICs whose NI sends one transfer at a time
    (the co-designed and baseline NICs of :mod:`nic.allreduce`): the busiest node's send
    occupancy, the sum over its transfers of bytes / (the least bandwidth on the transfer's
    way: its route's links, the sender's and the receiver's NI link), over its NIs.

    Unlike :func:`nic.collectives.optimal_bound` (which gives a node the sum of its NI
    links), a transfer through a slow link holds a whole NI for as long as that link takes
    to carry it."""
    off, flat = transfer_paths(schedule, topology, routes)
    elems = max(1, size_bytes // element_bytes)
    tb = schedule.transfer_elements(elems).astype(np.float64) * element_bytes
    bw = topology.link_bytes_per_cycle
    ep = topology.node_endpoints[:, 0]
    rate = np.minimum(bw[topology.inject_link[ep[schedule.src]]],
                      bw[topology.eject_link[ep[schedule.dst]]]).astype(np.float64)
    np.minimum.at(rate, np.repeat(np.arange(schedule.num_transfers), np.diff(off)), bw[flat])
    busy = np.bincount(schedule.src, weights=tb / rate, minlength=schedule.num_nodes)
    return float(busy.max() / topology.nis_per_node)
