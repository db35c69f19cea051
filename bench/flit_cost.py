"""What a flit-level run costs per unit of work, next to the figures hw_models.estimate uses.

    .venv/bin/python bench/flit_cost.py

Prints, after a first untimed run that loads or compiles the kernels:

* all-reduce co-simulations (``simulate_allreduce(model="flit")``): wall seconds per
  flit-hop (flits on the wire times the links of their routes, NI links included;
  ``hw_models.estimate.allreduce_flit_hops``) over several topologies, algorithms, NIC
  designs and sizes, and the estimate's figure (``SECONDS_PER_FLIT_HOP``);
* synthetic traffic (``run_traffic``): wall seconds per link-cycle at light and heavy load,
  and the estimate's figure (``SECONDS_PER_LINK_CYCLE``).

The estimate is meant to err long: its figures should sit near the top of what this prints
on the machine the project runs on (the figures in docs/allreduce.md and docs/noc.md were
taken on a 2-core machine with other work running).
"""

from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from hw_models.estimate import SECONDS_PER_FLIT_HOP, SECONDS_PER_LINK_CYCLE, allreduce_flit_hops  # noqa: E402
from nic.allreduce import NicConfig, simulate_allreduce  # noqa: E402
from nic.collectives import build  # noqa: E402
from noc.flit import FlitNetworkConfig  # noqa: E402
from noc.flit_traffic import TrafficConfig, run_traffic  # noqa: E402
from noc.routing import route  # noqa: E402
from noc.topology import parse_spec  # noqa: E402

ALLREDUCE = [("torus:4x4", "ring", "codesigned"), ("torus:4x4:c4", "multitree", "codesigned"),
             ("torus:4x4", "dbtree", "baseline"), ("torus:8x8", "ring", "codesigned"),
             ("mesh:4x4", "ring2d", "baseline"), ("fattree:k4:l2", "ring", "codesigned")]
TRAFFIC = [("mesh:4x4", 0.01, [1]), ("mesh:4x4", 0.5, [4]), ("torus:8x8", 0.01, [1]), ("torus:8x8", 0.5, [4]),
           ("mesh:8x8:c4", 0.1, [4])]


def main() -> None:
    net = FlitNetworkConfig()
    t = parse_spec("ring:4")
    for design in ("codesigned", "baseline"):  # load or compile the kernels
        simulate_allreduce(t, build(t, "ring"), NicConfig(design=design), net, 4096, model="flit")
    run_traffic(parse_spec("mesh:2x2"), net, TrafficConfig(warmup_cycles=10, measure_cycles=50))
    print(f"all-reduce, flit level (estimate: {SECONDS_PER_FLIT_HOP * 1e9:.0f} ns per flit-hop)")
    for spec, alg, design in ALLREDUCE:
        t = parse_spec(spec)
        routes, schedule, nic = route(t, "auto"), build(t, alg), NicConfig(design=design)
        for size in (1 << 18, 1 << 20, 1 << 22):
            hops = allreduce_flit_hops(t, routes, schedule, nic, size)
            t0 = time.perf_counter()
            simulate_allreduce(t, schedule, nic, net, size, model="flit")
            dt = time.perf_counter() - t0
            print(f"  {spec:14s} {alg:10s} {design:10s} {size >> 10:>6d} KiB  {hops:10.3g} flit-hops  {dt:6.2f} s  "
                  f"{dt / hops * 1e9:6.1f} ns/flit-hop", flush=True)
    print(f"synthetic traffic (estimate: {SECONDS_PER_LINK_CYCLE * 1e9:.0f} ns per link-cycle)")
    net4 = FlitNetworkConfig(num_vcs=4)
    for spec, rate, flits in TRAFFIC:
        t = parse_spec(spec)
        tr = TrafficConfig(rate_packets=rate, packet_flits=flits, warmup_cycles=1000, measure_cycles=5000,
                           drain_limit_cycles=5000)
        t0 = time.perf_counter()
        st = run_traffic(t, net4, tr)
        dt = time.perf_counter() - t0
        print(f"  {spec:12s} {rate:4g} packets/NI/cycle of {flits[0]} flit(s)  {st.cycles:6d} cycles x {t.num_links} links  "
              f"{dt:6.2f} s  {dt / (st.cycles * t.num_links) * 1e9:6.1f} ns/link-cycle", flush=True)


if __name__ == "__main__":
    import argparse

    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()  # --help; no options
    main()
