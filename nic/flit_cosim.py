"""Flit-level all-reduce co-simulation: NICs over the flit-level network of ``noc.flit``.

One Numba loop advances, every cycle, the NIC of every node and then the network:

* **co-designed NIC** — each node runs the scheduler cycle model (``nic.scheduler``,
  the contract the RTL is regressed against) loaded with its table
  (``nic.nic_table``). A send handshake hands the entry's transfer to the free NI the
  scheduler chose; the NI's packetiser feeds the network one packet at a time (bulk: one
  packet of a head flit plus the whole chunk; packet mode: a head per ``packet_bytes``);
  when the last flit has left the NI (or with a transmit queue, ``tx_buffer_flits``, when
  the rest of the message fits in it), ``ni_done`` pulses. When the last packet of a
  message is ejected at the destination, the destination scheduler sees a receive on the
  port of the NI it arrived at (one per port per cycle; more wait a cycle); a REDUCE is
  first summed by the node's reduction unit (``nic.reduction``) and is a receive event
  once that is done. Packets carry the schedule step as their priority (unless
  ``step_priority`` is off).
* **baseline NIC** — no tables: each free NI of a node starts the first transfer (in
  schedule order) whose inputs have all arrived (and been summed), ``issue_delay_cycles``
  after the last of them; packets have no priority (unless ``step_priority`` is on).

Stretches in which the network only streams (every packet on an allocated route, a flit per
cycle, no NIC event due) are jumped to the state stepping would reach
(``nic.flit_cosim_forward``). Times are integer cycles; the result is checked like the
message-level one. The loop, its
state values and its stages are in ``nic.flit_cosim_stages``; this module checks the
configs, builds the state and reads the times out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from nic.flit_cosim_stages import (ARRIVED, OUT_OF_SLOTS, STUCK, Nis, Nodes, Params, Schedulers, Times, Transfers,
                                   cosim, new_receives, new_waiting)
from nic.flit_cosim_forward import MIN_JUMP, new_forward
from nic.nic_config import check_cut_through, check_router_flit_bytes
from nic.nic_table import node_tables_with_transfers
from nic.reduction import MODES as REDUCTION_MODES
from nic.scheduler import (C_COUNT, C_DEP_COUNT, C_DEP_OP, C_FLOW, C_ISSUED, C_LEN, C_OP, C_PEER, C_STEP, C_VALID,
                           N_COLS, N_IN_HEADER, N_OUTS, N_REGS, SchedulerParams)
from noc.base.errors import ConfigError, DeadlockError
from noc.flit import C_ERR, FlitNetworkConfig, build_network, describe_stuck, new_state, seed_arbiters
from noc.topology import Topology


@dataclass(frozen=True)
class FlitTiming:
    start_cycles: np.ndarray
    sent_cycles: np.ndarray
    arrive_cycles: np.ndarray
    link_bytes: np.ndarray
    ready_cycles: np.ndarray  # the data usable at the receiver: after a REDUCE's summation
    extra: dict = field(default_factory=dict)


def flit_network(topology: Topology, nic, network: FlitNetworkConfig | None):
    """The flit-level network the co-simulation runs on, after checking that the router
    config, the NIC and the topology fit together (a :class:`ConfigError` says how not)."""
    cfg = FlitNetworkConfig() if network is None else network
    flit_bytes = nic.flit_bytes
    check_router_flit_bytes(cfg, nic)
    wide = topology.link_bytes_per_cycle > flit_bytes
    if np.any(wide):
        # the flit level carries at most one flit per link per cycle: a wider link would be
        # under-used, and the message model (bytes_per_cycle) would not be comparable
        raise ConfigError(f"flit_bytes = {flit_bytes}: {topology.name} has links of "
                          f"{sorted(set(topology.link_bytes_per_cycle[wide].tolist()))} B/cycle, wider than a flit, and "
                          "the flit level carries at most one flit per link per cycle; set flit_bytes to at least "
                          f"{float(topology.link_bytes_per_cycle.max()):g} (the widest link)")
    # links narrower than a flit carry one flit every flit_bytes / bytes_per_cycle cycles
    if cfg.flow_control == "vct":
        check_cut_through(nic, cfg)
    cfg = cfg.model_copy(update={"flit_bytes": flit_bytes})
    return build_network(topology, cfg)


MAX_CYCLES = 2_000_000_000  # a co-simulation stops here (hw_models.estimate refuses runs that need more)


def run_flit(topology: Topology, schedule, prep, nic, network: FlitNetworkConfig | None, *,
             max_cycles: int = MAX_CYCLES, fast_forward: bool = True, state_out: dict | None = None) -> FlitTiming:
    """Co-simulate ``schedule`` (laid out by ``nic.preparation.prepare``) at flit level.
    ``fast_forward``: jump the stretches that only stream (``nic.flit_cosim_forward``; the
    same result to the cycle as stepping every cycle, which False does). ``state_out``: a dict
    that receives the network state at the end (``state``) and the cycles jumped (``jumped``)."""
    net = flit_network(topology, nic, network)
    cfg = FlitNetworkConfig() if network is None else network
    flit_bytes = nic.flit_bytes
    n = topology.num_nodes
    nis = topology.nis_per_node
    sch = _schedulers(schedule, prep, nic, n, nis)
    t_count = schedule.num_transfers
    node_eps = topology.node_endpoints.astype(np.int64)
    ep_port = np.zeros(topology.num_endpoints, np.int64)
    for v in range(n):
        ep_port[node_eps[v]] = np.arange(nis)
    nodes = Nodes(node_eps=node_eps, ep_node=topology.endpoint_node.astype(np.int64), ep_port=ep_port)
    # the kernel's argument types fixed whatever prepare built (int32 or int64 columns and
    # dependencies, broadcast read-only reduction work), so it compiles once per network type
    tr, dep_ptr = _transfers(schedule, prep, n)
    prm = Params(codesigned=nic.design == "codesigned", bulk=bool(nic.bulk), flit_bytes=int(flit_bytes),
                 packet_bytes=int(nic.packet_bytes), prio_on=bool(nic.prioritised),
                 issue_delay=int(nic.issue_delay_cycles), tx_buffer_flits=int(nic.tx_buffer_flits),
                 reduce_latency=int(nic.reduce_latency_cycles), reduce_mode=int(REDUCTION_MODES[nic.reduction]),
                 max_cycles=int(max_cycles),
                 fast_forward=bool(fast_forward) and net.ser is None and not net.debug,
                 min_jump=max(MIN_JUMP, 2 * int(net.ring), 2 * int(net.cring), int(net.D) + 1))
    nis_state = Nis(transfer=np.full(topology.num_endpoints, -1, np.int64),
                    left_bytes=np.zeros(topology.num_endpoints, np.int64), done_next=np.zeros(n, np.int64))
    packets = np.ones(t_count, np.int64) if nic.bulk else np.maximum(
        1, (tr.payload_bytes + nic.packet_bytes - 1) // nic.packet_bytes)
    rx = new_receives(packets, n, nis)
    wait = new_waiting(dep_ptr, tr.node_ptr)
    times = Times(*(np.full(t_count, -1, np.int64) for _ in range(4)), counts=np.zeros(2, np.int64))
    flits_max = int(net.num_links * (net.V * net.D + net.ring) + 4 * topology.num_endpoints + 64)
    st = new_state(net, flits_max)
    seed_arbiters(net, st, cfg.arbiter_seed)
    ff = new_forward(net)
    cycles, status = cosim(net, st, tr, nodes, prm, sch, nis_state, rx, wait, times, ff)
    if state_out is not None:
        state_out.update(state=st, jumped=int(ff.stats[1]), jumps=int(ff.stats[0]))
    arrived = int(times.counts[ARRIVED])
    if status == STUCK:
        raise DeadlockError(f"all-reduce co-simulation deadlocked at cycle {cycles}: {describe_stuck(net, st, topology)}")
    if status == OUT_OF_SLOTS:
        raise RuntimeError("flit-level co-simulation ran out of packet slots")
    if arrived < t_count:
        raise RuntimeError(f"co-simulation stopped at cycle {cycles} with {t_count - arrived} of {t_count} transfers "
                           "undelivered (scheduler stalled?)")
    if status > 0:
        raise RuntimeError(f"the NIC schedulers flagged {status} error cycles (unexpected messages)")
    if st.counters[C_ERR]:
        raise AssertionError("flit-level invariant violated")
    return FlitTiming(times.start.astype(np.float64), times.sent.astype(np.float64), times.arrive.astype(np.float64),
                      st.link_flits.astype(np.float64) * flit_bytes, times.ready.astype(np.float64),
                      extra={"cycles_simulated": int(cycles), "router_delay_cycles": cfg.router_delay_cycles})


def _schedulers(schedule, prep, nic, n: int, nis: int) -> Schedulers:
    """Every node's scheduler (``nic.scheduler``) loaded with its table (``nic.nic_table``),
    in reset state, and the table row -> transfer map."""
    tables, tids = node_tables_with_transfers(schedule, max(schedule.num_flows, 1))
    depth = max(1, max(len(t) for t in tables))
    params = SchedulerParams(depth=min(4096, 1 << (depth - 1).bit_length()), nis=nis, flow_w=16, node_w=16,
                             step_w=16, len_w=32, cnt_w=8, err_w=16)
    if depth > params.depth:
        raise ConfigError(f"{schedule.algorithm} needs {depth} table rows per node; the scheduler model holds 4096")
    tabs = np.zeros((n, params.depth, N_COLS), np.int64)
    row_tid = np.full((n, params.depth), -1, np.int64)
    for v, (rows, tid) in enumerate(zip(tables, tids)):
        k = len(rows)
        tabs[v, :k, C_VALID] = 1
        tabs[v, :k, C_OP] = rows[:, 0]
        tabs[v, :k, C_FLOW] = rows[:, 1]
        tabs[v, :k, C_PEER] = rows[:, 2]
        tabs[v, :k, C_STEP] = rows[:, 3]
        tabs[v, :k, C_LEN] = np.where(tid >= 0, prep.payload_bytes[np.maximum(tid, 0)] // nic.element_bytes, 0)
        tabs[v, :k, C_DEP_OP] = rows[:, 5]
        tabs[v, :k, C_DEP_COUNT] = rows[:, 6]
        tabs[v, :k, C_COUNT] = 0
        tabs[v, :k, C_ISSUED] = 0
        row_tid[v, :k] = tid
    return Schedulers(tabs=tabs, regs=np.zeros((n, N_REGS), np.int64), row_tid=row_tid, params=params.vector(),
                      inp=np.zeros(N_IN_HEADER + 3 * nis, np.int64), out=np.zeros(N_OUTS, np.int64),
                      quiet=np.zeros(n, np.bool_), regs_before=np.zeros(N_REGS, np.int64))


def _transfers(schedule, prep, num_nodes: int) -> tuple[Transfers, np.ndarray]:
    """The transfers as the loop reads them (int64 columns), and the dependency pointers:
    the transfers waiting for each one, in schedule order (reverse CSR of the dependencies),
    and each node's transfers in schedule order."""
    col = lambda x: np.ascontiguousarray(x, np.int64)  # noqa: E731
    dep_ptr, dep_idx = col(prep.dep_ptr), col(prep.dep_idx)
    t = len(dep_ptr) - 1
    waiting = np.repeat(np.arange(t, dtype=np.int64), np.diff(dep_ptr))
    rdep_idx = waiting[np.argsort(dep_idx, kind="stable")]
    rdep_ptr = np.zeros(t + 1, np.int64)
    np.cumsum(np.bincount(dep_idx, minlength=t), out=rdep_ptr[1:])
    src = col(prep.src_node)
    node_ptr = np.zeros(num_nodes + 1, np.int64)
    np.cumsum(np.bincount(src, minlength=num_nodes), out=node_ptr[1:])
    tr = Transfers(src_node=src, dst_ep=col(prep.dst_ep), flow=col(schedule.flow), op=col(schedule.op),
                   step=col(prep.step), payload_bytes=col(prep.payload_bytes), rdep_ptr=rdep_ptr, rdep_idx=rdep_idx,
                   node_ptr=node_ptr, node_tx=np.argsort(src, kind="stable").astype(np.int64),
                   reduce_work=np.array(prep.reduce_work, np.int64), reduce_last=np.array(prep.reduce_last, np.int64))
    return tr, dep_ptr
