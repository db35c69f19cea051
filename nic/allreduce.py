"""All-reduce simulation: a Schedule run by NICs over a network, into an AllreduceResult.

``simulate_allreduce(topology, schedule, nic, network, size_bytes, model=...)``:

* ``model="message"`` — the fast message-level model (``nic.message_sim`` over
  ``noc.message``): each transfer holds its route's links for its serialisation time,
  pipelined across hops, sharing links max-min fairly (with step priority for the
  co-designed NIC); given the flit-level network config it also reproduces the wormhole
  network's VC holding (a bulk transfer's head acquires a VC per hop and blocks the
  transfers behind it), the buffering between an NI and a route's bottleneck, and the
  one-queue-per-NI order of packets (``nic.flow_control``);
* ``model="flit"`` — the flit-level co-simulation (``nic.flit_cosim``): the NIC scheduler
  cycle model of every node over the flit-level network of ``noc``.

Two NIC designs (:class:`NicConfig`, ``nic.nic_config``): the **co-designed** NIC (schedule tables, strict
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

This module picks and runs the model; the parts it runs have a module each:
``nic.nic_config`` (the NIC, its variants, the router checks), ``nic.preparation`` (the
schedule as transfers: NIs, wire bytes, dependencies, routes), ``nic.flow_control`` (what
the message model takes from the router config), ``nic.message_sim`` and
``nic.flit_cosim`` (the two models).
"""

from __future__ import annotations

import threading
import warnings
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import replace

import numpy as np
from numba import njit

from nic.collectives import Schedule, bounds, verify
from nic.collectives.verify import timed_order_is_stepped
from nic.flow_control import route_flow_control
from nic.message_sim import POLICY_CODESIGNED, TransferTimes, simulate_routes
from nic.nic_config import NicConfig, honours_priority
from nic.preparation import Prepared, distinct_routes, prepare, transfer_routes
from nic.reduction import MODES as REDUCTION_MODES
from nic.result import AllreduceResult
from noc.base.config import check_seed
from noc.base.errors import ConfigError, DeadlockError, DeadlockRiskWarning
from noc.routing import PairRoutes, RouteTable, check_deadlock_free, route_pairs
from noc.topology import Topology


MODELS = ("message", "flit")


# What a message-level run holds at its peak above its schedule, fitted to the measured run of
# tests/nic/test_allreduce_scale.py (24x24 torus, 4 NIs: 73.0 MB against 73.6 MB estimated):
# per transfer (its layout for the simulators, the times and the per-transfer state of the
# event loop, the timed replay's sorted events), per link of its path (the routes: int32
# link and int8 class, as if every transfer's endpoint pair were its own; runs keep one row
# per distinct pair, so neighbour schedules hold far less), and the verifier's vectors, at
# most three int64 values per node and element (2 elements per flow and 1: its partial
# sums, final values and per node and flow counts). The event loop's state for transfers
# under way, a few hundred bytes per NI, is in the per-transfer figure.
MESSAGE_BYTES_PER_TRANSFER = 72

MESSAGE_BYTES_PER_PATH_LINK = 5

# A run estimated to need more is refused before it starts (the machine would swap or kill it).
MAX_RUN_BYTES = 8 << 30


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
                        "(noc.base.units.parse_size_bytes reads '64KiB')")
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


@njit(cache=True)
def _link_bytes(links, route_of, wire_bytes, num_links):
    """Bytes each link carried: every transfer's wire bytes on each link of its path (row
    ``route_of[i]`` of ``links``, or row i when ``route_of`` is empty), added in transfer
    order, as ``np.bincount`` adds them."""
    out = np.zeros(num_links)
    for i in range(wire_bytes.shape[0]):
        r = route_of[i] if route_of.shape[0] > 0 else i
        for h in range(links.shape[1]):
            lk = links[r, h]
            if lk >= 0:
                out[lk] += wire_bytes[i]
    return out


def _loop_layout(prep: Prepared) -> Prepared:
    """``prep`` without what the message-level loop does not read once the routes are known:
    the endpoints and the payloads (16 bytes per transfer; the wire bytes stay)."""
    return replace(prep, payload_bytes=None, src_ep=None, dst_ep=None)


def run_message(topology: Topology, prep: Prepared, nic: NicConfig, network, *,
                routes: RouteTable | PairRoutes | None = None, not_before: np.ndarray | None = None,
                route_of: np.ndarray | None = None) -> tuple[TransferTimes, np.ndarray]:
    """Time a prepared schedule with the message-level model: per-transfer times and the
    bytes each link carried. ``not_before``: per transfer, a cycle it may not start before
    (e.g. the flit level's start times, to compare the two networks on one start order).
    ``routes`` with ``route_of``: the rows of :func:`nic.preparation.distinct_routes`; without
    ``routes``, those are derived here."""
    if route_of is not None and not isinstance(routes, PairRoutes):
        raise ValueError("route_of goes with routes (the PairRoutes whose rows it names)")
    if route_of is None:
        paths, route_of = distinct_routes(topology, prep, network, routes)
    else:
        paths = routes
    wormhole, ni_bw, shared = route_flow_control(topology, paths, nic, network)
    # The sending NI is whichever of the node's NIs is free (the NI count limits a node's
    # concurrent sends), so the injection hop is a private resource per transfer at the NI's
    # bandwidth rather than one particular NI's link (simulate_routes).
    times = simulate_routes(
        src_node=prep.src_node, step=prep.step, wire_bytes=prep.wire_bytes, dep_ptr=prep.dep_ptr,
        dep_idx=prep.dep_idx, links=paths.links, path_len=paths.length, vc_class=paths.vc_class,
        link_bytes_per_cycle=topology.link_bytes_per_cycle, link_latency_cycles=topology.link_latency_cycles,
        router_delay_cycles=0 if network is None else network.router_delay_cycles, ni_bytes_per_cycle=ni_bw,
        num_nodes=topology.num_nodes, nis_per_node=topology.nis_per_node, policy=nic.policy, **nic_delays(nic),
        wormhole=wormhole, shared_classes=shared is not None, shared_capacity=shared, not_before=not_before,
        step_priority=nic.prioritised and honours_priority(network), dst_node=prep.dst_node,
        reduce_work_cycles=None if nic.reduction == "free" else prep.reduce_work,
        reduce_last_cycles=None if nic.reduction == "free" else prep.reduce_last,
        reduce_latency_cycles=nic.reduce_latency_cycles,
        reduce_mode=REDUCTION_MODES[nic.reduction], tx_buffer_bytes=float(nic.tx_buffer_flits * nic.flit_bytes),
        route_of=route_of,
    )
    rows = np.zeros(0, np.int32) if route_of is None else route_of
    return times, _link_bytes(paths.links, rows, np.asarray(prep.wire_bytes, np.float64), topology.num_links)


def _timed_run(topology, schedule, prep, nic, network, model, paths, route_of, risk):
    """(start, sent, arrive, ready, link bytes, extra results) of ``model``'s run of ``prep``;
    a deadlock of a run whose routing can deadlock (``risk``) is a DeadlockError naming it."""
    if model == "flit":
        from nic.flit_cosim import run_flit  # noqa: PLC0415 (needs the flit-level network)

        try:
            timing = run_flit(topology, schedule, prep, nic, network)
        except DeadlockError as exc:
            if not risk:
                raise
            raise DeadlockError(f"{risk}; the flit level stopped in it: {exc}") from None
        return (timing.start_cycles, timing.sent_cycles, timing.arrive_cycles, timing.ready_cycles, timing.link_bytes,
                dict(timing.extra))
    try:
        times, link_bytes = run_message(topology, prep, nic, network, routes=paths, route_of=route_of)
    except RuntimeError as exc:
        if not risk:
            raise
        # the heads of bulk transfers hold VCs: around the cycle they wait for each other
        raise DeadlockError(f"{risk}; the message model stalled in it: {exc}") from None
    return times.start_cycles, times.sent_cycles, times.arrive_cycles, times.usable_cycles, link_bytes, {}


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
        paths = route_of = None
        if model == "message":  # the routes of the distinct endpoint pairs, and each transfer's
            paths, route_of = distinct_routes(topology, prep, network, routes)
            check_run_bytes(topology, schedule, paths)
        risk = ""
        if network is not None and hasattr(network, "num_vcs"):  # VC routers: run the dependency check first
            risk = deadlock_risk(topology, schedule, paths if paths is not None else route_pairs(
                topology, prep.src_ep, prep.dst_ep, network.routing, dateline=network.dateline,
                vc_rule=getattr(network, "vc_class_rule", "dateline")))
            if risk:
                warnings.warn(risk, DeadlockRiskWarning, stacklevel=2)
        if model == "message" and times_out is None:  # the routes are known: the endpoints and payloads go
            prep = _loop_layout(prep)
        # (the verification ends before the model runs: beside the event loop, its vectors
        # would add to the loop's peak memory, 4.3 GB against 3.6 GB on torus:64x64:c4)
        verified = True if verifying is None else verifying.result()
    start, sent, arrive, ready, link_bytes, extra = _timed_run(topology, schedule, prep, nic, network, model, paths,
                                                               route_of, risk)
    check_times(prep, start, ready)
    total = float(arrive.max()) if arrive.size else 0.0
    step_end = _step_ends(prep.step, np.asarray(arrive, np.float64), schedule.num_steps)
    idle = _idle_fraction(prep, start, sent, topology.num_nodes, total)
    if nic.reduction != "free":
        busy = np.bincount(prep.dst_node, weights=prep.reduce_work, minlength=topology.num_nodes)
        extra.update({"reduction": nic.reduction, "reduce_busy_cycles_max": int(busy.max())})
    # the reduction the simulation performed: the schedule replayed on exact integers in the
    # simulated order (each transfer carries its sender's data as it was when it started);
    # without times_out, the layout, the routes and the other times are let go first (the
    # replay sorts its own events); a run whose events come in the stepped order (a lockstep
    # run whose steps do not overlap) replays the very events the stepped verification above
    # ran on this seed, so that replay stands for it
    if times_out is None:
        prep = paths = route_of = sent = ready = None
    if not timed_order_is_stepped(schedule, (start, arrive)):
        verify(schedule, seed=int(seed), times=(start, arrive))
    if times_out is not None:
        route = paths if paths is not None else transfer_routes(topology, prep, network, routes)
        times_out.update(start_cycles=np.asarray(start, np.float64), sent_cycles=np.asarray(sent, np.float64),
                         arrive_cycles=np.asarray(arrive, np.float64), src_ep=np.asarray(prep.src_ep),
                         dst_ep=np.asarray(prep.dst_ep), payload_bytes=np.asarray(prep.payload_bytes),
                         links=np.asarray(route.links if route_of is None else route.links[route_of]))
    router = topology.is_router_link
    util = link_bytes / topology.link_bytes_per_cycle / total if total > 0 else np.zeros(topology.num_links)
    b = bounds(topology, int(size_bytes))
    if risk:
        extra["deadlock_risk"] = risk
    extra.update({"flow_control": "bulk" if nic.bulk else "packet", "packet_bytes": nic.packet_bytes,
                  "router_delay_cycles": 0 if network is None else network.router_delay_cycles,
                  "schedule_steps": schedule.num_steps})
    return AllreduceResult(
        topology=topology.name, algorithm=schedule.algorithm, nic=nic.design, model=model,
        size_bytes=int(size_bytes), num_nodes=topology.num_nodes, nis_per_node=topology.nis_per_node,
        total_cycles=total, clock_ghz=nic.clock_ghz, bound_cycles=float(b.bandwidth_cycles), verified=verified,
        step_end_cycles=tuple(float(x) for x in step_end),
        node_idle_fraction=idle,
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


# NicConfig is the NIC argument of simulate_allreduce (from nic.nic_config), part of this entry point
__all__ = ["MAX_RUN_BYTES", "MODELS", "NicConfig", "check_run_bytes", "check_times", "deadlock_risk",
           "message_run_bytes", "nic_delays", "ring_allreduce_cycles", "run_message", "simulate_allreduce"]
