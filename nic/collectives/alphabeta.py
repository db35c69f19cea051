"""A schedule's all-gather timed under TACOS's link model: α–β per link, store and forward.

TACOS (Won et al., github.com/astra-sim/tacos) estimates a collective's time on a network
whose every directed link ``s -> d`` sends one chunk at a time, each in ``α + chunk / B``
(α the link's latency, B its bandwidth), a node forwarding a chunk only once it has all of
it, with no limit on how many links a node drives at once. :func:`all_gather_time` times the
all-gather half (the ``OP_GATHER`` transfers) of one of our schedules the same way: every
transfer carries its flow's ``M / F`` bytes over the router link from its sender to its
receiver, starting as soon as the sender holds the flow and the link has finished the
transfers the schedule puts on it in earlier steps. The flow's first holder is the node that
sends it in the all-gather without receiving it (the root its reduce-scatter ended at).
"""

from __future__ import annotations

import numpy as np

from nic.collectives.schedule import Schedule, ScheduleError
from nic.scheduler import OP_GATHER
from noc.topology import Topology


def router_link_bandwidth(topology: Topology) -> dict[tuple[int, int], float]:
    """(router a, router b) -> summed bytes/cycle of the links from a to b."""
    e = topology.num_endpoints
    out: dict[tuple[int, int], float] = {}
    mask = topology.is_router_link
    for s, d, b in zip(topology.link_src[mask], topology.link_dst[mask], topology.link_bytes_per_cycle[mask]):
        key = (int(s) - e, int(d) - e)
        out[key] = out.get(key, 0.0) + float(b)
    return out


def all_gather_time(schedule: Schedule, topology: Topology, size_bytes: float, *, alpha: float,
                    bytes_per_time: float) -> float:
    """Time of ``schedule``'s all-gather of ``size_bytes`` under the α–β link model.

    ``alpha``: per-chunk latency of a link; ``bytes_per_time``: the bandwidth of a link of
    ``topology``'s slowest router-link bandwidth (faster links scale with their bytes/cycle).
    Units are the caller's (TACOS: µs and bytes/µs). Needs a direct network whose
    all-gather transfers each join two neighbouring routers.
    """
    if not topology.is_direct:
        raise ScheduleError(f"the alpha-beta all-gather time needs a direct network, got {topology.name}")
    bw = router_link_bandwidth(topology)
    slowest = min(bw.values())
    g = schedule.op == OP_GATHER
    step, src, dst, flow = (schedule.step[g], schedule.src[g], schedule.dst[g], schedule.flow[g])
    chunk = size_bytes / schedule.num_flows
    have = np.full((schedule.num_flows, schedule.num_nodes), np.inf)
    receivers = np.zeros((schedule.num_flows, schedule.num_nodes), dtype=bool)
    receivers[flow, dst] = True
    senders = np.zeros_like(receivers)
    senders[flow, src] = True
    have[senders & ~receivers] = 0.0
    free: dict[tuple[int, int], float] = {}
    end = 0.0
    for i in np.argsort(step, kind="stable"):
        s, d, f = int(src[i]), int(dst[i]), int(flow[i])
        link = (s, d)
        if link not in bw:
            raise ScheduleError(f"all-gather transfer {s} -> {d} (flow {f}) is not one router link of {topology.name}")
        start = max(have[f, s], free.get(link, 0.0))
        if not np.isfinite(start):
            raise ScheduleError(f"flow {f} is sent by node {s} before it holds it")
        done = start + alpha + chunk / (bytes_per_time * bw[link] / slowest)
        free[link] = done
        have[f, d] = min(have[f, d], done)
        end = max(end, done)
    return float(end)
