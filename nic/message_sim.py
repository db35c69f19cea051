"""Message-level co-simulation: NIC start rules over the fluid network of ``noc.message``.

Each transfer starts when the NIC policy allows it, is served at the max-min fair rate
of its route (recomputed whenever the set of flows changes), frees its NI when its last
byte has left (serialisation done), and arrives ``path latency`` cycles later. A transfer
may start once every transfer it depends on has *arrived*, plus ``issue_delay_cycles``.

Policies (the two NIC designs):

* ``POLICY_BASELINE`` — sends as soon as its data is ready and an NI of the node is free,
  in schedule order; no priority in the network.
* ``POLICY_CODESIGNED`` — strict lockstep per node: the node's next step opens only when
  every transfer of its current step has started and all its NIs are idle (then after
  ``step_advance_cycles``); flows of earlier steps take priority on every link.

Times are float cycles. This is the fast model for large sizes; it is calibrated against
the flit-level co-simulation (docs/allreduce.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from noc.message import max_min_rates

POLICY_BASELINE = 0
POLICY_CODESIGNED = 1

_WAITING, _SENDING, _IN_FLIGHT, _ARRIVED = 0, 1, 2, 3


@dataclass(frozen=True)
class TransferTimes:
    """Per-transfer times in cycles (float)."""

    start_cycles: np.ndarray
    sent_cycles: np.ndarray  # serialisation finished: the NI is free again
    arrive_cycles: np.ndarray

    @property
    def total_cycles(self) -> float:
        return float(self.arrive_cycles.max()) if self.arrive_cycles.size else 0.0


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
) -> TransferTimes:
    """Run the event loop. Transfers must be listed in schedule order (by step, then table order)."""
    t = src_node.shape[0]
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
    _run(
        src_node.astype(np.int64), step.astype(np.int64), wire_bytes.astype(np.float64),
        dep_ptr.astype(np.int64), rdep_ptr, rdep_idx, path_links.astype(np.int64), path_len.astype(np.int64),
        path_latency_cycles.astype(np.float64), link_bytes_per_cycle.astype(np.float64),
        int(num_nodes), int(nis_per_node), int(policy), float(issue_delay_cycles), float(step_advance_cycles),
        start, sent, arrive,
    )
    if not np.isfinite(arrive).all():
        bad = int(np.nonzero(~np.isfinite(arrive))[0][0])
        raise RuntimeError(f"message-level simulation stalled: transfer {bad} never arrived (dependency cycle?)")
    return TransferTimes(start, sent, arrive)


@njit(cache=True)
def _run(src_node, step, wire_bytes, dep_ptr, rdep_ptr, rdep_idx, path_links, path_len, path_lat, link_cap,
         num_nodes, nis, policy, issue_delay, step_advance, start, sent, arrive):
    t_count = src_node.shape[0]
    status = np.zeros(t_count, dtype=np.int64)
    deps_left = np.empty(t_count, dtype=np.int64)
    ready_at = np.full(t_count, np.inf)
    for i in range(t_count):
        deps_left[i] = dep_ptr[i + 1] - dep_ptr[i]
        if deps_left[i] == 0:
            ready_at[i] = 0.0
    remaining = wire_bytes.copy()
    rates = np.zeros(t_count)
    priority = step.copy() if policy == POLICY_CODESIGNED else np.zeros(t_count, dtype=np.int64)
    cap_left = np.empty(link_cap.shape[0])
    users = np.empty(link_cap.shape[0], dtype=np.int64)
    ni_busy = np.zeros(num_nodes, dtype=np.int64)
    # lockstep bookkeeping (co-designed): per node, the open step and when it opened
    unstarted_in_step = np.zeros(num_nodes, dtype=np.int64)
    open_step = np.full(num_nodes, -1, dtype=np.int64)
    open_at = np.zeros(num_nodes)
    node_next = np.zeros(num_nodes, dtype=np.int64)  # cursor into the node's transfers (schedule order)
    node_ptr = np.zeros(num_nodes + 1, dtype=np.int64)
    for i in range(t_count):
        node_ptr[src_node[i] + 1] += 1
    for n in range(num_nodes):
        node_ptr[n + 1] += node_ptr[n]
    node_tx = np.empty(t_count, dtype=np.int64)
    fill = node_ptr[:-1].copy()
    for i in range(t_count):
        node_tx[fill[src_node[i]]] = i
        fill[src_node[i]] += 1
    for n in range(num_nodes):
        node_next[n] = node_ptr[n]
        if node_ptr[n] < node_ptr[n + 1]:
            s = step[node_tx[node_ptr[n]]]
            open_step[n] = s
            c = 0
            for j in range(node_ptr[n], node_ptr[n + 1]):
                if step[node_tx[j]] == s:
                    c += 1
            unstarted_in_step[n] = c

    active = np.empty(t_count, dtype=np.int64)
    n_active = 0
    arrived = 0
    now = 0.0
    rates_dirty = True
    while arrived < t_count:
        # ---- start what may start now (schedule order within each node)
        for n in range(num_nodes):
            for j in range(node_ptr[n], node_ptr[n + 1]):
                if ni_busy[n] >= nis:
                    break
                i = node_tx[j]
                if status[i] != _WAITING:
                    continue
                if policy == POLICY_CODESIGNED:
                    if step[i] != open_step[n] or open_at[n] > now:
                        break  # later steps wait for the lockstep
                if ready_at[i] <= now:
                    status[i] = _SENDING
                    start[i] = now
                    ni_busy[n] += 1
                    active[n_active] = i
                    n_active += 1
                    rates_dirty = True
                    if policy == POLICY_CODESIGNED:
                        unstarted_in_step[n] -= 1
        if rates_dirty:
            max_min_rates(active[:n_active], priority, path_links, path_len, link_cap, rates, cap_left, users)
            rates_dirty = False
        # ---- the next event
        t_next = np.inf
        for k in range(n_active):
            i = active[k]
            if rates[i] > 0.0:
                tt = now + remaining[i] / rates[i]
                if tt < t_next:
                    t_next = tt
        for i in range(t_count):
            if status[i] == _IN_FLIGHT and sent[i] + path_lat[i] < t_next:
                t_next = sent[i] + path_lat[i]
            elif status[i] == _WAITING and now < ready_at[i] < t_next:
                t_next = ready_at[i]
        if policy == POLICY_CODESIGNED:
            for n in range(num_nodes):
                if now < open_at[n] < t_next:
                    t_next = open_at[n]
        if t_next == np.inf:
            return  # stalled: the caller reports the transfer that never arrived
        dt = t_next - now
        for k in range(n_active):
            i = active[k]
            remaining[i] -= rates[i] * dt
        now = t_next
        # ---- serialisation done: free the NI
        k = 0
        while k < n_active:
            i = active[k]
            if remaining[i] <= 1e-9 * wire_bytes[i] + 1e-12:
                status[i] = _IN_FLIGHT
                sent[i] = now
                ni_busy[src_node[i]] -= 1
                active[k] = active[n_active - 1]
                n_active -= 1
                rates_dirty = True
            else:
                k += 1
        # ---- arrivals release dependents
        for i in range(t_count):
            if status[i] == _IN_FLIGHT and sent[i] + path_lat[i] <= now:
                status[i] = _ARRIVED
                arrive[i] = sent[i] + path_lat[i]
                arrived += 1
                for r in range(rdep_ptr[i], rdep_ptr[i + 1]):
                    d = rdep_idx[r]
                    deps_left[d] -= 1
                    if deps_left[d] == 0:
                        ready_at[d] = arrive[i] + issue_delay
        # ---- lockstep: open the next step where the current one is over
        if policy == POLICY_CODESIGNED:
            for n in range(num_nodes):
                if open_step[n] >= 0 and unstarted_in_step[n] == 0 and ni_busy[n] == 0 and open_at[n] <= now:
                    # find the next step with unstarted transfers
                    nxt = -1
                    for j in range(node_ptr[n], node_ptr[n + 1]):
                        i = node_tx[j]
                        if status[i] == _WAITING:
                            nxt = step[i]
                            break
                    if nxt < 0:
                        open_step[n] = -1
                    else:
                        open_step[n] = nxt
                        open_at[n] = now + step_advance
                        c = 0
                        for j in range(node_ptr[n], node_ptr[n + 1]):
                            i = node_tx[j]
                            if status[i] == _WAITING and step[i] == nxt:
                                c += 1
                        unstarted_in_step[n] = c
