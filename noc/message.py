"""Message-level network model: transfers as fluid flows over their routes.

Fidelity level: below the flit-level simulator (``noc.flit``), above the analytical bounds.
A transfer is a flow of ``wire_bytes`` along a fixed route. While it is being sent it
holds every link of its route; the links' bandwidth is shared among the flows crossing
them by **max-min fairness with strict priorities** (flows of a more urgent priority class
— a lower number — are served first, the rest share what is left). Because the flow
occupies its whole route at once, hops are pipelined: a transfer's last byte leaves the
source when its serialisation ends and arrives ``path_latency_cycles`` later.

This module holds the network part only (rates and path latencies); who may start when
(the NIC's policy) is the caller's business — see ``nic.message_sim``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from noc.routing import PairRoutes, RouteTable
from noc.topology import Topology

_EPS = 1e-9


def path_latency_cycles(topology: Topology, routes: RouteTable | PairRoutes, router_delay_cycles: int) -> np.ndarray:
    """Head latency of each route: link latencies plus a router delay per router crossed
    (float64[E, E] for a full table, float64[P] for the pairs of :class:`PairRoutes`)."""
    lat = topology.link_latency_cycles.astype(np.float64)
    links = routes.links
    valid = links >= 0
    per_link = np.where(valid, lat[np.where(valid, links, 0)], 0.0)
    routers_crossed = np.maximum(routes.length.astype(np.float64) - 1.0, 0.0)
    return per_link.sum(axis=-1) + router_delay_cycles * routers_crossed


@njit(cache=True)
def max_min_rates(active, priority, path_links, path_len, link_capacity, rates, cap_left, users):
    """Max-min fair rates with strict priority classes (progressive filling).

    ``active``: int64 indices of the flows to rate; ``priority[f]``: lower is served first;
    ``path_links[f, :path_len[f]]``: the links of flow ``f``; ``link_capacity[l]`` in
    bytes/cycle. Writes ``rates[f]`` for the active flows. ``cap_left`` (float64[L]) and
    ``users`` (int64[L]) are scratch arrays; only the links of active flows are touched,
    so the work follows the flows, not the network.
    """
    n = active.shape[0]
    max_min_rates_in(active, priority, path_links, path_len, link_capacity, rates, cap_left, users,
                     np.empty(n, dtype=np.int64), np.empty(n, dtype=np.bool_), np.empty(n + 1, dtype=np.int64))


@njit(cache=True, inline="always")
def _served_before(priority, active, a, b):
    """Flow at position ``a`` of ``active`` is served before the one at ``b``: more urgent,
    or as urgent and earlier (the order of a stable sort by priority)."""
    pa = priority[active[a]]
    pb = priority[active[b]]
    return pa < pb or (pa == pb and a < b)


@njit(cache=True, inline="always")
def _sift_positions(pos, k, n, priority, active):
    """Heap order (served last first) for ``pos[k]`` within ``pos[:n]``."""
    while True:
        j = 2 * k + 1
        if j >= n:
            return
        if j + 1 < n and _served_before(priority, active, pos[j], pos[j + 1]):
            j += 1
        if not _served_before(priority, active, pos[k], pos[j]):
            return
        pos[k], pos[j] = pos[j], pos[k]
        k = j


@njit(cache=True, _nrt=False)
def _flows_by_priority(active, priority, flows, counts):
    """``flows[:n]`` = ``active`` stably sorted by priority, allocating nothing: a copy when
    it is in order already (one priority class, the usual case); a counting sort when the
    priorities span fewer values than ``counts`` holds; else a heapsort of the positions by
    (priority, position)."""
    n = active.shape[0]
    in_order = True
    lo = priority[active[0]] if n > 0 else 0
    hi = lo
    for k in range(1, n):
        p = priority[active[k]]
        if p < priority[active[k - 1]]:
            in_order = False
        lo = min(lo, p)
        hi = max(hi, p)
    if in_order:
        for k in range(n):
            flows[k] = active[k]
        return
    span = hi - lo + 1
    if span < counts.shape[0]:
        for v in range(span + 1):
            counts[v] = 0
        for k in range(n):
            counts[priority[active[k]] - lo + 1] += 1
        for v in range(1, span + 1):
            counts[v] += counts[v - 1]
        for k in range(n):
            f = active[k]
            v = priority[f] - lo
            flows[counts[v]] = f
            counts[v] += 1
        return
    for k in range(n):
        flows[k] = k
    for k in range(n // 2 - 1, -1, -1):
        _sift_positions(flows, k, n, priority, active)
    for end in range(n - 1, 0, -1):
        flows[0], flows[end] = flows[end], flows[0]
        _sift_positions(flows, 0, end, priority, active)
    for k in range(n):
        flows[k] = active[flows[k]]


@njit(cache=True, _nrt=False)
def max_min_rates_in(active, priority, path_links, path_len, link_capacity, rates, cap_left, users, flows, frozen,
                     counts):
    """:func:`max_min_rates` with its scratch arrays given (``flows``: int, ``frozen``: bool,
    at least ``active``'s length each; ``counts``: int, any length, the more the fewer
    heapsorts by priority): allocates nothing, for callers compiled without reference
    counting."""
    n = active.shape[0]
    if n == 0:
        return
    for k in range(n):
        f = active[k]
        rates[f] = 0.0
        for h in range(path_len[f]):
            lk = path_links[f, h]
            cap_left[lk] = link_capacity[lk]
            users[lk] = 0
    # classes in order of urgency, each a run of the flows sorted by priority
    _flows_by_priority(active, priority, flows, counts)
    for k in range(n):
        frozen[k] = False
    lo = 0
    while lo < n:
        hi = lo + 1
        while hi < n and priority[flows[hi]] == priority[flows[lo]]:
            hi += 1
        while True:
            any_unfrozen = False
            for k in range(lo, hi):
                if not frozen[k]:
                    any_unfrozen = True
                    f = flows[k]
                    for h in range(path_len[f]):
                        users[path_links[f, h]] += 1
            if not any_unfrozen:
                break
            delta = np.inf
            for k in range(lo, hi):
                if not frozen[k]:
                    f = flows[k]
                    for h in range(path_len[f]):
                        lk = path_links[f, h]
                        share = cap_left[lk] / users[lk]
                        if share < delta:
                            delta = share
            if delta < 0.0:
                delta = 0.0
            for k in range(lo, hi):
                if not frozen[k]:
                    rates[flows[k]] += delta
            # each used link once: take the share its users got, and clear the count
            for k in range(lo, hi):
                if not frozen[k]:
                    f = flows[k]
                    for h in range(path_len[f]):
                        lk = path_links[f, h]
                        if users[lk] > 0:
                            cap_left[lk] -= delta * users[lk]
                            users[lk] = 0
            # freeze flows that cross a saturated link
            for k in range(lo, hi):
                if not frozen[k]:
                    f = flows[k]
                    for h in range(path_len[f]):
                        if cap_left[path_links[f, h]] <= _EPS * link_capacity[path_links[f, h]]:
                            frozen[k] = True
                            break
        lo = hi
