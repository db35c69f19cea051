"""The message-level event loop: state values and one inlined stage per mechanism.

:func:`run` is the driver. Each event it runs the stages in this order:

1. :func:`_start_transfers` — the NIC start rules (baseline: ready and an NI free, in
   schedule order; co-designed: only the node's open step), the slot of the transfer's
   state, and the one-queue-per-NI rule (a transfer behind its NI's draining predecessor).
2. :func:`_acquire_vcs` — VC holding: heads take a VC per hop in real time; the VC
   allocator's priority and round-robin order.
3. :func:`_rate_pass` — max-min fair rates over the flows sharing a resource with a flow
   that came or went, :func:`_head_of_line_caps` for per-packet flows, and each flow's
   buffers before its bottleneck (:func:`_buffer_slack`).
4. :func:`_next_event` — the earliest time anything changes.
5. :func:`_advance_flows` — bytes move on; the NI frees once the rest fits in the buffers
   (or the transmit queue); the last byte past the bottleneck: in flight.
6. :func:`_due_wakeups` — inputs that are ready and steps that open now mark their nodes.
7. :func:`_release_queued` — transfers queued behind their NI's predecessor go.
8. :func:`_release_nis` — NIs released ``ni_free_delay_cycles`` after their last byte left.
9. :func:`_arrivals` — arrivals (the tail's latency after the bottleneck) release the
   transfers that wait for them, through the receivers' reduction unit
   (:func:`_reduction_ready`).
10. :func:`_lockstep` — the co-designed NIC opens a node's next step when its current one is over.

Inputs are plain values: :data:`TransferArrays` (the schedule), :data:`RouteArrays` (the
network the transfers cross), :data:`WormholeParams`, :data:`NicTiming`,
:data:`ReductionUnit`, :data:`Output` (times, written). The loop's own state:
:data:`Progress` (per transfer), :data:`Slots` (per transfer under way, a pool),
:data:`Resources` (per link and rate resource), :data:`Nodes` (per node and NI),
:data:`Lists` (the slots in each state) and a counter array (``C_*``).
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from nic.reduction import reduce_done
from noc.flit_pipeline import FlitCompiler
from noc.message import max_min_rates_in

POLICY_BASELINE = 0
POLICY_CODESIGNED = 1

# transfer states (of a slot)
WAITING, QUEUED, HEAD, SENDING, DRAINING, IN_FLIGHT, ARRIVED = 0, 1, 2, 3, 4, 5, 6
STARTED = 1  # per transfer: no longer waiting (its slot holds the state above)

# The event loop (:func:`_event_loop`) and its stages, inlined into it, are compiled without
# Numba's reference counting (``_nrt=False``), as ``noc.flit``'s kernels are: they only index
# arrays their caller owns and never allocate (the heaps have fixed capacities, the sorts are
# in place); with it, every read of an array field of a state value was an atomic incref and
# decref. ``error_model="numpy"``: no ZeroDivisionError branch after a division.
_kernel = njit(cache=True, error_model="numpy", _nrt=False)
# the loop itself also with noc.flit's two promises to the compiler (noc.flit_pipeline): no
# negative indices (-1 marks "none" and is tested before use) and no aliased arrays
_loop_kernel = njit(cache=True, error_model="numpy", _nrt=False, pipeline_class=FlitCompiler)
_stage = njit(cache=True, error_model="numpy", _nrt=False, inline="always")

TransferArrays = namedtuple("TransferArrays", [
    "src_node", "step", "wire_bytes", "dep_ptr", "rdep_ptr", "rdep_idx",
    "links", "path_len", "vc_class",  # int[R, H] routes (links or, for transfer arrays, path links) and classes
    "route", "has_route",  # int32[T]: transfer i's row of the routes (empty without: row i)
    "not_before", "has_not_before",  # float[T] (empty without)
])

RouteArrays = namedtuple("RouteArrays", [
    # derived: routes over links (their latencies, the NIs' rates, tail slots per link);
    # otherwise every transfer's own arrays (path_lat, head_lat, in_port, tail_slot; empty for routes)
    "derived", "heads_from_links", "link_cap", "link_lat", "router_delay", "ni_cap", "tail_link",
    "path_lat", "head_lat", "in_port", "tail_slot",
    # further rate resources: 0 none, 1 one per (link, VC class) after the injection hop,
    # 2 listed per transfer in ``extra`` (int[T, K], -1 padded; empty otherwise) at ``extra_cap``
    "extra_mode", "extra", "extra_cap",
    "mod_links",  # the round-robin pointers' modulus (input ports)
])

WormholeParams = namedtuple("WormholeParams", [
    "n_cls", "vcs_per_class", "hold", "hop_buf", "hol", "saturated", "step_prio", "share_bufs",
])

NicTiming = namedtuple("NicTiming", [
    "num_nodes", "nis", "policy", "issue_delay", "step_advance", "ni_free_delay", "first_start", "txb",
])

ReductionUnit = namedtuple("ReductionUnit", [
    "has_red", "dst_node", "work", "last", "latency", "mode", "keep_ready",
])

Output = namedtuple("Output", ["start", "sent", "arrive", "ready", "stats", "max_events"])

Progress = namedtuple("Progress", ["status", "deps_left", "rdy"])

Slots = namedtuple("Slots", [
    "mask", "hr", "tid", "sst", "plink", "pcls", "plen", "head_lat", "in_port", "hshare", "in_res", "rate_links",
    "rate_len", "path_lat", "tail_slot", "wire", "rem", "inj", "tol", "cap_ni", "rates", "slack", "pipe", "bneck",
    "tail_lat", "done_at", "priority", "head_hop", "head_key", "waits_on", "common", "catch_hops", "inherit",
    "buffered_at_sent", "tx_only", "free_at", "b_next", "b_res", "nd_next", "nd_prev", "listed", "comp_mark",
])

Resources = namedtuple("Resources", [
    "nl", "ext_base", "in_base", "lcap", "rate_cap", "cap_left", "users", "load", "max_rate", "injected",
    "in_load", "blocked", "keep", "cap_eff", "n_backed", "res_first", "res_mark", "vc_free", "va_ptr", "b_first",
])

Nodes = namedtuple("Nodes", [
    "unit_free", "ni_busy", "slot_tx", "unstarted_in_step", "open_step", "open_at", "node_ptr", "node_tx", "cur",
    "wake_flag", "wake_list", "lock_flag", "lock_list",
])

# (and the rate pass's scratch: the flows by priority, which are frozen)
Lists = namedtuple("Lists", ["active", "heads", "fly", "rel", "queued", "due", "comp", "gone", "pend", "by_prio",
                             "frozen", "prio_count"])

# binary min-heaps of (key, id) of fixed capacity (:func:`heap_capacities`): waiting
# transfers by when they may start, steps opening later (co-designed) by (open_at, node),
# heads offered a VC in one instant by (head_key, transfer)
Heaps = namedtuple("Heaps", ["wake_key", "wake_id", "open_key", "open_id", "hp_key", "hp_id"])

# counters (an int64 array): list lengths, slots in use, the component stamp, marked nodes,
# heap sizes, arrivals, whether the rates must be recomputed, whether a heap overflowed
(C_ACTIVE, C_HEADS, C_FLY, C_REL, C_QUEUED, C_PEND, C_GONE, C_LIVE, C_STAMP, C_WK, C_LK, C_WAKE, C_OPEN,
 C_ARRIVED, C_DIRTY, C_FULL, N_COUNTERS) = range(17)


# ---- small helpers ----------------------------------------------------------------------

@_stage
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


@_stage
def _heap_push_capped(keys, ids, size, key, ident, c):
    """:func:`_heap_push` onto a heap of fixed capacity; when it is full, the entry is
    dropped and ``c[C_FULL]`` set (the run is void: the caller runs it again with a larger
    pool, and so larger heaps). Returns the new size."""
    if size == keys.shape[0]:
        c[C_FULL] = 1
        return size
    return _heap_push(keys, ids, size, key, ident)


@_stage
def _sift_down(a, k, n):
    """Heap order (largest first) for ``a[k]`` within ``a[:n]``."""
    while True:
        j = 2 * k + 1
        if j >= n:
            return
        if j + 1 < n and a[j + 1] > a[j]:
            j += 1
        if a[k] >= a[j]:
            return
        a[k], a[j] = a[j], a[k]
        k = j


@_stage
def _sort_in_place(a, n):
    """Sort ``a[:n]`` ascending where it is, allocating nothing (the loop runs without
    reference counting): insertion sort for a few entries, heapsort for more."""
    if n <= 16:
        for k in range(1, n):
            v = a[k]
            j = k - 1
            while j >= 0 and a[j] > v:
                a[j + 1] = a[j]
                j -= 1
            a[j + 1] = v
        return
    for k in range(n // 2 - 1, -1, -1):
        _sift_down(a, k, n)
    for end in range(n - 1, 0, -1):
        a[0], a[end] = a[end], a[0]
        _sift_down(a, 0, end)


@_stage
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


@_stage
def _mark(flag, lst, n, v):
    """Add ``v`` to the set kept as ``flag`` and ``lst[:n]``; returns the new count."""
    if not flag[v]:
        flag[v] = True
        lst[n] = v
        n += 1
    return n


@_stage
def _mark_woken(ident, src_node, num_nodes, flag, lst, n):
    """A wake-up for transfer ``ident`` (-1: every transfer without dependencies) marks its node(s)."""
    if ident < 0:
        for v in range(num_nodes):
            n = _mark(flag, lst, n, v)
        return n
    return _mark(flag, lst, n, src_node[ident])


@_stage
def _gap_limit(t_next, now):
    """A bound above ``t_next - now`` by far more than the rounding of ``now + x / y`` (and of
    the test ``x >= bound * y``): a quotient x / y at or above it cannot give a time before
    ``t_next``."""
    return (t_next - now) + (abs(t_next - now) + abs(now) + 1.0) * 1e-9


@_stage
def _state(p, status, tid, mask, sst):
    """Transfer p's state: waiting, the state of its slot, or arrived once its slot is free again."""
    if status[p] == WAITING:
        return WAITING
    s = p & mask
    return sst[s] if tid[s] == p else ARRIVED


@_stage
def _buffered_beyond(hshare, p, c, bn):
    """Buffer bytes flow p may hold at the ends of hops c .. bn - 1."""
    s = 0.0
    for h in range(c, bn):
        s += hshare[p, h]
    return s


@_stage
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


@_stage
def _offer_head(s, ident, res, key, b_first, b_next, b_res, hp, n_hp, c):
    """Head in slot ``s`` (transfer ``ident``) may take a VC of resource ``res`` in this
    instant: into that resource's bucket and onto the heap by ``(key, ident)``. Returns
    the heap's size."""
    b_next[s] = b_first[res]
    b_first[res] = s
    b_res[s] = res
    return _heap_push_capped(hp.hp_key, hp.hp_id, n_hp, key, ident, c)


# ---- the loop's state ---------------------------------------------------------------------

@njit(cache=True)
def _new_state(tr, rt, wh, nt, pool, hr, work_i8, work_i32, work_f64):
    """The loop's state for a pool of ``pool`` slots of ``hr`` rate resources each, in the
    caller's per-transfer work arrays; the counters."""
    t_count = tr.src_node.shape[0]
    hw = tr.links.shape[1]
    nl = rt.link_cap.shape[0]  # links (with ``derived``, the NIs' own resources follow them, one per slot)
    nlr = nl + pool if rt.derived else nl
    n_ext = rt.extra_cap.shape[0] if rt.extra_mode != 0 else 0
    in_base = nlr + n_ext
    n_res = in_base + (nl if wh.hol > 0.0 else 0)
    status = work_i8  # WAITING or STARTED
    status[:] = WAITING
    deps_left = work_i32[0]
    rdy = work_f64  # latest time a dependency's data became usable; once none is left, when it may start
    rdy[:] = 0.0
    for i in range(t_count):
        deps_left[i] = tr.dep_ptr[i + 1] - tr.dep_ptr[i]
        if deps_left[i] == 0:
            rdy[i] = nt.first_start
    lcap = np.empty(nlr)
    lcap[:nl] = rt.link_cap
    rate_cap = np.empty(n_res)
    rate_cap[:nl] = rt.link_cap
    if rt.derived:
        lcap[nl:] = 0.0
        rate_cap[nl:nlr] = 0.0
    rate_cap[nlr:nlr + n_ext] = rt.extra_cap[:n_ext]
    if wh.hol > 0.0:
        rate_cap[in_base:] = rt.link_cap
    nc = nl * wh.n_cls
    rs = Resources(nl, nlr, in_base, lcap, rate_cap, np.empty(n_res), np.empty(n_res, dtype=np.int64), np.zeros(nlr),
                   np.zeros(nlr), np.zeros(nlr, dtype=np.bool_), np.zeros(n_res), np.zeros(n_res, dtype=np.bool_),
                   np.zeros(n_res, dtype=np.bool_), rate_cap.copy(), np.zeros(nlr, dtype=np.int64),
                   np.full(n_res, -1, dtype=np.int32), np.zeros(n_res, dtype=np.int64),
                   np.full(nc, wh.vcs_per_class, dtype=np.int32), np.full(nc, -1, dtype=np.int32),
                   np.full(nc, -1, dtype=np.int32))
    in_res = np.full((pool, hw) if wh.hol > 0.0 else (1, 1), -1, dtype=np.int32)  # (no branch inside a long call)
    sl = Slots(
        pool - 1, hr, np.full(pool, -1, dtype=np.int32), np.zeros(pool, dtype=np.int8),
        np.full((pool, hw), -1, dtype=np.int32), np.zeros((pool, hw), dtype=np.int8), np.zeros(pool, dtype=np.int32),
        np.zeros((pool, hw)), np.full((pool, hw), -1, dtype=np.int32), np.zeros((pool, hw)),
        in_res, np.full((pool, hr), -1, dtype=np.int32),
        np.zeros(pool, dtype=np.int32), np.zeros(pool), np.zeros(pool), np.zeros(pool), np.zeros(pool),
        np.zeros(pool), np.zeros(pool), np.zeros(pool), np.zeros(pool), np.zeros(pool), np.zeros(pool),
        np.zeros(pool, dtype=np.int32), np.zeros(pool), np.full(pool, np.inf), np.zeros(pool, dtype=np.int32),
        np.zeros(pool, dtype=np.int32), np.zeros(pool), np.full(pool, -1, dtype=np.int32),
        np.zeros(pool, dtype=np.int32), np.zeros(pool, dtype=np.int32), np.zeros(pool), np.zeros(pool),
        np.zeros(pool, dtype=np.bool_), np.full(pool, np.inf), np.full(pool, -1, dtype=np.int32),
        np.full(pool, -1, dtype=np.int32), np.empty(pool * hr, dtype=np.int32), np.empty(pool * hr, dtype=np.int32),
        np.zeros(pool, dtype=np.bool_), np.zeros(pool, dtype=np.int32))
    ls = Lists(np.empty(pool, dtype=np.int32), np.empty(pool, dtype=np.int32), np.empty(pool, dtype=np.int32),
               np.empty(pool, dtype=np.int32), np.empty(pool, dtype=np.int32), np.empty(pool, dtype=np.int32),
               np.empty(pool, dtype=np.int32), np.empty(pool, dtype=np.int32), np.empty(pool, dtype=np.int32),
               np.empty(pool, dtype=np.int32), np.empty(pool, dtype=np.bool_), np.empty(pool + 1, dtype=np.int64))
    nd = _new_nodes(tr, nt, work_i32[1])
    return Progress(status, deps_left, rdy), sl, rs, nd, ls, np.zeros(N_COUNTERS, dtype=np.int64)


@njit(cache=True)
def _new_nodes(tr, nt, node_tx):
    """Per node: its transfers in schedule order (``node_tx[node_ptr[n]:node_ptr[n + 1]]``),
    its first step open with its transfer count, every node marked to look for starts."""
    num_nodes = nt.num_nodes
    src_node, step = tr.src_node, tr.step
    node_ptr = np.zeros(num_nodes + 1, dtype=np.int64)
    for i in range(src_node.shape[0]):
        node_ptr[src_node[i] + 1] += 1
    for n in range(num_nodes):
        node_ptr[n + 1] += node_ptr[n]
    fill = node_ptr[:-1].copy()
    for i in range(src_node.shape[0]):
        node_tx[fill[src_node[i]]] = i
        fill[src_node[i]] += 1
    unstarted_in_step = np.zeros(num_nodes, dtype=np.int64)
    open_step = np.full(num_nodes, -1, dtype=np.int64)
    for n in range(num_nodes):
        if node_ptr[n] < node_ptr[n + 1]:
            s0 = step[node_tx[node_ptr[n]]]
            open_step[n] = s0
            c = 0
            for j in range(node_ptr[n], node_ptr[n + 1]):
                if step[node_tx[j]] == s0:
                    c += 1
            unstarted_in_step[n] = c
    wake_flag = np.zeros(num_nodes, dtype=np.bool_)
    wake_list = np.empty(num_nodes, dtype=np.int64)
    return Nodes(np.zeros(num_nodes), np.zeros(num_nodes, dtype=np.int64),
                 np.full(num_nodes * nt.nis, -1, dtype=np.int64), unstarted_in_step, open_step, np.zeros(num_nodes),
                 node_ptr, node_tx, node_ptr[:-1].copy(), wake_flag, wake_list, np.zeros(num_nodes, dtype=np.bool_),
                 np.empty(num_nodes, dtype=np.int64))


# ---- 1. start transfers -------------------------------------------------------------------

@_stage
def _fill_route(tr, rt, wh, sl, rs, i, s):
    """Slot ``s`` takes transfer ``i``'s route: its links (with ``derived``, hop 0 is the
    NI's own resource at the NI's rate), VC classes, path latency (the links' latencies
    plus ``router_delay`` per router crossed), when its head reaches each hop's router and
    by which input port, its tail slot, and its rate resources: the links, the shared
    resources and, with the head-of-line rule, the router inputs it passes through."""
    hw = tr.links.shape[1]
    nl = rs.nl
    r = tr.route[i] if tr.has_route else i  # the transfer's row of the routes
    ln = tr.path_len[r]
    sl.plen[s] = ln
    own_cls = rt.heads_from_links or not rt.derived
    plink, pcls, hshare, links, vc_class = sl.plink, sl.pcls, sl.hshare, tr.links, tr.vc_class
    head_lat, in_port, rate_links, link_lat = sl.head_lat, sl.in_port, sl.rate_links, rt.link_lat
    for h in range(hw):
        plink[s, h] = links[r, h]
        pcls[s, h] = vc_class[r, h] if own_cls else 0
        hshare[s, h] = 0.0
    if rt.derived:
        l0 = tr.links[r, 0]
        sl.plink[s, 0] = nl + s
        rs.lcap[nl + s] = rt.ni_cap[l0]
        rs.rate_cap[nl + s] = rt.ni_cap[l0]
        sl.cap_ni[s] = rt.ni_cap[l0]
        sl.tail_slot[s] = rt.tail_link[l0]
        pl = 0.0
        for h in range(ln):
            pl += link_lat[links[r, h]]
        rd = rt.router_delay
        sl.path_lat[s] = pl + rd * max(ln - 1, 0)
        head_lat[s, 0] = 0.0
        in_port[s, 0] = -1
        from_links = rt.heads_from_links
        for h in range(1, hw):
            if from_links:
                pv = links[r, h - 1]
                head_lat[s, h] = head_lat[s, h - 1] + (link_lat[pv] if pv >= 0 else 0.0) + rd
                in_port[s, h] = pv
            else:
                head_lat[s, h] = 0.0
                in_port[s, h] = -1
    else:
        sl.cap_ni[s] = rt.link_cap[tr.links[r, 0]]
        sl.tail_slot[s] = rt.tail_slot[i]
        sl.path_lat[s] = rt.path_lat[i]
        for h in range(hw):
            sl.head_lat[s, h] = rt.head_lat[i, h]
            sl.in_port[s, h] = rt.in_port[i, h]
    rl = 0
    for h in range(ln):
        rate_links[s, rl] = plink[s, h]
        rl += 1
    if rt.extra_mode == 1:
        for h in range(1, ln):
            sl.rate_links[s, rl] = rs.ext_base + tr.links[r, h] * wh.n_cls + tr.vc_class[r, h]
            rl += 1
    elif rt.extra_mode == 2:
        for e in range(rt.extra.shape[1]):
            if rt.extra[i, e] >= 0:
                sl.rate_links[s, rl] = rs.ext_base + rt.extra[i, e]
                rl += 1
    if wh.hol > 0.0:
        for h in range(hw):
            sl.in_res[s, h] = -1
        for h in range(1, ln - 1):
            sl.in_res[s, h] = rs.in_base + tr.links[r, h]
            sl.rate_links[s, rl] = rs.in_base + tr.links[r, h]
            rl += 1
    sl.rate_len[s] = rl


@_stage
def _reset_slot(tr, wh, sl, i, s):
    """Slot ``s``'s flow state for transfer ``i`` as it starts: all its bytes before the NI,
    no rate, no buffers, its step as its priority (``step_prio``)."""
    w = tr.wire_bytes[i]
    sl.wire[s] = w
    sl.rem[s] = w
    sl.inj[s] = w
    sl.tol[s] = 1e-9 * w + 1e-12
    sl.rates[s] = 0.0
    sl.slack[s] = 0.0
    sl.pipe[s] = 0.0
    sl.bneck[s] = 0
    sl.tail_lat[s] = sl.path_lat[s] - sl.tail_slot[s]
    sl.done_at[s] = np.inf
    sl.priority[s] = tr.step[i] if wh.step_prio else 0
    sl.head_hop[s] = 0
    sl.head_key[s] = 0.0
    sl.waits_on[s] = -1
    sl.common[s] = 0
    sl.catch_hops[s] = 0
    sl.inherit[s] = 0.0
    sl.buffered_at_sent[s] = 0.0
    sl.tx_only[s] = False
    sl.free_at[s] = np.inf
    sl.b_next[s] = -1
    sl.b_res[s] = -1
    sl.listed[s] = False
    sl.comp_mark[s] = 0


@_stage
def _activate(sl, pg, ls, c, s, i, now, hold):
    """Transfer i (in slot s) goes on the network: its head starts acquiring VCs
    (``hold``), or it starts flowing at once. Returns True when the set of flowing
    transfers changed."""
    pg.status[i] = STARTED
    if hold and sl.plen[s] > 1:
        sl.sst[s] = HEAD
        sl.head_hop[s] = 1
        # a transfer queued behind its NI's previous one has its head right behind that
        # one's tail: it is at the first router already, and does not travel the hops
        # the two routes share again
        sl.head_key[s] = now if sl.catch_hops[s] > 0 else now + sl.head_lat[s, 1]
        ls.heads[c[C_HEADS]] = s
        c[C_HEADS] += 1
        return False
    sl.sst[s] = SENDING
    ls.active[c[C_ACTIVE]] = s
    c[C_ACTIVE] += 1
    return True


@_stage
def _queue_or_go(wh, nt, pg, sl, nd, ls, c, n, i, s, now):
    """**One NI, one queue.** Transfer ``i`` (slot ``s``) takes node ``n``'s lowest NI
    whose last transfer is no longer sending and released. If that transfer is still
    draining, the new one queues behind it (it leaves once the predecessor's tail has left
    the buffers their routes share, :func:`_release_queued`): per-packet flows fill every
    VC of their class, and so do bulk transfers with one VC per class; with more, a bulk
    transfer takes a VC its predecessor does not hold and queues only behind the rest of
    its NI's transmit queue (``txb``). Otherwise it goes on the network at once."""
    hold = wh.hold
    mask = sl.mask
    slot = n * nt.nis  # the lowest free NI
    while nd.slot_tx[slot] >= 0:
        p = nd.slot_tx[slot]
        if _state(p, pg.status, sl.tid, mask, sl.sst) > SENDING and (
                sl.tid[p & mask] != p or sl.free_at[p & mask] == np.inf):
            break
        slot += 1
    prev = nd.slot_tx[slot]
    nd.slot_tx[slot] = i
    pst = _state(prev, pg.status, sl.tid, mask, sl.sst) if prev >= 0 else WAITING
    ps = prev & mask
    in_tx = nt.txb > 0.0 and prev >= 0 and pst == DRAINING and sl.inj[ps] > sl.tol[ps]
    if prev >= 0 and pst == DRAINING and (in_tx or not (hold and wh.vcs_per_class > 1)):
        sl.tx_only[s] = hold and wh.vcs_per_class > 1
        pg.status[i] = STARTED
        sl.sst[s] = QUEUED
        ls.queued[c[C_QUEUED]] = i
        c[C_QUEUED] += 1
        sl.waits_on[s] = prev
        k = 1
        while k < sl.plen[s] and k < sl.plen[ps] and sl.plink[s, k] == sl.plink[ps, k]:
            k += 1
        sl.common[s] = k
    elif _activate(sl, pg, ls, c, s, i, now, hold):
        c[C_DIRTY] = 1


@_stage
def _start_transfers(tr, rt, wh, nt, pg, sl, rs, nd, ls, c, out, now):
    """**Start rules**, at the nodes where something changed (an NI released, an input
    ready, a step opened), in schedule order within each node. A transfer may start once
    every transfer it depends on has arrived (its data usable, after the reduction unit),
    plus ``issue_delay``, not before ``first_start`` (nor ``not_before``), when an NI of its
    node is free. Baseline NIC: as soon as that holds. Co-designed NIC: only transfers of
    the node's open step, once it has opened (:func:`_lockstep`). A started transfer takes
    slot ``i & mask`` of the pool; returns False when that slot is still taken (the caller
    runs again with a pool twice as large)."""
    n_wk = c[C_WK]
    if n_wk == 0:
        return True
    num_nodes = nt.num_nodes
    codesigned = nt.policy == POLICY_CODESIGNED
    whole = n_wk * 8 > num_nodes
    if not whole and n_wk > 1:
        _sort_in_place(nd.wake_list, n_wk)
    n_scan = num_nodes if whole else n_wk
    wake_list, wake_flag, ni_busy, cur, node_ptr, node_tx = nd.wake_list, nd.wake_flag, nd.ni_busy, nd.cur, nd.node_ptr, nd.node_tx
    status, deps_left, rdy, step, open_step, open_at = pg.status, pg.deps_left, pg.rdy, tr.step, nd.open_step, nd.open_at
    has_nb, not_before, nis = tr.has_not_before, tr.not_before, nt.nis
    for q in range(n_scan):
        n = q if whole else wake_list[q]
        if not wake_flag[n]:
            continue
        wake_flag[n] = False
        if ni_busy[n] >= nis:
            continue
        while cur[n] < node_ptr[n + 1] and status[node_tx[cur[n]]] != WAITING:
            cur[n] += 1
        for j in range(cur[n], node_ptr[n + 1]):
            if ni_busy[n] >= nis:
                break
            i = node_tx[j]
            if status[i] != WAITING:
                continue
            if codesigned and (step[i] != open_step[n] or open_at[n] > now):
                break  # later steps wait for the lockstep
            if deps_left[i] != 0 or rdy[i] > now or (has_nb and not_before[i] > now):
                continue
            out.start[i] = now
            s = i & sl.mask
            if sl.tid[s] >= 0:  # taken by a transfer still under way
                out.stats[0] = 1
                return False
            c[C_LIVE] += 1
            if c[C_LIVE] > out.stats[1]:
                out.stats[1] = c[C_LIVE]
            sl.tid[s] = i
            _fill_route(tr, rt, wh, sl, rs, i, s)
            _reset_slot(tr, wh, sl, i, s)
            nd.ni_busy[n] += 1
            if codesigned:
                nd.unstarted_in_step[n] -= 1
                c[C_LK] = _mark(nd.lock_flag, nd.lock_list, c[C_LK], n)
            _queue_or_go(wh, nt, pg, sl, nd, ls, c, n, i, s, now)
    c[C_WK] = 0
    return True


# ---- 2. VC holding ------------------------------------------------------------------------

@_stage
def _acquire_vcs(rt, wh, sl, rs, ls, c, hp, now):
    """**VC holding** (``hold``: one packet per transfer, the co-designed NIC's bulk flow
    control). The head acquires a VC of its route's class on every hop in turn, in real
    time (it reaches hop ``h``'s router ``head_lat[:, h]`` after it left or after it was
    last unblocked); it keeps every VC it holds while it waits for the next one, and data
    flows only once the head has reached the destination. A freed VC goes to the most
    urgent waiting head, then round-robin over the router's input ports from the one
    served last, one pointer per (link, class) (the flit router's VC allocator), then the
    earliest, then the one earlier in the schedule; resources are served in the order of
    their earliest eligible head. ``vcs_per_class`` VCs per (link, class) therefore bound
    how many transfers can cross a link at once, and blocked heads block the transfers
    behind them."""
    if c[C_HEADS] == 0:
        return
    hp_key, hp_id = hp.hp_key, hp.hp_id
    n_cls = wh.n_cls
    mask = sl.mask
    heads, head_hop, head_key, catch_hops, plink, pcls = ls.heads, sl.head_hop, sl.head_key, sl.catch_hops, sl.plink, sl.pcls
    vc_free, b_first, b_next, b_res, va_ptr = rs.vc_free, rs.b_first, sl.b_next, sl.b_res, rs.va_ptr
    tid, in_port, plen, head_lat, sst = sl.tid, sl.in_port, sl.plen, sl.head_lat, sl.sst
    n_hp = 0
    # (a resource without a free VC now has none in this instant either: its heads are not offered)
    for k in range(c[C_HEADS]):
        s = heads[k]
        h = head_hop[s]
        if head_key[s] <= now or h < catch_hops[s]:
            r = plink[s, h] * n_cls + pcls[s, h]
            if vc_free[r] > 0:
                n_hp = _offer_head(s, tid[s], r, head_key[s], b_first, b_next, b_res, hp, n_hp, c)
    while n_hp > 0:
        cs = hp_id[0] & mask
        ck = hp_key[0]
        n_hp = _heap_pop(hp_key, hp_id, n_hp)
        r = b_res[cs] if ck == head_key[cs] else -1  # an entry from before the head moved on: stale
        while r >= 0 and vc_free[r] > 0 and b_res[cs] == r:
            s, best_prev = _pick_head(rt, sl, rs, r)
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
                    n_hp = _offer_head(s, tid[s], rn, head_key[s], b_first, b_next, b_res, hp, n_hp, c)
            else:
                _head_arrived(sl, ls, c, s, h)
    # empty the buckets; keep the heads still acquiring, in their order
    kept = 0
    for k in range(c[C_HEADS]):
        s = heads[k]
        if b_res[s] >= 0:
            b_first[b_res[s]] = -1
            b_res[s] = -1
        if sst[s] == HEAD:
            heads[kept] = s
            kept += 1
    c[C_HEADS] = kept


@_stage
def _pick_head(rt, sl, rs, r):
    """The head in resource ``r``'s bucket its VC allocator serves first (most urgent, then
    round-robin from the port served last, then the earliest, then schedule order), and
    the bucket entry before it (-1: first)."""
    best = -1
    best_prev = -1
    best_d = 0
    prev = -1
    s = rs.b_first[r]
    priority, head_key, tid, in_port, head_hop, b_next = sl.priority, sl.head_key, sl.tid, sl.in_port, sl.head_hop, sl.b_next
    ptr = rs.va_ptr[r]
    mod_links = rt.mod_links
    while s >= 0:
        d = (in_port[s, head_hop[s]] - ptr - 1) % mod_links
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
    return best, best_prev


@_stage
def _head_arrived(sl, ls, c, s, h):
    """The head (at hop ``h``, the last) is at the destination: the data follows at the
    flow's rate; the NI kept injecting behind the head, so those bytes are in the network."""
    sl.sst[s] = SENDING
    ls.active[c[C_ACTIVE]] = s
    c[C_ACTIVE] += 1
    c[C_DIRTY] = 1
    pre = max(sl.head_lat[s, h] * sl.cap_ni[s], sl.inherit[s])
    if pre > sl.wire[s]:
        pre = sl.wire[s]
    sl.inj[s] = sl.wire[s] - pre
    sl.pipe[s] = pre
    sl.tail_lat[s] = sl.path_lat[s] - sl.head_lat[s, h] - sl.tail_slot[s]


# ---- 3. rates -----------------------------------------------------------------------------

@_stage
def _components(sl, rs, ls, c):
    """The flows to rate again: those that share a rate resource, transitively, with a flow
    that came or went (max-min fairness splits into these components). Newly flowing flows
    go onto their resources' lists. Returns their count (in ``ls.comp``)."""
    hr = sl.hr
    rate_links, rate_len, listed, comp_mark, comp = sl.rate_links, sl.rate_len, sl.listed, sl.comp_mark, ls.comp
    nd_next, nd_prev, res_first, res_mark = sl.nd_next, sl.nd_prev, rs.res_first, rs.res_mark
    c[C_STAMP] += 1
    stamp = c[C_STAMP]
    nc = 0
    for k in range(c[C_ACTIVE]):
        s = ls.active[k]
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
    for g in range(c[C_GONE]):
        s = ls.gone[g]
        for h in range(rate_len[s]):
            nc = _join_users(rate_links[s, h], res_first, nd_next, hr, comp_mark, stamp, comp, nc)
    c[C_GONE] = 0
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
    return nc


@_stage
def _rate_pass(wh, sl, rs, ls, c):
    """**Rates**: max-min fair over the links of the routes and the further resources a
    transfer shares with others (``extra_mode``: one per (link, VC class) when per-packet
    flows have one VC per class, whose re-allocation after every packet costs the class a
    cycle per packet on every link; or as listed), earlier steps first with ``step_prio``.
    Only the component of flows touched by a change is rated again, except with the
    head-of-line rule, which looks at every input port. Then each rated flow's buffers
    before its bottleneck (:func:`_buffer_slack`)."""
    if c[C_DIRTY] == 0:
        return
    na = c[C_ACTIVE]
    if wh.hol > 0.0:  # the head-of-line rule looks at every input port: all flows at once
        nc = na
        for k in range(na):
            ls.comp[k] = ls.active[k]
    else:
        nc = _components(sl, rs, ls, c)
    max_min_rates_in(ls.comp[:nc], sl.priority, sl.rate_links, sl.rate_len, rs.rate_cap, sl.rates, rs.cap_left, rs.users,
                     ls.by_prio, ls.frozen, ls.prio_count)
    if wh.hol > 0.0 and _head_of_line_caps(ls.active, na, sl, rs, wh.saturated, wh.hol):
        max_min_rates_in(ls.active[:na], sl.priority, sl.rate_links, sl.rate_len, rs.cap_eff, sl.rates, rs.cap_left,
                         rs.users, ls.by_prio, ls.frozen, ls.prio_count)
    c[C_DIRTY] = 0
    _buffer_slack(wh, sl, rs, ls.comp, nc)


@_stage
def _buffer_slack(wh, sl, rs, comp, nc):
    """**Buffering between the NI and the bottleneck.** A flow held back by a link further
    on fills the buffers in front of that link (``hop_buf`` per hop: the VCs the flow can
    use times their depth) while its NI keeps injecting at full speed; the NI is free once
    what is left fits in those buffers (its ``slack``, with the bytes it had in the network
    when it started flowing), and the rest drains afterwards. **Shared buffers**
    (``share_bufs``, per-packet flows): the packets of every flow crossing a link share the
    VCs at its far end, so each of the flows held back beyond a hop gets an equal part of
    its buffer; the NI's own injection hop is the flow's alone."""
    if wh.hop_buf > 0.0:
        _bottlenecks(comp, nc, sl.rates, sl.plink, sl.plen, rs.lcap, rs.load, rs.max_rate, sl.bneck)
        if wh.share_bufs:
            _count_backed(comp, nc, sl.plink, sl.bneck, rs.n_backed)
        for k in range(nc):
            s = comp[k]
            total = 0.0
            for h in range(sl.bneck[s]):
                sl.hshare[s, h] = wh.hop_buf / rs.n_backed[sl.plink[s, h]] if wh.share_bufs else wh.hop_buf
                total += sl.hshare[s, h]
            sl.slack[s] = total + sl.pipe[s]
    else:
        for k in range(nc):
            sl.slack[comp[k]] = sl.pipe[comp[k]]


@_kernel
def _head_of_line_caps(active, na, sl, rs, saturated, limit):
    """**Head-of-line blocking** (per-packet flows). A router input port sends one flit per
    cycle, whichever VC it comes from. A port whose packets go two ways, some ejecting at
    this router and some continuing into an output that is saturated (loaded to
    ``saturated`` of its link: 1, or with one VC per class the rate its re-allocation
    leaves) and also carries a flow from this router's own NI (a competitor that is never
    idle), is served like an input of a 2x2 switch with FIFO inputs under saturation: a
    packet waiting for the busy output blocks the one behind it that could eject. Where
    the continuing flow enters such a port again at the next router (the ports form, or
    lead into, a loop), the port carries at most ``limit`` of its link
    (``nic.message_sim.HEAD_OF_LINE_LIMIT``, 0.75: the saturation throughput of a 2x2
    input-queued switch, Karol, Hluchyj and Morgan 1987); on an open chain the last port
    drains and nothing is lost. Each input port a flow enters a router by and leaves it
    again is a rate resource at the link's capacity; ports that qualify with at least that
    load get the lower capacity (``cap_eff``), and the rates are shared out again.
    Returns True when some input was lowered."""
    rates, path_links, path_len, link_cap, in_res, rate_cap = sl.rates, sl.plink, sl.plen, rs.lcap, sl.in_res, rs.rate_cap
    load, injected, in_load, blocked, keep, cap_eff = rs.load, rs.injected, rs.in_load, rs.blocked, rs.keep, rs.cap_eff
    load.fill(0.0)
    injected.fill(False)
    in_load.fill(0.0)
    blocked.fill(False)
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
        keep.fill(False)
        for k in range(na):
            i = active[k]
            for h in range(1, path_len[i] - 2):
                o = path_links[i, h + 1]
                if blocked[in_res[i, h]] and blocked[in_res[i, h + 1]] and injected[o] and (
                        load[o] >= saturated * link_cap[o] * (1.0 - 1e-9)):
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


@_kernel
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


@_kernel
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
            n_backed[path_links[i, h]] += 1


@_stage
def _free_pending(sl, ls, c):
    """The slots of transfers that are over (departed flows have been re-rated)."""
    for q in range(c[C_PEND]):
        sl.tid[ls.pend[q]] = -1
    c[C_LIVE] -= c[C_PEND]
    c[C_PEND] = 0


# ---- 4. the next event --------------------------------------------------------------------

@_stage
def _next_flow_event(nt, pg, sl, ls, c, now):
    """The earliest time a flow's state changes: its last byte passes the bottleneck, its
    buffers fill (the NI drops to the flow's rate), its NI is free (the rest fits in the
    transmit queue ``txb``), its transmit queue empties, a head reaches its next router, a
    queued transfer's predecessor clears the shared buffers, or a transfer in flight
    arrives. A time now + x / y is computed only when it may come before the earliest so
    far: with x >= lim * y it is later (lim: that gap, widened by far more than the
    rounding of the division and the sums), and the division is skipped."""
    rates, rem, inj, slack, tol, cap_ni, sst = sl.rates, sl.rem, sl.inj, sl.slack, sl.tol, sl.cap_ni, sl.sst
    txb = nt.txb
    t_next = np.inf
    lim = np.inf
    for k in range(c[C_ACTIVE]):
        s = ls.active[k]
        r = rates[s]
        if r > 0.0 and rem[s] < lim * r:
            tt = now + rem[s] / r
            if tt < t_next:
                t_next = tt
                lim = _gap_limit(t_next, now)
        if sst[s] == SENDING:
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
        elif sst[s] == DRAINING and inj[s] > tol[s] and r > 0.0 and inj[s] < lim * r:
            tt = now + inj[s] / r  # its transmit queue is empty
            if tt < t_next:
                t_next = tt
                lim = _gap_limit(t_next, now)
    heads, head_key = ls.heads, sl.head_key
    for k in range(c[C_HEADS]):
        s = heads[k]
        if now < head_key[s] < t_next:
            t_next = head_key[s]
    mask = sl.mask
    queued, waits_on, status, tid, hshare, common, bneck = ls.queued, sl.waits_on, pg.status, sl.tid, sl.hshare, sl.common, sl.bneck
    for q in range(c[C_QUEUED]):
        s = queued[q] & mask
        p = waits_on[s]
        ps = p & mask
        if _state(p, status, tid, mask, sst) == DRAINING and rates[ps] > 0.0:
            tt = now + (rem[ps] - _buffered_beyond(hshare, ps, common[s], bneck[ps])) / rates[ps]
            if now < tt < t_next:
                t_next = tt
    fly, done_at, tail_lat = ls.fly, sl.done_at, sl.tail_lat
    for q in range(c[C_FLY]):
        s = fly[q]
        if done_at[s] + tail_lat[s] < t_next:
            t_next = done_at[s] + tail_lat[s]
    return t_next


@_stage
def _due_wakeups(tr, nt, nd, c, hp, now):
    """Inputs ready and steps opening by ``now`` mark their nodes: to look for starts, and
    (a step opened) for the step's end."""
    wake_key, wake_id, open_key, open_id = hp.wake_key, hp.wake_id, hp.open_key, hp.open_id
    n_wake = c[C_WAKE]
    n_wk = c[C_WK]
    while n_wake > 0 and wake_key[0] <= now:  # those may start (or wait for their NI or step) now
        n_wk = _mark_woken(wake_id[0], tr.src_node, nt.num_nodes, nd.wake_flag, nd.wake_list, n_wk)
        n_wake = _heap_pop(wake_key, wake_id, n_wake)
    n_open = c[C_OPEN]
    n_lk = c[C_LK]
    while n_open > 0 and open_key[0] <= now:
        n_wk = _mark(nd.wake_flag, nd.wake_list, n_wk, open_id[0])
        n_lk = _mark(nd.lock_flag, nd.lock_list, n_lk, open_id[0])
        n_open = _heap_pop(open_key, open_id, n_open)
    c[C_WAKE] = n_wake
    c[C_WK] = n_wk
    c[C_OPEN] = n_open
    c[C_LK] = n_lk


@_stage
def _next_event(tr, nt, pg, sl, nd, ls, c, hp, now):
    """The earliest time anything changes (:func:`_next_flow_event`, a wake-up, a step
    opening, an NI release); marks what is due now on the way. ``inf``: nothing will."""
    t_next = _next_flow_event(nt, pg, sl, ls, c, now)
    _due_wakeups(tr, nt, nd, c, hp, now)
    if c[C_WAKE] > 0 and hp.wake_key[0] < t_next:
        t_next = hp.wake_key[0]
    if c[C_OPEN] > 0 and hp.open_key[0] < t_next:
        t_next = hp.open_key[0]
    for q in range(c[C_REL]):
        if sl.free_at[ls.rel[q]] < t_next:
            t_next = sl.free_at[ls.rel[q]]
    return t_next


# ---- 5. flows move on ---------------------------------------------------------------------

@_stage
def _advance_flows(nt, wh, sl, rs, ls, c, out, now, dt):
    """Every flowing transfer moves on by ``dt`` at its rate (its NI at full speed while
    its buffers fill). When the rest fits in the NI's transmit queue, or all has left the
    NI: sent, draining, its NI released ``ni_free_delay`` later (:func:`_release_nis`).
    When its last byte has passed the bottleneck: in flight (it arrives the tail's latency
    later, :func:`_arrivals`), off its resources' lists, its VCs free again."""
    rates, rem, inj, slack, tol, cap_ni, sst = sl.rates, sl.rem, sl.inj, sl.slack, sl.tol, sl.cap_ni, sl.sst
    txb = nt.txb
    active, tid, sent, free_at, rel, fly, done_at = ls.active, sl.tid, out.sent, sl.free_at, ls.rel, ls.fly, sl.done_at
    buffered_at_sent, listed, vc_free, plink, pcls, plen = sl.buffered_at_sent, sl.listed, rs.vc_free, sl.plink, sl.pcls, sl.plen
    ni_free_delay, hold, n_cls = nt.ni_free_delay, wh.hold, wh.n_cls
    na = c[C_ACTIVE]
    k = 0
    while k < na:
        s = active[k]
        r = rates[s]
        if sst[s] == SENDING:
            b = rem[s] - inj[s]
            if b < slack[s] - tol[s] and cap_ni[s] > r * (1.0 + 1e-12):
                inj[s] -= cap_ni[s] * dt
            else:
                inj[s] -= r * dt
            if inj[s] < 0.0:
                inj[s] = 0.0
        elif sst[s] == DRAINING and inj[s] > 0.0:
            inj[s] = max(inj[s] - r * dt, 0.0)  # the rest in the transmit queue leaves
        rem[s] -= r * dt
        if sst[s] == SENDING and (inj[s] <= txb + tol[s] or rem[s] <= tol[s]):
            sst[s] = DRAINING
            sent[tid[s]] = now
            free_at[s] = now + ni_free_delay  # released below, in this pass when there is no delay
            rel[c[C_REL]] = s
            c[C_REL] += 1
            buffered_at_sent[s] = max(rem[s] - inj[s], 0.0)
        if rem[s] <= tol[s]:
            sst[s] = IN_FLIGHT
            fly[c[C_FLY]] = s
            c[C_FLY] += 1
            done_at[s] = now
            # the last flow in the list moves here, and is moved on when this place is looked at again
            active[k] = active[na - 1]
            na -= 1
            c[C_DIRTY] = 1
            if listed[s]:
                _unlist(sl, rs, ls, c, s)
            if hold:
                for h in range(1, plen[s]):
                    vc_free[plink[s, h] * n_cls + pcls[s, h]] += 1
        else:
            k += 1
    c[C_ACTIVE] = na


@_stage
def _unlist(sl, rs, ls, c, s):
    """Flow ``s`` off its resources' lists; its neighbours are rated again."""
    sl.listed[s] = False
    for h in range(sl.rate_len[s]):
        nd = s * sl.hr + h
        if sl.nd_prev[nd] >= 0:
            sl.nd_next[sl.nd_prev[nd]] = sl.nd_next[nd]
        else:
            rs.res_first[sl.rate_links[s, h]] = sl.nd_next[nd]
        if sl.nd_next[nd] >= 0:
            sl.nd_prev[sl.nd_next[nd]] = sl.nd_prev[nd]
    ls.gone[c[C_GONE]] = s
    c[C_GONE] += 1


# ---- 7. queued transfers ------------------------------------------------------------------

@_stage
def _release_queued(wh, pg, sl, ls, c, now):
    """**One NI, one queue**, the release: a transfer queued behind its NI's predecessor
    leaves (in schedule order) once the predecessor's tail has left the buffers their
    routes share (or, ``tx_only``, once its transmit queue is empty), taking over the
    buffer space it freed: those bytes are in the network already."""
    if c[C_QUEUED] == 0:
        return
    mask = sl.mask
    n_due = c[C_QUEUED]
    for q in range(n_due):
        ls.due[q] = ls.queued[q]
    _sort_in_place(ls.due, n_due)  # in schedule order
    nq = 0
    for q in range(n_due):
        i = ls.due[q]
        s = i & mask
        p = sl.waits_on[s]
        ps = p & mask
        pst = _state(p, pg.status, sl.tid, mask, sl.sst)
        thr = 0.0
        go = True
        if pst == DRAINING and sl.tx_only[s]:
            if sl.inj[ps] > sl.tol[ps]:
                go = False
            thr = sl.rem[ps]
        elif pst == DRAINING:
            thr = _buffered_beyond(sl.hshare, ps, sl.common[s], sl.bneck[ps])
            if sl.rem[ps] > thr + sl.tol[ps]:
                go = False
        if not go:
            ls.queued[nq] = i
            nq += 1
            continue
        sl.inherit[s] = 1e-9 if sl.tx_only[s] else min(max(sl.buffered_at_sent[ps] - thr, 1e-9), sl.wire[s])
        sl.catch_hops[s] = sl.common[s]
        c[C_QUEUED] = nq  # (the activation below does not look at the queue)
        if _activate(sl, pg, ls, c, s, i, now, wh.hold):
            sl.inj[s] = sl.wire[s] - sl.inherit[s]
            sl.pipe[s] = sl.inherit[s]
            c[C_DIRTY] = 1
    c[C_QUEUED] = nq


# ---- 8. NI release ------------------------------------------------------------------------

@_stage
def _release_nis(tr, nt, sl, nd, ls, c, now):
    """NIs whose last transfer's last byte left ``ni_free_delay`` ago take the next one:
    their nodes look for starts (and, co-designed, for the step's end)."""
    rel, free_at, src_node, tid, ni_busy, sst, pend = ls.rel, sl.free_at, tr.src_node, sl.tid, nd.ni_busy, sl.sst, ls.pend
    codesigned = nt.policy == POLICY_CODESIGNED
    q = 0
    while q < c[C_REL]:
        s = rel[q]
        if free_at[s] <= now:
            free_at[s] = np.inf
            v = src_node[tid[s]]
            ni_busy[v] -= 1
            c[C_WK] = _mark(nd.wake_flag, nd.wake_list, c[C_WK], v)
            if codesigned:
                c[C_LK] = _mark(nd.lock_flag, nd.lock_list, c[C_LK], v)
            c[C_REL] -= 1
            rel[q] = rel[c[C_REL]]
            if sst[s] == ARRIVED:  # over: the slot is free again
                pend[c[C_PEND]] = s
                c[C_PEND] += 1
        else:
            q += 1


# ---- 9. arrivals and the reduction unit ---------------------------------------------------

@_stage
def _reduction_ready(red, nd, i, arrived):
    """**The receivers' reduction unit** (``nic.reduction.reduce_done``): when transfer
    ``i``'s data, arrived at ``arrived``, is usable at its receiver (after its summation,
    for a REDUCE; the arrival without a unit)."""
    if red.has_red:
        return reduce_done(nd.unit_free, red.dst_node[i], arrived, red.work[i], red.last[i], red.latency, red.mode)
    return reduce_done(nd.unit_free, 0, arrived, 0, 0, red.latency, red.mode)


@_stage
def _arrivals(tr, nt, red, pg, sl, nd, ls, c, out, hp, now):
    """Transfers whose tail arrived by ``now`` (the tail's latency after their last byte
    passed the bottleneck: with a wormhole, after the tail flit's slot *began*) arrive, in
    schedule order; each releases the transfers that wait for it, which may start
    ``issue_delay`` after the last of their inputs is usable (a wake-up)."""
    mask = sl.mask
    fly, done_at, tail_lat, due, tid, sst, free_at, pend = ls.fly, sl.done_at, sl.tail_lat, ls.due, sl.tid, sl.sst, sl.free_at, ls.pend
    rdep_ptr, rdep_idx, deps_left, rdy, not_before = tr.rdep_ptr, tr.rdep_idx, pg.deps_left, pg.rdy, tr.not_before
    has_nb, issue_delay, src_node, wake_flag, wake_list = tr.has_not_before, nt.issue_delay, tr.src_node, nd.wake_flag, nd.wake_list
    n_due = 0
    q = 0
    while q < c[C_FLY]:
        s = fly[q]
        if done_at[s] + tail_lat[s] <= now:
            due[n_due] = tid[s]
            n_due += 1
            c[C_FLY] -= 1
            fly[q] = fly[c[C_FLY]]
        else:
            q += 1
    if n_due > 1:
        _sort_in_place(due, n_due)
    n_wake = c[C_WAKE]
    for q in range(n_due):
        i = due[q]
        s = i & mask
        sst[s] = ARRIVED
        a = done_at[s] + tail_lat[s]
        out.arrive[i] = a
        rd_i = _reduction_ready(red, nd, i, a)
        if red.keep_ready:
            out.ready[i] = rd_i
        c[C_ARRIVED] += 1
        for r in range(rdep_ptr[i], rdep_ptr[i + 1]):
            d = rdep_idx[r]
            deps_left[d] -= 1
            rdy[d] = max(rdy[d], rd_i)
            if deps_left[d] == 0:
                rdy[d] = rdy[d] + issue_delay
                key = max(rdy[d], not_before[d]) if has_nb else rdy[d]
                n_wake = _heap_push_capped(hp.wake_key, hp.wake_id, n_wake, key, d, c)
                if key <= now:
                    c[C_WK] = _mark(wake_flag, wake_list, c[C_WK], src_node[d])
        if free_at[s] == np.inf:  # its NI was released already: the slot is free again
            pend[c[C_PEND]] = s
            c[C_PEND] += 1
    c[C_WAKE] = n_wake


# ---- 10. lockstep -------------------------------------------------------------------------

@_stage
def _lockstep(tr, nt, pg, nd, c, hp, now):
    """**Lockstep** (co-designed NIC): a node's next step opens only when every transfer
    of its current step has started and all its NIs are idle, ``step_advance`` later; the
    next step is that of the node's first waiting transfer (steps opening later: a heap)."""
    if nt.policy != POLICY_CODESIGNED:
        return
    n_open = c[C_OPEN]
    for q in range(c[C_LK]):
        n = nd.lock_list[q]
        nd.lock_flag[n] = False
        if nd.open_step[n] >= 0 and nd.unstarted_in_step[n] == 0 and nd.ni_busy[n] == 0 and nd.open_at[n] <= now:
            end = nd.node_ptr[n + 1]
            while nd.cur[n] < end and pg.status[nd.node_tx[nd.cur[n]]] != WAITING:
                nd.cur[n] += 1
            if nd.cur[n] == end:
                nd.open_step[n] = -1
            else:
                nxt = tr.step[nd.node_tx[nd.cur[n]]]
                nd.open_step[n] = nxt
                nd.open_at[n] = now + nt.step_advance
                k = 0
                j = nd.cur[n]
                while j < end and tr.step[nd.node_tx[j]] == nxt:
                    if pg.status[nd.node_tx[j]] == WAITING:
                        k += 1
                    j += 1
                nd.unstarted_in_step[n] = k
                if nd.open_at[n] <= now:
                    c[C_WK] = _mark(nd.wake_flag, nd.wake_list, c[C_WK], n)
                else:
                    n_open = _heap_push_capped(hp.open_key, hp.open_id, n_open, nd.open_at[n], n, c)
    c[C_LK] = 0
    c[C_OPEN] = n_open


# ---- the driver ---------------------------------------------------------------------------

# the loop's state: what :func:`_new_state` allocates and the heaps
LoopState = namedtuple("LoopState", ["pg", "sl", "rs", "nd", "ls", "c", "hp"])

# the heaps' capacities per slot of the pool (a run that overflows one runs again with a
# larger pool): waiting transfers whose inputs are in (their issue delay not over yet), and
# heads offered a VC in one instant (each head once, and again at each hop it takes at once)
WAKE_PER_SLOT = 2
OFFERS_PER_SLOT = 2


@njit(cache=True)
def _new_heaps(tr, nt, pg, nd, c, pool):
    """The heaps, of fixed capacity (the loop allocates nothing): a wake-up per transfer
    with ``not_before`` (every transfer may wait at once), otherwise ``WAKE_PER_SLOT`` per
    slot; a step opening per node (each node has one step opening at a time);
    ``OFFERS_PER_SLOT`` per slot and one per hop for heads offered a VC in one instant.
    Holds the first wake-ups: the transfers without dependencies (without ``not_before``,
    one entry, transfer -1, at ``first_start``); every node is marked to look for starts."""
    t_count = tr.src_node.shape[0]
    n_wake = t_count + 1 if tr.has_not_before else min(t_count, WAKE_PER_SLOT * pool) + 1
    n_hp = OFFERS_PER_SLOT * pool + tr.links.shape[1]
    hp = Heaps(np.empty(n_wake), np.empty(n_wake, dtype=np.int64), np.empty(nt.num_nodes + 1),
               np.empty(nt.num_nodes + 1, dtype=np.int64), np.empty(n_hp), np.empty(n_hp, dtype=np.int64))
    for n in range(nt.num_nodes):
        c[C_WK] = _mark(nd.wake_flag, nd.wake_list, c[C_WK], n)
    any_free = False
    for i in range(t_count):
        if pg.deps_left[i] == 0:
            if tr.has_not_before:
                c[C_WAKE] = _heap_push(hp.wake_key, hp.wake_id, c[C_WAKE], max(pg.rdy[i], tr.not_before[i]), i)
            else:
                any_free = True
    if any_free:
        c[C_WAKE] = _heap_push(hp.wake_key, hp.wake_id, c[C_WAKE], nt.first_start, -1)
    return hp


@njit(cache=True, nogil=True)  # it may run beside the verifier (nic.allreduce.simulate_allreduce)
def run(tr, rt, wh, nt, red, out, pool, hr, work_i8, work_i32, work_f64):
    """The event loop over a pool of ``pool`` slots (a power of two) of ``hr`` rate
    resources each: transfer i's state while it is under way lives in slot ``i & (pool - 1)``,
    taken when it starts and given back once it has arrived and its NI is released
    (``out.stats[0]`` = 1 and -1 returned when a transfer finds its slot taken or a heap
    is full; ``out.stats[1]`` = the most slots in use). ``work_*``: per-transfer scratch the
    caller owns. Returns the number of events (more than ``out.max_events``: stopped there).
    Allocates the loop's state, then runs :func:`_event_loop` on it."""
    pg, sl, rs, nd, ls, c = _new_state(tr, rt, wh, nt, pool, hr, work_i8, work_i32, work_f64)
    hp = _new_heaps(tr, nt, pg, nd, c, pool)
    return _event_loop(tr, rt, wh, nt, red, out, LoopState(pg, sl, rs, nd, ls, c, hp))


@_loop_kernel
def _event_loop(tr, rt, wh, nt, red, out, st):
    """The stages, event by event, until every transfer has arrived (see the module's
    docstring); compiled without reference counting (it allocates nothing)."""
    pg, sl, rs, nd, ls, c, hp = st
    t_count = tr.src_node.shape[0]
    now = 0.0
    c[C_DIRTY] = 1
    n_events = 0
    while c[C_ARRIVED] < t_count:
        n_events += 1
        if n_events > out.max_events:  # a bound, so that no input can keep the compiled loop (and Ctrl-C) waiting
            return n_events
        if not _start_transfers(tr, rt, wh, nt, pg, sl, rs, nd, ls, c, out, now):
            return -1
        _acquire_vcs(rt, wh, sl, rs, ls, c, hp, now)
        _rate_pass(wh, sl, rs, ls, c)
        _free_pending(sl, ls, c)
        t_next = _next_event(tr, nt, pg, sl, nd, ls, c, hp, now)
        if c[C_FULL]:
            out.stats[0] = 1
            return -1
        if t_next == np.inf:
            return n_events  # stalled: the caller reports the transfer that never arrived
        dt = t_next - now
        now = t_next
        _advance_flows(nt, wh, sl, rs, ls, c, out, now, dt)
        _due_wakeups(tr, nt, nd, c, hp, now)
        _release_queued(wh, pg, sl, ls, c, now)
        _release_nis(tr, nt, sl, nd, ls, c, now)
        _arrivals(tr, nt, red, pg, sl, nd, ls, c, out, hp, now)
        _lockstep(tr, nt, pg, nd, c, hp, now)
    return n_events
