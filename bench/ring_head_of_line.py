"""Head-of-line loss on one ring at flit level: the distance-2 exchange of halving-doubling.

    .venv/bin/python bench/ring_head_of_line.py [--vcs 4] [--depth 32] [--packets 600] [--mirror]

Four flows on row 0 of ``torus:4x4:c2``, all started in cycle 0, per-packet (17-flit
packets, the baseline NIC's 256 B): NI 2x of router x sends to NI 2x+4 (mod 8) of router
x+2, two hops in +x (the DOR tie at k/2, which ``noc.routing`` sends +). Each ring link
carries one flow that continues at the next router and one that ejects there; max-min
fairness gives every flow 0.5 flits/cycle, the message model's head-of-line rule 0.375
(message MODEL_VERSION 8: each ring input at 0.75 of its link, docs/allreduce.md). The
script prints what the flit level gives each flow (flits/cycle between the 1/8 and the 1/2
mark of its packets' ejections) and the ring links' load.

``--mirror`` adds the same exchange the other way round from every router's second NI
(NI 2x+1 to NI 2x+5, two hops in -x, VC classes by the same dateline rule): the route
BookSim2's ``dim_order_torus`` gives a tie packet half of the time. It uses the -x links
and its own NIs, so it shares nothing with the +x exchange: it shows that the -x direction
has the same pattern and the same loss. BookSim's split itself (each NI feeding both
directions, half of its packets each way) is not simulated here (docs/allreduce.md,
"The residual").
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from noc.flit import FlitNetworkConfig, build_network, run_packets  # noqa: E402
from noc.topology import parse_spec  # noqa: E402

K = 4  # routers in the ring (row 0 of the 4x4 torus)
PACKET_FLITS = 17


def _link(t, a: int, b: int) -> int:
    ids = np.nonzero((t.link_src == a) & (t.link_dst == b))[0]
    if len(ids) != 1:
        raise ValueError(f"no single link {a} -> {b}")
    return int(ids[0])


def _set_minus_route(net, t, s: int, d: int, x: int) -> None:
    """Route NI s (router x) to NI d (router x-2) through the -x links: class 0 until the
    packet crosses the ring's wrap link (router 0 -> router 3), class 1 from that hop on;
    the injection and ejection hops in class 0, as ``noc.routing`` does for +x."""
    e = t.num_endpoints
    hops = [(x, (x - 1) % K), ((x - 1) % K, (x - 2) % K)]
    links = [int(t.inject_link[s])] + [_link(t, e + a, e + b) for a, b in hops] + [int(t.eject_link[d])]
    classes, cls = [0], 0
    for a, b in hops:
        cls = 1 if (a, b) == (0, K - 1) else cls
        classes.append(cls)
    classes.append(0)
    net.route_links[s, d, :] = -1
    net.route_links[s, d, : len(links)] = links
    net.route_class[s, d, : len(links)] = classes
    net.route_len[s, d] = len(links)


def run(vcs: int, depth: int, packets: int, mirror: bool):
    """(flows, flits/cycle per flow, flits carried per cycle on each ring link used, cycles)."""
    t = parse_spec("torus:4x4:c2")
    cfg = FlitNetworkConfig(num_vcs=vcs, vc_depth_flits=depth)
    net = build_network(t, cfg)
    flows = [(2 * x, 2 * ((x + 2) % K)) for x in range(K)]
    if mirror:
        for x in range(K):
            s, d = 2 * x + 1, 2 * ((x - 2) % K) + 1
            _set_minus_route(net, t, s, d, x)
            flows.append((s, d))
    pk = np.array([(0, s, d, PACKET_FLITS) for _ in range(packets) for s, d in flows], dtype=np.int64)
    _, ejected, st = run_packets(t, cfg, pk, net=net)
    ejected = np.asarray(ejected)
    lo, hi = packets // 8, packets // 2
    rates = []
    for j in range(len(flows)):
        e = np.sort(ejected[j :: len(flows)])
        rates.append(PACKET_FLITS * (hi - lo) / float(e[hi] - e[lo]))
    cycles = int(ejected.max()) + 1
    e = t.num_endpoints
    ring = (t.link_src >= e) & (t.link_dst >= e) & (t.link_src < e + K) & (t.link_dst < e + K)
    load = {(int(t.link_src[l]) - e, int(t.link_dst[l]) - e): int(st.link_flits[l]) / cycles
            for l in np.nonzero(ring)[0] if st.link_flits[l]}
    return flows, rates, load, cycles


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vcs", type=int, default=4, help="VCs per link (2 dateline classes; default 4)")
    ap.add_argument("--depth", type=int, default=32, help="VC depth in flits (default 32, the calibration matrix's)")
    ap.add_argument("--packets", type=int, default=600, help="packets per flow (default 600)")
    ap.add_argument("--mirror", action="store_true", help="add the same exchange routed -x from the second NIs")
    a = ap.parse_args()
    if a.packets < 8:
        ap.error("--packets must be at least 8 (rates are measured between the 1/8 and 1/2 marks)")
    flows, rates, load, cycles = run(a.vcs, a.depth, a.packets, a.mirror)
    print(f"torus:4x4:c2 row 0, {a.vcs} VCs x {a.depth} flits, {a.packets} packets of {PACKET_FLITS} flits per flow, "
          f"{cycles} cycles")
    print("flow (NI -> NI)   direction   flits/cycle   max-min")
    for (s, d), r in zip(flows, rates):
        print(f"{s:>3} -> {d:<3}          {'+x' if s % 2 == 0 else '-x'}          {r:.3f}         0.500")
    print(f"mean {np.mean(rates):.3f}, slowest {min(rates):.3f} (max-min 0.500 for every flow)")
    print("ring link load (flits/cycle over the run): "
          + ", ".join(f"{a}->{b} {v:.2f}" for (a, b), v in sorted(load.items())))


if __name__ == "__main__":
    main()
