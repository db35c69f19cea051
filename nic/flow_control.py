"""Flow control as the message model sees it: what it takes from the flit-level router
config (``noc.flit.FlitNetworkConfig``) for a NIC, per link (:func:`route_flow_control`,
for ``nic.message_sim.simulate_routes``) or per transfer (:func:`message_flow_control`,
for ``nic.message_sim.simulate_transfers``): the wormhole's VC holding and buffers, the
NI's injection rate, and the per-packet VC re-allocation bubble.
"""

from __future__ import annotations

import numpy as np

from nic.message_sim import HEAD_OF_LINE_LIMIT, RouteWormhole, Wormhole
from nic.nic_config import NicConfig, check_message_router
from nic.preparation import Prepared
from noc.routing import PairRoutes
from noc.topology import Topology


def route_flow_control(topology: Topology, paths: PairRoutes, nic: NicConfig,
                       network) -> tuple[RouteWormhole | None, np.ndarray, np.ndarray | None]:
    """What the message model takes from the flit-level network config, per link: the
    wormhole description (VC classes and counts, buffers, the tail flit's slot per
    injection link; ``None`` without a network config: a pure fluid), the rate an NI
    injects at when its route starts with each link, in bytes/cycle, and the capacity of
    each (link, VC class) the transfers' packets share after the injection hop, or ``None``
    (for :func:`nic.message_sim.simulate_routes`).

    Per-packet flow control with one VC per class re-allocates that VC for every packet:
    the head of the next packet waits for the route and VC allocation stages after the
    tail of the previous one left, so the packets of a class move ``L`` flits in
    ``L + rc + va`` cycles on every link: the NI injects at that rate, and all transfers
    whose packets use a link in the same class share that rate, while a link carrying two
    classes is busy in one class's allocation bubble with the other's flits. Per-packet
    flows also get the wormhole's head-of-line rule (:data:`nic.message_sim.HEAD_OF_LINE_LIMIT`):
    a router input port holds packets for more than one output.
    """
    link_bw = topology.link_bytes_per_cycle.astype(np.float64)
    ni_bw = link_bw
    if network is None or not hasattr(network, "num_vcs"):
        return None, ni_bw, None
    check_message_router(topology, paths, nic, network)
    classes = int(paths.num_vc_classes)
    vcs = int(network.num_vcs) // classes
    packet_flits = nic.packet_flits
    shared = None
    bubble = int(network.routing_delay_cycles) + int(network.vc_alloc_delay_cycles)
    if not nic.bulk and vcs == 1:
        ni_bw = ni_bw * packet_flits / (packet_flits + bubble)
        # one resource per (link, VC class) after the injection hop, at the bubbled rate
        shared = np.repeat(link_bw, classes) * packet_flits / (packet_flits + bubble)
    per_hop_vcs = 1 if nic.bulk else vcs  # one packet holds one VC per hop; packets of a flow spread over all
    wormhole = RouteWormhole(
        num_vc_classes=classes, vcs_per_class=vcs, hold_vcs=nic.bulk,
        hop_buffer_bytes=float(per_hop_vcs * int(network.vc_depth_flits) * nic.flit_bytes),
        # per-packet flows queue packets for two outputs in one input port
        head_of_line_limit=0.0 if nic.bulk else HEAD_OF_LINE_LIMIT,
        # with one VC per class, packets fill a link of one class at the re-allocation rate above
        saturated_share=packet_flits / (packet_flits + bubble) if not nic.bulk and vcs == 1 else 1.0,
        # a flit crosses a link in one cycle, or ser cycles on a link narrower than a flit
        tail_slot_cycles=np.maximum(1.0, nic.flit_bytes / link_bw))
    return wormhole, ni_bw, shared


def message_flow_control(topology: Topology, paths: PairRoutes, prep: Prepared, nic: NicConfig,
                         network) -> tuple[Wormhole | None, np.ndarray, tuple[np.ndarray, np.ndarray] | None]:
    """:func:`route_flow_control` as per-transfer arrays, for
    :func:`nic.message_sim.simulate_transfers`: the wormhole description (``None``: a pure
    fluid), each transfer's NI injection rate in bytes/cycle, and the VCs its packets share
    with other transfers' as ``(resources per transfer, capacities)`` (or ``None``).
    :func:`run_message` holds none of these arrays (it runs
    :func:`nic.message_sim.simulate_routes`, which derives them transfer by transfer)."""
    route_wh, ni_link, shared_cap = route_flow_control(topology, paths, nic, network)
    links = np.asarray(paths.links, np.int64)
    ni_bw = ni_link[links[:, 0]]
    if route_wh is None:
        return None, ni_bw, None
    classes = route_wh.num_vc_classes
    shared = None
    if shared_cap is not None:
        res = np.where(links >= 0, links * classes + paths.vc_class.astype(np.int64), -1)
        res[:, 0] = -1
        shared = (res, shared_cap)
    link_lat = topology.link_latency_cycles.astype(np.float64)
    rd = int(network.router_delay_cycles)
    head_lat = np.zeros(links.shape)
    for h in range(1, links.shape[1]):
        prev = links[:, h - 1]
        head_lat[:, h] = head_lat[:, h - 1] + np.where(prev >= 0, link_lat[np.maximum(prev, 0)], 0.0) + rd
    in_port = np.full(links.shape, -1, dtype=np.int64)
    in_port[:, 1:] = links[:, :-1]
    wormhole = Wormhole(
        vc_class=np.asarray(paths.vc_class, np.int64), head_latency_cycles=head_lat, in_port=in_port,
        num_vc_classes=classes, vcs_per_class=route_wh.vcs_per_class, hold_vcs=route_wh.hold_vcs,
        hop_buffer_bytes=route_wh.hop_buffer_bytes, head_of_line_limit=route_wh.head_of_line_limit,
        saturated_share=route_wh.saturated_share, tail_slot_cycles=route_wh.tail_slot_cycles[links[:, 0]])
    return wormhole, ni_bw, shared


__all__ = ["message_flow_control", "route_flow_control"]
