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

from noc.routing import RouteTable
from noc.topology import Topology

_EPS = 1e-9


def path_latency_cycles(topology: Topology, routes: RouteTable, router_delay_cycles: int) -> np.ndarray:
    """float64[E, E]: head latency of each route: link latencies plus a router delay per router crossed."""
    lat = topology.link_latency_cycles.astype(np.float64)
    links = routes.links
    valid = links >= 0
    per_link = np.where(valid, lat[np.where(valid, links, 0)], 0.0)
    routers_crossed = np.maximum(routes.length.astype(np.float64) - 1.0, 0.0)
    return per_link.sum(axis=2) + router_delay_cycles * routers_crossed


@njit(cache=True)
def max_min_rates(active, priority, path_links, path_len, link_capacity, rates, cap_left, users):
    """Max-min fair rates with strict priority classes (progressive filling).

    ``active``: int64 indices of the flows to rate; ``priority[f]``: lower is served first;
    ``path_links[f, :path_len[f]]``: the links of flow ``f``; ``link_capacity[l]`` in
    bytes/cycle. Writes ``rates[f]`` for the active flows. ``cap_left`` (float64[L]) and
    ``users`` (int64[L]) are scratch arrays.
    """
    n = active.shape[0]
    for l in range(link_capacity.shape[0]):
        cap_left[l] = link_capacity[l]
    if n == 0:
        return
    frozen = np.zeros(n, dtype=np.bool_)
    done_class = np.zeros(n, dtype=np.bool_)
    for k in range(n):
        rates[active[k]] = 0.0
    remaining = n
    while remaining > 0:
        # the most urgent class among flows not yet handled
        best = np.int64(1) << 62
        for k in range(n):
            if not done_class[k] and priority[active[k]] < best:
                best = priority[active[k]]
        cls = np.zeros(n, dtype=np.bool_)
        for k in range(n):
            if not done_class[k] and priority[active[k]] == best:
                cls[k] = True
                frozen[k] = False
        while True:
            for l in range(users.shape[0]):
                users[l] = 0
            any_unfrozen = False
            for k in range(n):
                if cls[k] and not frozen[k]:
                    any_unfrozen = True
                    f = active[k]
                    for h in range(path_len[f]):
                        users[path_links[f, h]] += 1
            if not any_unfrozen:
                break
            delta = np.inf
            for l in range(users.shape[0]):
                if users[l] > 0:
                    share = cap_left[l] / users[l]
                    if share < delta:
                        delta = share
            if delta < 0.0:
                delta = 0.0
            for k in range(n):
                if cls[k] and not frozen[k]:
                    rates[active[k]] += delta
            for l in range(users.shape[0]):
                if users[l] > 0:
                    cap_left[l] -= delta * users[l]
            # freeze flows that cross a saturated link
            for k in range(n):
                if cls[k] and not frozen[k]:
                    f = active[k]
                    for h in range(path_len[f]):
                        if cap_left[path_links[f, h]] <= _EPS * link_capacity[path_links[f, h]]:
                            frozen[k] = True
                            break
        for k in range(n):
            if cls[k]:
                done_class[k] = True
                remaining -= 1
