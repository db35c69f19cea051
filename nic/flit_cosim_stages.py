"""The co-simulation's Numba loop (``nic.flit_cosim``): state values and one stage per mechanism.

Every cycle the driver :func:`cosim` runs, in this order (unless, with
``Params.fast_forward``, :func:`_fast_forward` finds that the cycles from this one on only
stream and jumps all but the last of them, ``nic.flit_cosim_forward``):

1. per node: :func:`_summed_receives` (a REDUCE the reduction unit has summed becomes a
   receive event), then the NIC — :func:`_codesigned_edge` (the scheduler cycle model:
   its inputs, one clock edge, a send handed to an NI) or :func:`_send_when_ready` (the
   baseline NIC);
2. per NI: :func:`_packetise` (the next packet into the network's source queue; the
   message sent, ``ni_done``, once the rest of it fits the transmit queue);
3. the network: ``noc.flit.step``;
4. :func:`_ejections`: the tail of a message's last packet out of the network is its
   arrival; the reduction unit starts on a REDUCE (``nic.reduction.reduce_done``), and
   the arrival is a receive event (co-designed: :func:`_queue_receive`; after the
   summation: the unit's FIFO) or releases the transfers waiting for it
   (:func:`_release_dependants`, baseline);
5. the watchdog (``noc.flit.stuck``) and, once every transfer arrived, the end
   (:func:`_schedulers_done`).

The state is plain data: :data:`Transfers`, :data:`Nodes` and :data:`Params` are read,
:data:`Schedulers`, :data:`Nis`, :data:`Receives`, :data:`Waiting` and :data:`Times`
change. ``nic.flit_cosim.run_flit`` builds them (:func:`new_receives` and
:func:`new_waiting` are their initial values) and reads the times out.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from nic.reduction import reduce_done
from nic.scheduler import (C_ISSUED, I_NI_DONE, I_RECV_VALID, I_SEND_READY, I_START, N_IN_HEADER, O_DONE, O_ERR,
                           O_SEND_ENTRY, O_SEND_NI, O_SEND_VALID, sched_edge, sched_outputs)
from nic.flit_cosim_forward import MAX_GAP, jump, stream_window, unsent_flits
from noc.flit import enqueue_packet, pop_ejected, step, stuck

# ---- what the loop reads
# per transfer (schedule order): its sender, the NI it arrives at, its flow, op and step,
# payload; the transfers waiting for it (CSR: rdep_idx[rdep_ptr[t]:rdep_ptr[t+1]]);
# each node's transfers in schedule order (node_tx[node_ptr[v]:node_ptr[v+1]]); the
# receiver's reduction work for the whole message and for its last packet
Transfers = namedtuple("Transfers", [
    "src_node", "dst_ep", "flow", "op", "step", "payload_bytes", "rdep_ptr", "rdep_idx", "node_ptr", "node_tx",
    "reduce_work", "reduce_last"])
# per node its NIs (endpoints), per endpoint its node and its port (NI number at the node)
Nodes = namedtuple("Nodes", ["node_eps", "ep_node", "ep_port"])
# the NIC: design, flow control (bulk: one packet per transfer, else packet_bytes each), flit
# size, step priority, the baseline NIC's issue delay, transmit queue (flits), the reduction
# unit's latency and mode; the cycle limit; whether stretches that only stream are
# fast-forwarded (nic.flit_cosim_forward), and the shortest jump
Params = namedtuple("Params", [
    "codesigned", "bulk", "flit_bytes", "packet_bytes", "prio_on", "issue_delay", "tx_buffer_flits",
    "reduce_latency", "reduce_mode", "max_cycles", "fast_forward", "min_jump"])

# ---- what the loop changes
# co-designed NIC: each node's table and registers (nic.scheduler), the table row's transfer,
# the scheduler's parameter vector, input and output vectors; per node, whether its state is
# unchanged by an edge without inputs (such an edge is skipped); scratch for that check
Schedulers = namedtuple("Schedulers", ["tabs", "regs", "row_tid", "params", "inp", "out", "quiet", "regs_before"])
# per NI: the transfer it sends (-1: free) and its bytes not yet packetised (-1: all queued);
# per node, a bit per NI whose message left in the last cycle (the scheduler's ni_done)
Nis = namedtuple("Nis", ["transfer", "left_bytes", "done_next"])
# per transfer, packets still to arrive; per (node, port) a FIFO of receive events (ring of
# capacity transfers + 1); per node, the reduction unit's end of work and its FIFO of summed
# REDUCEs waiting to be receive events
Receives = namedtuple("Receives", ["packets_left", "pend", "pend_h", "pend_n", "unit_free", "rq", "rq_h", "rq_n"])
# baseline NIC: per transfer, dependencies not yet arrived, when the last of them is usable,
# the cycle it may start; per node, its first transfer not yet started and when its free NIs
# must look again
Waiting = namedtuple("Waiting", ["deps_left", "dep_ready", "ready_at", "node_first", "next_check"])
# per transfer (-1 until then): started, last flit left the NI, last packet ejected, data
# usable after the receiver's reduction; counts: arrived transfers, scheduler error cycles
Times = namedtuple("Times", ["start", "sent", "arrive", "ready", "counts"])
ARRIVED, ERRORS = 0, 1
# what cosim returns as its status besides the error count
STUCK, OUT_OF_SLOTS = -2, -3

# ``cosim`` and its stages (inlined into it) are compiled without Numba's reference counting
# (``_nrt=False``), as noc.flit's kernels are: they only index arrays their caller owns and
# never allocate, and with it every read of an array field of a state value is an atomic
# incref and decref (the loop ran 7x slower so).
_stage = njit(cache=True, inline="always", _nrt=False)


@_stage
def _push_receive(rx, v, p, t):
    """Receive event of transfer ``t`` at the back of node ``v``'s port ``p`` FIFO."""
    q_cap = rx.pend.shape[2]
    rx.pend[v, p, (rx.pend_h[v, p] + rx.pend_n[v, p]) % q_cap] = t
    rx.pend_n[v, p] += 1


@_stage
def _summed_receives(tr, nodes, rx, times, v, now):
    """A REDUCE whose summation ended before this cycle is a receive event at the port of the
    NI it arrived at; the node's unit finishes its REDUCEs in arrival order (a FIFO)."""
    while rx.rq_n[v] > 0 and times.ready[rx.rq[v, rx.rq_h[v]]] < now:
        t = rx.rq[v, rx.rq_h[v]]
        rx.rq_h[v] = (rx.rq_h[v] + 1) % rx.rq.shape[1]
        rx.rq_n[v] -= 1
        _push_receive(rx, v, nodes.ep_port[tr.dst_ep[t]], t)


@_stage
def _scheduler_inputs(tr, sch, nis, rx, v, now, n_ni):
    """The scheduler's inputs this cycle: the start pulse in cycle 0, ``ni_done`` of the NIs
    whose message left last cycle, and one receive per port (the front of its FIFO: flow,
    op and sender); the rest wait a cycle."""
    inp = sch.inp
    inp[:] = 0
    if now == 0:
        inp[I_START] = 1
    inp[I_NI_DONE] = nis.done_next[v]
    mask = 0
    q_cap = rx.pend.shape[2]
    for p in range(n_ni):
        if rx.pend_n[v, p] > 0:
            t = rx.pend[v, p, rx.pend_h[v, p]]
            rx.pend_h[v, p] = (rx.pend_h[v, p] + 1) % q_cap
            rx.pend_n[v, p] -= 1
            mask |= 1 << p
            inp[N_IN_HEADER + p] = tr.flow[t]
            inp[N_IN_HEADER + n_ni + p] = tr.op[t]
            inp[N_IN_HEADER + 2 * n_ni + p] = tr.src_node[t]
    inp[I_RECV_VALID] = mask


@_stage
def _issued(sch, v):
    """Table rows of node ``v`` issued so far (the scheduler's C_ISSUED column)."""
    n = 0
    for i in range(sch.tabs.shape[1]):
        n += sch.tabs[v, i, C_ISSUED]
    return n


@_stage
def _codesigned_edge(tr, nodes, sch, nis, rx, times, v, now):
    """Co-designed NIC (the scheduler contract, docs/nic_scheduler.md): one clock edge of node
    ``v``'s scheduler cycle model. Its send request handshakes in the cycle it is offered:
    the entry's transfer goes to the NI the scheduler chose, starting now. An edge with no
    input on a scheduler whose last such edge changed nothing is skipped (same outputs, same
    state)."""
    n_ni = nodes.node_eps.shape[1]
    has_input = now == 0 or nis.done_next[v] != 0
    if not has_input:
        for p in range(n_ni):
            if rx.pend_n[v, p] > 0:
                has_input = True
                break
    if sch.quiet[v] and not has_input:
        return
    out = sch.out
    sched_outputs(sch.tabs[v], sch.regs[v], sch.params, out)
    _scheduler_inputs(tr, sch, nis, rx, v, now, n_ni)
    launch = -1
    ni = 0
    if out[O_SEND_VALID] == 1:
        sch.inp[I_SEND_READY] = 1
        launch = sch.row_tid[v, out[O_SEND_ENTRY]]
        ni = out[O_SEND_NI]
    for i in range(sch.regs_before.shape[0]):
        sch.regs_before[i] = sch.regs[v, i]
    issued_before = _issued(sch, v)
    sched_edge(sch.tabs[v], sch.regs[v], sch.params, sch.inp, out)
    if out[O_ERR] != 0:
        times.counts[ERRORS] += 1
    same = _issued(sch, v) == issued_before
    for i in range(sch.regs_before.shape[0]):
        if sch.regs_before[i] != sch.regs[v, i]:
            same = False
            break
    sch.quiet[v] = same and not has_input and launch < 0
    if launch >= 0:
        ep = nodes.node_eps[v, ni]
        nis.transfer[ep] = launch
        nis.left_bytes[ep] = tr.payload_bytes[launch]
        times.start[launch] = now


@_stage
def _send_when_ready(tr, nodes, prm, nis, wait, times, v, now):
    """Baseline NIC: each free NI of node ``v`` starts the node's first transfer (schedule
    order) not yet started whose inputs have all arrived, ``issue_delay`` after the last of
    them was usable. A node whose NIs found nothing looks again at the earliest such cycle,
    or when an arrival or a freed NI wakes it."""
    if wait.next_check[v] > now:
        return
    earliest = prm.max_cycles
    for p in range(nodes.node_eps.shape[1]):
        ep = nodes.node_eps[v, p]
        if nis.transfer[ep] >= 0:
            continue
        for j in range(wait.node_first[v], tr.node_ptr[v + 1]):
            t = tr.node_tx[j]
            if times.start[t] >= 0:
                if j == wait.node_first[v]:
                    wait.node_first[v] += 1
                continue
            if wait.deps_left[t] == 0:
                if wait.ready_at[t] <= now:
                    times.start[t] = now
                    nis.transfer[ep] = t
                    nis.left_bytes[ep] = tr.payload_bytes[t]
                    break
                if wait.ready_at[t] < earliest:
                    earliest = wait.ready_at[t]
    wait.next_check[v] = earliest


@_stage
def _packetise(net, st, tr, nodes, prm, nis, wait, times, ep, now):
    """NI ``ep``'s packetiser: while its source queue holds at most ``tx_buffer_flits`` flits
    not yet sent (0: into an empty queue only, one packet at a time), its next packet goes in
    (bulk: a head flit and the whole payload; else a head flit and up to ``packet_bytes``),
    carrying the step as priority when step priority is on. Once all packets are queued and
    the queue is down to that, the message is sent: the NI is free and its ``ni_done`` pulses
    next cycle. False when the network has no packet slot left."""
    t = nis.transfer[ep]
    if t < 0:
        return True
    if prm.tx_buffer_flits == 0:
        if st.q_head[ep] >= 0:
            return True
    elif unsent_flits(st, ep) > prm.tx_buffer_flits:
        return True
    if nis.left_bytes[ep] < 0:
        times.sent[t] = now
        nis.transfer[ep] = -1
        nis.done_next[nodes.ep_node[ep]] |= 1 << nodes.ep_port[ep]
        wait.next_check[nodes.ep_node[ep]] = now + 1
        return True
    if prm.bulk:
        size = nis.left_bytes[ep]
    else:
        size = min(nis.left_bytes[ep], prm.packet_bytes)
    flits = 1 + (size + prm.flit_bytes - 1) // prm.flit_bytes
    prio = tr.step[t] if prm.prio_on else 0
    if not enqueue_packet(net, st, ep, tr.dst_ep[t], flits, prio, t, now):
        return False
    nis.left_bytes[ep] -= size
    if nis.left_bytes[ep] == 0:
        nis.left_bytes[ep] = -1  # all packets queued; sent when the queue drains
    return True


@_stage
def _release_dependants(tr, prm, wait, times, t):
    """Baseline NIC: transfer ``t``'s data is usable; each transfer waiting for it has one
    dependency fewer, and once it has none may start ``issue_delay`` after the last was
    usable (its node looks again by then)."""
    for k in range(tr.rdep_ptr[t], tr.rdep_ptr[t + 1]):
        w = tr.rdep_idx[k]
        wait.deps_left[w] -= 1
        if times.ready[t] > wait.dep_ready[w]:
            wait.dep_ready[w] = times.ready[t]
        if wait.deps_left[w] == 0:
            wait.ready_at[w] = wait.dep_ready[w] + prm.issue_delay
            if wait.ready_at[w] < wait.next_check[tr.src_node[w]]:
                wait.next_check[tr.src_node[w]] = wait.ready_at[w]


@_stage
def _queue_receive(tr, nodes, rx, times, t, d, cyc):
    """Co-designed NIC: the arrival of transfer ``t`` at node ``d`` is a receive event on
    the port of the NI it arrived at, or, while the reduction unit sums it, waits in the
    unit's FIFO (:func:`_summed_receives`)."""
    if times.ready[t] > cyc:
        rx.rq[d, (rx.rq_h[d] + rx.rq_n[d]) % rx.rq.shape[1]] = t
        rx.rq_n[d] += 1
    else:
        _push_receive(rx, d, nodes.ep_port[tr.dst_ep[t]], t)


@_stage
def _ejections(st, tr, nodes, prm, rx, wait, times):
    """Packets out of the network this cycle: a message has arrived with the tail of its
    last packet; its receiver's reduction unit sums a REDUCE (``nic.reduction``), and then
    the arrival counts (:func:`_queue_receive` or :func:`_release_dependants`)."""
    while True:
        t, cyc = pop_ejected(st)
        if t == -1 and cyc == -1:
            break
        rx.packets_left[t] -= 1
        if rx.packets_left[t] == 0:
            times.arrive[t] = cyc
            d = nodes.ep_node[tr.dst_ep[t]]
            times.ready[t] = reduce_done(rx.unit_free, d, cyc, tr.reduce_work[t], tr.reduce_last[t],
                                         prm.reduce_latency, prm.reduce_mode)
            times.counts[ARRIVED] += 1
            if prm.codesigned:
                _queue_receive(tr, nodes, rx, times, t, d, cyc)
            else:
                _release_dependants(tr, prm, wait, times, t)


@_stage
def _schedulers_done(sch):
    """Every node's scheduler signals done (the co-designed NIC's end of the all-reduce)."""
    for v in range(sch.tabs.shape[0]):
        sched_outputs(sch.tabs[v], sch.regs[v], sch.params, sch.out)
        if sch.out[O_DONE] != 1:
            return False
    return True


@_stage
def _fast_forward(net, st, ff, nodes, prm, sch, nis, rx, wait, times, now):
    """Cycles jumped from the start of cycle ``now`` (``nic.flit_cosim_forward``): all but
    the last of a stretch that only streams (that one is stepped), or 0. After a failed
    check the next is ``ff.gap`` cycles later, the gap doubling up to ``MAX_GAP``."""
    if now < ff.next_try[0]:
        return 0
    k = stream_window(net, st, ff, nodes, prm, sch, nis, rx, wait, times, now)
    if k - 1 >= prm.min_jump:
        jump(net, st, ff, now, k - 1)
        ff.gap[0] = 1
        return k - 1
    ff.next_try[0] = now + ff.gap[0]
    if ff.gap[0] < MAX_GAP:
        ff.gap[0] *= 2
    return 0


@njit(cache=True, _nrt=False)
def cosim(net, st, tr, nodes, prm, sch, nis, rx, wait, times, ff):
    """Run the co-simulation until every transfer arrived (and, co-designed, every scheduler
    is done), the network is stuck, or ``prm.max_cycles``. Returns the cycle it stopped at
    and a status: the scheduler error cycles counted, :data:`STUCK` or :data:`OUT_OF_SLOTS`.
    With ``prm.fast_forward``, stretches that only stream are jumped (``ff``: the scratch of
    ``nic.flit_cosim_forward``) to the state the cycles would reach."""
    n_nodes = nodes.node_eps.shape[0]
    n_t = tr.src_node.shape[0]
    now = np.int64(0)  # not the literal 0: a literal first type compiles step twice
    while now < prm.max_cycles:
        if prm.fast_forward:
            skipped = _fast_forward(net, st, ff, nodes, prm, sch, nis, rx, wait, times, now)
            if skipped > 0:
                now += skipped
                continue
        for v in range(n_nodes):
            _summed_receives(tr, nodes, rx, times, v, now)
            if prm.codesigned:
                _codesigned_edge(tr, nodes, sch, nis, rx, times, v, now)
            else:
                _send_when_ready(tr, nodes, prm, nis, wait, times, v, now)
            nis.done_next[v] = 0
        for ep in range(nodes.ep_node.shape[0]):
            if not _packetise(net, st, tr, nodes, prm, nis, wait, times, ep, now):
                return now, OUT_OF_SLOTS
        step(net, st, now)
        _ejections(st, tr, nodes, prm, rx, wait, times)
        if stuck(net, st):
            return now, STUCK
        now += 1
        if times.counts[ARRIVED] == n_t:
            if not prm.codesigned or _schedulers_done(sch) or now > prm.max_cycles:
                break
    return now, times.counts[ERRORS]


def new_receives(packets: np.ndarray, num_nodes: int, nis: int) -> "Receives":
    """The receive side before the first cycle: every packet to come, empty FIFOs."""
    n_t = packets.shape[0]
    return Receives(
        packets_left=packets.copy(), pend=np.full((num_nodes, nis, n_t + 1), -1, np.int64),
        pend_h=np.zeros((num_nodes, nis), np.int64), pend_n=np.zeros((num_nodes, nis), np.int64),
        unit_free=np.zeros(num_nodes, np.int64), rq=np.empty((num_nodes, n_t + 1), np.int64),
        rq_h=np.zeros(num_nodes, np.int64), rq_n=np.zeros(num_nodes, np.int64))


def new_waiting(dep_ptr: np.ndarray, node_ptr: np.ndarray) -> "Waiting":
    """The baseline NIC's waiting state before the first cycle: every dependency to come."""
    n_t = dep_ptr.shape[0] - 1
    return Waiting(deps_left=np.diff(dep_ptr).astype(np.int64), dep_ready=np.zeros(n_t, np.int64),
                   ready_at=np.zeros(n_t, np.int64), node_first=node_ptr[:-1].copy(),
                   next_check=np.zeros(node_ptr.shape[0] - 1, np.int64))
