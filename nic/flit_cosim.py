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

Times are integer cycles; the result is checked like the message-level one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numba import njit

from nic.nic_config import check_cut_through, check_router_flit_bytes
from nic.nic_table import node_tables_with_transfers
from nic.reduction import MODES as REDUCTION_MODES, reduce_done
from nic.scheduler import (
    C_COUNT, C_DEP_COUNT, C_DEP_OP, C_FLOW, C_ISSUED, C_LEN, C_OP, C_PEER, C_STEP, C_VALID, I_NI_DONE, I_RECV_VALID,
    I_SEND_READY, I_START, N_COLS, N_IN_HEADER, N_OUTS, N_REGS, O_DONE, O_ERR, O_SEND_ENTRY, O_SEND_NI, O_SEND_VALID,
    SchedulerParams, sched_edge, sched_outputs,
)
from noc.base.errors import ConfigError, DeadlockError
from noc.flit import (
    C_ERR, FlitNetworkConfig, build_network, describe_stuck, enqueue_packet, new_state, pop_ejected, seed_arbiters, step,
    stuck,
)
from noc.topology import Topology


@dataclass(frozen=True)
class FlitTiming:
    start_cycles: np.ndarray
    sent_cycles: np.ndarray
    arrive_cycles: np.ndarray
    link_bytes: np.ndarray
    ready_cycles: np.ndarray  # the data usable at the receiver: after a REDUCE's summation
    extra: dict = field(default_factory=dict)


@njit(cache=True)
def _unsent_flits(st, ep):
    """Flits queued at NI ``ep`` that have not entered the network yet."""
    n = 0
    p = st.q_head[ep]
    while p >= 0:
        n += st.p_flits[p] - st.p_sent[p]
        p = st.p_next[p]
    return n


@njit(cache=True)
def _cosim(net, st, codesigned, tabs, regs, row_tid, params, nis, node_eps, ep_node, ep_port,
           t_src, t_dst_ep, t_flow, t_op, t_step, t_payload, flit_bytes, packet_bytes, bulk,
           dep_ptr, dep_idx, issue_delay, max_cycles, start, sent, arrive,
           prio_on, red_work, red_last, red_latency, red_mode, ready, tx_buf):
    n_nodes = node_eps.shape[0]
    n_t = t_src.shape[0]
    e = ep_node.shape[0]
    # NI state (per endpoint): transfer being sent, bytes still to packetise, a packet queued
    ni_t = np.full(e, -1, np.int64)
    ni_left = np.zeros(e, np.int64)
    ni_done_next = np.zeros(n_nodes, np.int64)  # bit mask of NIs whose message left last cycle
    # receive side: packets still to arrive per transfer; pending receive events per (node, port)
    pk_left = np.zeros(n_t, np.int64)
    for t in range(n_t):
        if bulk:
            pk_left[t] = 1
        else:
            pk_left[t] = max(1, (t_payload[t] + packet_bytes - 1) // packet_bytes)
    q_cap = n_t + 1
    pend = np.full((n_nodes, nis, q_cap), -1, np.int64)
    pend_h = np.zeros((n_nodes, nis), np.int64)
    pend_n = np.zeros((n_nodes, nis), np.int64)
    # baseline NIC: dependencies left and when a transfer may start
    deps_left = np.zeros(n_t, np.int64)
    ready_at = np.zeros(n_t, np.int64)
    rdep_cnt = np.zeros(n_t + 1, np.int64)
    for t in range(n_t):
        deps_left[t] = dep_ptr[t + 1] - dep_ptr[t]
        for k in range(dep_ptr[t], dep_ptr[t + 1]):
            rdep_cnt[dep_idx[k] + 1] += 1
    for t in range(n_t):
        rdep_cnt[t + 1] += rdep_cnt[t]
    rdep = np.empty(dep_idx.shape[0], np.int64)
    fill = rdep_cnt[:-1].copy()
    for t in range(n_t):
        for k in range(dep_ptr[t], dep_ptr[t + 1]):
            d = dep_idx[k]
            rdep[fill[d]] = t
            fill[d] += 1
    node_ptr = np.zeros(n_nodes + 1, np.int64)
    for t in range(n_t):
        node_ptr[t_src[t] + 1] += 1
    for v in range(n_nodes):
        node_ptr[v + 1] += node_ptr[v]
    node_tx = np.empty(n_t, np.int64)
    fill2 = node_ptr[:-1].copy()
    for t in range(n_t):
        node_tx[fill2[t_src[t]]] = t
        fill2[t_src[t]] += 1
    node_first = node_ptr[:-1].copy()  # baseline: first transfer not yet started, per node
    # reduction units: busy until; co-designed: summed REDUCEs waiting to become receive
    # events (per node, FIFO: a unit finishes in arrival order)
    unit_free = np.zeros(n_nodes, np.int64)
    dep_ready = np.zeros(n_t, np.int64)
    rq = np.empty((n_nodes, n_t + 1), np.int64)
    rq_h = np.zeros(n_nodes, np.int64)
    rq_n = np.zeros(n_nodes, np.int64)

    inp = np.zeros(N_IN_HEADER + 3 * nis, np.int64)
    out = np.zeros(N_OUTS, np.int64)
    depth = tabs.shape[1]
    quiet = np.zeros(n_nodes, np.bool_)  # co-designed: state unchanged by an input-free edge
    regs_before = np.zeros(regs.shape[1], np.int64)
    next_check = np.zeros(n_nodes, np.int64)  # baseline: when a node's NIs must look again
    arrived = 0
    now = np.int64(0)  # not the literal 0: a literal first type compiles step twice
    errors = 0
    while now < max_cycles:
        # ---- NICs
        for v in range(n_nodes):
            while rq_n[v] > 0 and ready[rq[v, rq_h[v]]] < now:  # summed: a receive event
                t = rq[v, rq_h[v]]
                rq_h[v] = (rq_h[v] + 1) % rq.shape[1]
                rq_n[v] -= 1
                p = ep_port[t_dst_ep[t]]
                pend[v, p, (pend_h[v, p] + pend_n[v, p]) % q_cap] = t
                pend_n[v, p] += 1
            if codesigned:
                has_input = now == 0 or ni_done_next[v] != 0
                if not has_input:
                    for p in range(nis):
                        if pend_n[v, p] > 0:
                            has_input = True
                            break
                if quiet[v] and not has_input:
                    continue  # same state, no inputs: the same (idle) outputs and no change
                sched_outputs(tabs[v], regs[v], params, out)
                inp[:] = 0
                if now == 0:
                    inp[I_START] = 1
                inp[I_NI_DONE] = ni_done_next[v]
                mask = 0
                for p in range(nis):
                    if pend_n[v, p] > 0:
                        t = pend[v, p, pend_h[v, p]]
                        pend_h[v, p] = (pend_h[v, p] + 1) % q_cap
                        pend_n[v, p] -= 1
                        mask |= 1 << p
                        inp[N_IN_HEADER + p] = t_flow[t]
                        inp[N_IN_HEADER + nis + p] = t_op[t]
                        inp[N_IN_HEADER + 2 * nis + p] = t_src[t]
                inp[I_RECV_VALID] = mask
                launch = -1
                ni = 0
                if out[O_SEND_VALID] == 1:
                    inp[I_SEND_READY] = 1
                    launch = row_tid[v, out[O_SEND_ENTRY]]
                    ni = out[O_SEND_NI]
                regs_before[:] = regs[v]
                issued_before = 0
                for i in range(depth):
                    issued_before += tabs[v, i, C_ISSUED]
                sched_edge(tabs[v], regs[v], params, inp, out)
                if out[O_ERR] != 0:
                    errors += 1
                issued_after = 0
                for i in range(depth):
                    issued_after += tabs[v, i, C_ISSUED]
                same = issued_after == issued_before
                for i in range(regs_before.shape[0]):
                    if regs_before[i] != regs[v, i]:
                        same = False
                        break
                quiet[v] = same and not has_input and launch < 0
                if launch >= 0:
                    ep = node_eps[v, ni]
                    ni_t[ep] = launch
                    ni_left[ep] = t_payload[launch]
                    start[launch] = now
            else:
                if next_check[v] > now:
                    continue  # nothing this node waits for has happened since its last scan
                earliest = max_cycles
                for p in range(nis):
                    ep = node_eps[v, p]
                    if ni_t[ep] >= 0:
                        continue
                    # the first transfer (schedule order) of this node that may start
                    for j in range(node_first[v], node_ptr[v + 1]):
                        t = node_tx[j]
                        if start[t] >= 0:
                            if j == node_first[v]:
                                node_first[v] += 1
                            continue
                        if deps_left[t] == 0:
                            if ready_at[t] <= now:
                                start[t] = now
                                ni_t[ep] = t
                                ni_left[ep] = t_payload[t]
                                break
                            if ready_at[t] < earliest:
                                earliest = ready_at[t]
                next_check[v] = earliest  # an arrival or a freed NI wakes it earlier
            ni_done_next[v] = 0
        # ---- packetisers: into the NI's source queue while it holds at most tx_buf flits
        # not yet sent (0: one packet at a time, into an empty queue)
        for ep in range(e):
            t = ni_t[ep]
            if t < 0:
                continue
            if tx_buf == 0:
                if st.q_head[ep] >= 0:
                    continue
            elif _unsent_flits(st, ep) > tx_buf:
                continue
            if ni_left[ep] < 0:  # all but tx_buf flits have left the NI: the message is sent
                sent[t] = now
                ni_t[ep] = -1
                ni_done_next[ep_node[ep]] |= 1 << ep_port[ep]
                next_check[ep_node[ep]] = now + 1
                continue
            if bulk:
                size = ni_left[ep]
            else:
                size = min(ni_left[ep], packet_bytes)
            flits = 1 + (size + flit_bytes - 1) // flit_bytes
            prio = t_step[t] if prio_on else 0
            if not enqueue_packet(net, st, ep, np.int64(t_dst_ep[t]), flits, prio, t, now):
                return now, arrived, -3
            ni_left[ep] -= size
            if ni_left[ep] == 0:
                ni_left[ep] = -1  # all packets queued; done when the queue drains
        # ---- the network
        step(net, st, now)
        while True:
            t, cyc = pop_ejected(st)
            if t == -1 and cyc == -1:
                break
            pk_left[t] -= 1
            if pk_left[t] == 0:
                arrive[t] = cyc
                d = ep_node[t_dst_ep[t]]
                ready[t] = reduce_done(unit_free, d, cyc, red_work[t], red_last[t], red_latency, red_mode)
                arrived += 1
                if codesigned:
                    if ready[t] > cyc:  # the receive event waits for the reduction
                        rq[d, (rq_h[d] + rq_n[d]) % rq.shape[1]] = t
                        rq_n[d] += 1
                    else:
                        p = ep_port[t_dst_ep[t]]
                        pend[d, p, (pend_h[d, p] + pend_n[d, p]) % q_cap] = t
                        pend_n[d, p] += 1
                else:
                    for k in range(rdep_cnt[t], rdep_cnt[t + 1]):
                        w = rdep[k]
                        deps_left[w] -= 1
                        if ready[t] > dep_ready[w]:
                            dep_ready[w] = ready[t]
                        if deps_left[w] == 0:
                            ready_at[w] = dep_ready[w] + issue_delay
                            if ready_at[w] < next_check[t_src[w]]:
                                next_check[t_src[w]] = ready_at[w]
        if stuck(net, st):
            return now, arrived, -2
        now += 1
        if arrived == n_t:
            if not codesigned:
                break
            all_done = True
            for v in range(n_nodes):
                sched_outputs(tabs[v], regs[v], params, out)
                if out[O_DONE] != 1:
                    all_done = False
                    break
            if all_done or now > max_cycles:
                break
    return now, arrived, errors


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


def run_flit(topology: Topology, schedule, prep, nic, network: FlitNetworkConfig | None, *,
             max_cycles: int = 2_000_000_000) -> FlitTiming:
    """Co-simulate ``schedule`` (laid out by ``nic.preparation.prepare``) at flit level."""
    net = flit_network(topology, nic, network)
    cfg = FlitNetworkConfig() if network is None else network
    flit_bytes = nic.flit_bytes
    n = topology.num_nodes
    nis = topology.nis_per_node
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
    regs = np.zeros((n, N_REGS), np.int64)
    node_eps = topology.node_endpoints.astype(np.int64)
    ep_node = topology.endpoint_node.astype(np.int64)
    ep_port = np.zeros(topology.num_endpoints, np.int64)
    for v in range(n):
        ep_port[node_eps[v]] = np.arange(nis)
    t_count = schedule.num_transfers
    flits_max = int(net.num_links * (net.V * net.D + net.ring) + 4 * topology.num_endpoints + 64)
    st = new_state(net, flits_max)
    seed_arbiters(net, st, cfg.arbiter_seed)
    start = np.full(t_count, -1, np.int64)
    sent = np.full(t_count, -1, np.int64)
    arrive = np.full(t_count, -1, np.int64)
    ready = np.full(t_count, -1, np.int64)
    bulk = nic.bulk
    # the kernel's argument types fixed whatever prepare built (int32 or int64 dependencies,
    # broadcast read-only reduction work), so it compiles once per network type
    dep_ptr, dep_idx = (np.ascontiguousarray(x, np.int64) for x in (prep.dep_ptr, prep.dep_idx))
    red_work, red_last = (np.array(x, np.int64) for x in (prep.reduce_work, prep.reduce_last))
    cycles, arrived, status = _cosim(
        net, st, nic.design == "codesigned", tabs, regs, row_tid, params.vector(), nis, node_eps, ep_node, ep_port,
        prep.src_node, prep.dst_ep, schedule.flow.astype(np.int64), schedule.op.astype(np.int64), prep.step,
        prep.payload_bytes, flit_bytes, nic.packet_bytes, bulk, dep_ptr, dep_idx,
        nic.issue_delay_cycles, max_cycles, start, sent, arrive, nic.prioritised, red_work,
        red_last, nic.reduce_latency_cycles, REDUCTION_MODES[nic.reduction], ready, nic.tx_buffer_flits)
    if status == -2:
        raise DeadlockError(f"all-reduce co-simulation deadlocked at cycle {cycles}: {describe_stuck(net, st, topology)}")
    if status == -3:
        raise RuntimeError("flit-level co-simulation ran out of packet slots")
    if arrived < t_count:
        raise RuntimeError(f"co-simulation stopped at cycle {cycles} with {t_count - arrived} of {t_count} transfers "
                           "undelivered (scheduler stalled?)")
    if status > 0:
        raise RuntimeError(f"the NIC schedulers flagged {status} error cycles (unexpected messages)")
    if st.counters[C_ERR]:
        raise AssertionError("flit-level invariant violated")
    return FlitTiming(start.astype(np.float64), sent.astype(np.float64), arrive.astype(np.float64),
                      st.link_flits.astype(np.float64) * flit_bytes, ready.astype(np.float64),
                      extra={"cycles_simulated": int(cycles), "router_delay_cycles": cfg.router_delay_cycles})
