"""Fast-forward of the flit-level co-simulation (``nic.flit_cosim_stages.cosim``) over
stretches in which the network only streams.

A cycle *only streams* when every packet in the network is one stream: its NI injects one
flit of it per cycle, every router input VC on its route holds a fixed number of its flits
and forwards one per cycle onto the route's next link, every link on the route carries one
of its flits per cycle (its pipeline full), the credit of every VC on the route returns one
per cycle, no two streams share a link, no head flit is in route computation or VC
allocation, and no tail is in the network or due at its NI. Such a cycle changes the state
by a shift: every flit moves one place along its stream, the buffers' heads and the link and
credit rings turn by one, the flits sent, ejected and carried per link count one more each
(and those in flight one fewer),
and the switch allocators' pointers point past the one requester they granted. As long as
nothing else is due — no tail injected, no NIC event (a scheduler with an input or not
quiet, a baseline NI looking again, a summed REDUCE due, a message leaving its NI) — the
next cycle streams again, so ``K`` such cycles are that shift taken ``K`` times.

:func:`stream_window` checks, at the start of a cycle, that the state streams (every
condition above, read from the state: each active NI's packet is followed along the VCs it
owns, its flits' sequence numbers are checked to be consecutive along the route, the
in-flight counts of the link and credit rings and the routers' buffered flits must be
exactly the streams'), and returns how many cycles certainly stream. :func:`jump` sets the
state to the one the cycle-by-cycle loop reaches after ``J`` of those cycles — every field,
the dead slots of rings and buffers included (their values are the last ones written, as the
loop leaves them), except the switch allocators' request scratch (``req_*``), which the
driver's next, stepped cycle rewrites as the loop would. ``cosim`` jumps ``K - 1`` cycles
and steps the last one. ``tests/nic/test_flit_forward.py`` compares the whole state against
the cycle-by-cycle loop.

The check costs about as much as a cycle; when it fails the driver tries again after 1, 2,
4, ... up to :data:`MAX_GAP` cycles (reset by a jump). A network with links narrower than a
flit, or in debug mode, is never fast-forwarded (``Params.fast_forward``).
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import trailing_zeros

from noc.flit import C_EJECTED_FLITS, C_IDLE, C_IN_FLIGHT, C_INJECTED_FLITS, C_MOVED

# per link: its index in the routers' input-link CSR (net.rin_links; -1 for an ejection
# link); a stamp marking links taken by a stream in the current check. Per stream link (in
# the order found): link, VC, arrival delay, hop, packet, sequence number of the flit
# arriving at the check's cycle, flits buffered at its router input, sequence number of the
# front one, credit latency (0: ejection link), the send order within a cycle (key); the
# number of stream links and streams; the sorted orders of the arrival and credit lists;
# when to check next and the back-off gap; statistics (jumps, cycles jumped)
Forward = namedtuple("Forward", [
    "rin_pos", "mark", "stamp", "s_link", "s_vc", "s_delay", "s_hop", "s_pkt", "s_arr_seq", "s_buf", "s_front",
    "s_clat", "s_key", "count", "arr_order", "cr_order", "next_try", "gap", "stats"])
MIN_JUMP = 64  # cycles: shorter stretches are stepped
MAX_GAP = 64  # cycles between checks after repeated failures
_ACTIVE = 3  # noc.flit's vc_state of an input VC that owns an output VC

_stage = njit(cache=True, inline="always", _nrt=False)


def new_forward(net) -> "Forward":
    """The fast-forward's scratch for network ``net`` (``noc.flit.build_network``)."""
    nl = int(net.num_links)
    rin_pos = np.full(nl, -1, np.int64)
    rin_pos[np.asarray(net.rin_links, np.int64)] = np.arange(len(net.rin_links), dtype=np.int64)
    z = lambda: np.zeros(nl, np.int64)  # noqa: E731
    return Forward(rin_pos=rin_pos, mark=z(), stamp=np.zeros(1, np.int64), s_link=z(), s_vc=z(), s_delay=z(),
                   s_hop=z(), s_pkt=z(), s_arr_seq=z(), s_buf=z(), s_front=z(), s_clat=z(), s_key=z(),
                   count=np.zeros(2, np.int64), arr_order=z(), cr_order=z(), next_try=np.zeros(1, np.int64),
                   gap=np.ones(1, np.int64), stats=np.zeros(2, np.int64))


@_stage
def _fill_ring(ff, order, m, ring, end, lat, links, counts):
    """One event ring (link arrivals or credits) after a jump to ``end``: every slot lists the
    ``m`` stream links in ``order``, its first entries those whose latency reaches past it."""
    for s in range(ring):
        t = end + (s - end) % ring
        c = 0
        for i in range(m):
            k = order[i]
            links[s, i] = ff.s_link[k]
            if lat[k] > t - end:
                c += 1
        counts[s] = c


@_stage
def unsent_flits(st, ep):
    """Flits queued at NI ``ep`` that have not entered the network yet (the packetiser's
    check too, ``nic.flit_cosim_stages``)."""
    n = 0
    p = st.q_head[ep]
    while p >= 0:
        n += st.p_flits[p] - st.p_sent[p]
        p = st.p_next[p]
    return n


@_stage
def _nic_window(st, nodes, prm, sch, nis, rx, wait, times, now):
    """Cycles from ``now`` in which no NIC stage can change anything (0: one may now)."""
    k = prm.max_cycles - now
    if now == 0:
        return 0
    for v in range(nodes.node_eps.shape[0]):
        if nis.done_next[v] != 0:
            return 0
        if prm.codesigned:
            if not sch.quiet[v]:
                return 0
            for p in range(nodes.node_eps.shape[1]):
                if rx.pend_n[v, p] > 0:
                    return 0
        elif wait.next_check[v] - now < k:
            k = wait.next_check[v] - now
        if rx.rq_n[v] > 0:  # the front summed REDUCE is a receive in the first cycle after it is ready
            due = times.ready[rx.rq[v, rx.rq_h[v]]] + 1 - now
            if due < k:
                k = due
        if k <= 0:
            return 0
    for ep in range(nodes.ep_node.shape[0]):
        if nis.transfer[ep] < 0:
            continue
        if prm.tx_buffer_flits == 0:
            if st.q_head[ep] < 0:
                return 0
        else:  # the NI is sent once its queue is down to the transmit queue (it drains a flit a cycle)
            u = unsent_flits(st, ep) - prm.tx_buffer_flits
            if u <= 0:
                return 0
            if u < k:
                k = u
    return k


@_stage
def _stream(net, st, ff, ep, now, stamp):
    """Follow NI ``ep``'s front packet along the VCs it owns, recording its links in ``ff``;
    the cycles until its tail would be injected, or 0 when it does not stream."""
    pkt = st.q_head[ep]
    v = st.q_vc[ep]
    if v < 0:
        return 0
    seq = st.p_sent[pkt]  # the next flit to inject; the flits ahead of it count down along the route
    if seq < 1:
        return 0
    k = st.p_flits[pkt] - 1 - seq
    if k <= 0:
        return 0
    l = net.inject_link[ep]
    hop = 0
    n = ff.count[0]
    while True:
        if ff.mark[l] == stamp:
            return 0  # a link shared with another stream
        ff.mark[l] = stamp
        d = net.link_latency[l]
        if not net.is_inject[l]:
            d += net.sa_delay + net.st_delay
        if d < 1 or d >= net.ring:
            return 0
        for j in range(d):  # the link's pipeline: one flit of the packet arriving in each coming cycle
            s = (now + j) % net.ring
            if (st.lp_pkt[l, s] != pkt or st.lp_vc[l, s] != v or st.lp_hop[l, s] != hop
                    or st.lp_seq[l, s] != seq - d + j):
                return 0
        ff.s_link[n] = l
        ff.s_vc[n] = v
        ff.s_delay[n] = d
        ff.s_hop[n] = hop
        ff.s_pkt[n] = pkt
        ff.s_arr_seq[n] = seq - d
        ff.s_key[n] = net.rin_links.shape[0] + ep if net.is_inject[l] else ff.rin_pos[ff.s_link[n - 1]]
        seq -= d
        if net.is_eject[l]:
            ff.s_buf[n] = 0
            ff.s_front[n] = 0
            ff.s_clat[n] = 0
            ff.count[0] = n + 1
            return k if seq == st.p_ejected_flits[pkt] else 0
        b = st.buf_count[l, v]
        for i in range(b):  # the router input VC: the packet's next flits, in order
            c = (st.buf_head[l, v] + i) % net.D
            if st.buf_pkt[l, v, c] != pkt or st.buf_seq[l, v, c] != seq - b + i or st.buf_hop[l, v, c] != hop:
                return 0
        seq -= b
        if seq < 0 or st.vc_state[l, v] != _ACTIVE or st.vc_ready[l, v] > now:
            return 0
        cl = net.credit_lat[l]
        for j in range(cl):  # a credit of this VC returning in each coming cycle
            if st.cp_vc[l, (now + j) % net.cring] != v:
                return 0
        ff.s_buf[n] = b
        ff.s_front[n] = seq
        ff.s_clat[n] = cl
        n += 1
        if n >= ff.s_link.shape[0]:
            return 0
        nl = st.vc_out[l, v]
        v = st.vc_outvc[l, v]
        l = nl
        hop += 1


@_stage
def stream_window(net, st, ff, nodes, prm, sch, nis, rx, wait, times, now):
    """How many cycles from ``now`` (at the start of cycle ``now``) certainly only stream (the
    module docstring); 0 when cycle ``now`` may do something else. Records the streams in ``ff``."""
    for r in range(st.r_heads.shape[0]):
        if st.r_heads[r] != 0:
            return 0
    if st.ej_r[0] != st.ej_w[0]:
        return 0
    k = _nic_window(st, nodes, prm, sch, nis, rx, wait, times, now)
    if k <= 0:
        return 0
    ff.stamp[0] += 1
    stamp = ff.stamp[0]
    ff.count[0] = 0
    ff.count[1] = 0
    for w in range(st.ep_active.shape[0]):
        bits = st.ep_active[w]
        while bits != 0:
            ep = (w << 6) + trailing_zeros(bits)
            bits &= bits - 1
            ks = _stream(net, st, ff, ep, now, stamp)
            if ks <= 0:
                return 0
            if ks < k:
                k = ks
            ff.count[1] += 1
    lp = 0
    cr = 0
    buffered = 0
    for n in range(ff.count[0]):
        lp += ff.s_delay[n]
        cr += ff.s_clat[n]
        buffered += ff.s_buf[n]
    for s in range(net.ring):
        lp -= st.arr_n[s]
    for s in range(net.cring):
        cr -= st.cr_n[s]
    for r in range(st.r_flits.shape[0]):
        buffered -= st.r_flits[r]
    if lp != 0 or cr != 0 or buffered != 0:
        return 0  # flits or credits in flight that belong to no stream
    return k


@_stage
def _sort_by(ff, order, n, by_clat):
    """``order[:n]``: the stream links by delay (credit latency) descending, then send order:
    the order their entries stand in a slot's arrival (credit) list."""
    m = 0
    for i in range(n):
        if by_clat and ff.s_clat[i] == 0:
            continue
        order[m] = i
        m += 1
    for i in range(1, m):  # insertion sort: a few dozen links
        x = order[i]
        dx = ff.s_clat[x] if by_clat else ff.s_delay[x]
        kx = ff.rin_pos[ff.s_link[x]] if by_clat else ff.s_key[x]  # a credit is sent as its VC's flit leaves
        j = i - 1
        while j >= 0:
            y = order[j]
            dy = ff.s_clat[y] if by_clat else ff.s_delay[y]
            ky = ff.rin_pos[ff.s_link[y]] if by_clat else ff.s_key[y]
            if dy > dx or (dy == dx and ky < kx):
                break
            order[j + 1] = y
            j -= 1
        order[j + 1] = x
    return m


@_stage
def jump(net, st, ff, now, J):
    """The state after ``J`` (at least the rings' and buffers' lengths) streaming cycles from
    the start of cycle ``now``, as :func:`stream_window` found them (the module docstring)."""
    n_links = ff.count[0]
    end = now + J
    for n in range(n_links):
        l = ff.s_link[n]
        v = ff.s_vc[n]
        d = ff.s_delay[n]
        pkt = ff.s_pkt[n]
        hop = ff.s_hop[n]
        x = ff.s_arr_seq[n]  # the flit arriving in cycle now; the one arriving in cycle t is x + t - now
        for s in range(net.ring):  # the slot's last arrival cycle t, in [end + d - ring, end + d)
            t = end + d - net.ring + (s - (end + d - net.ring)) % net.ring
            st.lp_pkt[l, s] = pkt if t >= end else -1
            st.lp_seq[l, s] = x + t - now
            st.lp_hop[l, s] = hop
            st.lp_vc[l, s] = v
        st.link_flits[l] += J
        if net.is_eject[l]:
            st.p_ejected_flits[pkt] += J
            continue
        D = net.D
        b = ff.s_buf[n]
        head = (st.buf_head[l, v] + J) % D
        front = ff.s_front[n] + J
        for i in range(D):
            c = (head + i) % D
            st.buf_pkt[l, v, c] = pkt if i < b else -1
            st.buf_seq[l, v, c] = front + i if i < b else front - D + i
            st.buf_hop[l, v, c] = hop
        st.buf_head[l, v] = head
        cl = ff.s_clat[n]
        for s in range(net.cring):
            t = end + cl - net.cring + (s - (end + cl - net.cring)) % net.cring
            st.cp_vc[l, s] = v if t >= end else -1
        # the switch allocation that forwards this VC's flits onto the next stream link
        lo = ff.s_link[n + 1]
        r = net.link_dst_router[l]
        n_in = net.rin_off[r + 1] - net.rin_off[r]
        st.sa_in_ptr[l] = (v + 1) % net.V
        st.sa_out_ptr[lo] = (ff.rin_pos[l] - net.rin_off[r] + 1) % n_in
        if net.sa_kind != 0:
            n_out = net.rout_off[r + 1] - net.rout_off[r]
            st.sa_acc_ptr[l] = (net.out_port[lo] + 1) % n_out
    n_streams = ff.count[1]
    for n in range(n_links):
        if net.is_inject[ff.s_link[n]]:
            st.p_sent[ff.s_pkt[n]] += J
    # the arrival and credit lists: every slot's list is the stream links in send order (its
    # in-flight entries a prefix of it, the rest left from the slot's previous turn)
    _fill_ring(ff, ff.arr_order, _sort_by(ff, ff.arr_order, n_links, False), net.ring, end, ff.s_delay,
               st.arr_links, st.arr_n)
    _fill_ring(ff, ff.cr_order, _sort_by(ff, ff.cr_order, n_links, True), net.cring, end, ff.s_clat,
               st.cr_links, st.cr_n)
    st.counters[C_MOVED] += J * n_links  # a flit per stream link per cycle
    st.counters[C_INJECTED_FLITS] += J * n_streams
    st.counters[C_EJECTED_FLITS] += J * n_streams
    st.counters[C_IN_FLIGHT] -= J * n_streams  # queued or in the network: one fewer ejected per stream
    st.counters[C_IDLE] = 0
    ff.stats[0] += 1
    ff.stats[1] += J
