"""Speed of the flit-level network (noc.flit) against BookSim2 on the same configurations.

    .venv/bin/python bench/noc_speed.py [--cycles 20000] [--repeats 3]

Cases (issue 4):

* ``torus88``: BookSim2's ``examples/torus88`` — 8x8 torus, dimension-order routing with
  dateline VC classes, 2 VCs x 8 flits, 1-flit packets, uniform random traffic at
  0.15 packets/node/cycle;
* ``mesh88``: 8x8 mesh, DOR, 16 VCs x 8 flits, iSLIP allocators, 1-flit packets, uniform
  random traffic at 0.02, 0.10 and 0.30 packets/node/cycle.

Each case is driven through the co-simulation API (``enqueue_packet`` / ``step`` /
``pop_ejected``) from one Numba loop, after a short warm-up run that compiles the kernels
(and a first ``--warmup`` cycles of the measured run that fill the network, not timed).
Prints simulated cycles per second and flit-hops per second (flits forwarded by a router,
i.e. switch traversals, so one packet of h router-to-router hops counts h + 1 — the way
BookSim's figure of ~0.37 M flit-hops/s at ~7,600 cycles/s works out), the best of
``--repeats`` runs, and the speed-up over the BookSim2 reference figures measured on these
machines (C++, -O3; quoted in issue 4). Target: 10x.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from noc.numba_cache import configure  # noqa: E402

# Before numba is imported: Numba's cache goes to a directory keyed by our sources. Otherwise
# _drive below is cached next to this file, keyed by this file alone, and keeps running the
# step of an older noc/flit.py.
configure()

import numpy as np  # noqa: E402
from numba import njit  # noqa: E402

from noc.flit import FlitNetworkConfig, build_network, enqueue_packet, new_state, pop_ejected, step, stuck  # noqa: E402
from noc.topology import parse_spec  # noqa: E402

# (case, spec, config, rate packets/node/cycle, BookSim2 cycles/s on these machines)
CASES = [
    ("torus88 uniform 0.15", "torus:8x8", dict(num_vcs=2, vc_depth_flits=8), 0.15, 7_600.0),
    ("mesh88 iSLIP 0.02", "mesh:8x8", dict(num_vcs=16, vc_depth_flits=8, allocator="islip"), 0.02, 9_800.0),
    ("mesh88 iSLIP 0.10", "mesh:8x8", dict(num_vcs=16, vc_depth_flits=8, allocator="islip"), 0.10, 3_600.0),
    ("mesh88 iSLIP 0.30", "mesh:8x8", dict(num_vcs=16, vc_depth_flits=8, allocator="islip"), 0.30, 1_060.0),
]


@njit(cache=True)
def _drive(net, st, rate, start, cycles, seed):
    """Bernoulli uniform 1-flit packets for ``cycles`` cycles from cycle ``start``; returns
    (packets delivered, 1 if the watchdog fired)."""
    np.random.seed(seed)
    e = net.num_endpoints
    delivered = 0
    for now in range(start, start + cycles):
        for s in range(e):
            if np.random.random() < rate:
                d = np.random.randint(0, e - 1)
                if d >= s:
                    d += 1
                enqueue_packet(net, st, s, d, 1, 0, 0, now)
        step(net, st, now)
        while True:
            tag, cyc = pop_ejected(st)
            if tag == -1 and cyc == -1:
                break
            delivered += 1
        if stuck(net, st):
            return delivered, 1
    return delivered, 0


def run_case(spec: str, cfg: FlitNetworkConfig, rate: float, warmup: int, cycles: int, seed: int):
    t = parse_spec(spec)
    net = build_network(t, cfg)
    router_out = np.asarray(t.link_src >= t.num_endpoints)  # links a router sends on (switch traversals)
    # room for every packet that can be queued or in flight at once (the NI queues grow
    # without bound past saturation, so size by the whole run)
    st = new_state(net, int(rate * t.num_endpoints * (warmup + cycles) * 1.2) + 4096)
    _drive(net, st, rate, 0, warmup, seed)
    hops0 = int(st.link_flits[router_out].sum())
    t0 = time.perf_counter()
    delivered, dead = _drive(net, st, rate, warmup, cycles, seed + 1)
    wall = time.perf_counter() - t0
    hops = int(st.link_flits[router_out].sum()) - hops0
    if dead:
        raise SystemExit(f"{spec}: the watchdog fired (deadlock) — not a valid speed figure")
    return wall, hops, delivered


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cycles", type=int, default=20_000, help="Timed cycles per case.")
    ap.add_argument("--warmup", type=int, default=2_000, help="Untimed cycles that fill the network first.")
    ap.add_argument("--repeats", type=int, default=3, help="Best of this many runs.")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    t0 = time.perf_counter()
    run_case("mesh:2x2", FlitNetworkConfig(), 0.1, 10, 10, 0)  # compile (or load from the cache)
    print(f"numba warm-up (compile or cache load): {time.perf_counter() - t0:.1f} s")
    print(f"{'case':<22}{'cycles/s':>12}{'flit-hops/s':>14}{'BookSim2 c/s':>14}{'speed-up':>10}{'accepted':>10}")
    for name, spec, kw, rate, booksim in CASES:
        cfg = FlitNetworkConfig(**kw)
        best = None
        for _ in range(args.repeats):
            wall, hops, delivered = run_case(spec, cfg, rate, args.warmup, args.cycles, args.seed)
            if best is None or wall < best[0]:
                best = (wall, hops, delivered)
        wall, hops, delivered = best
        cps = args.cycles / wall
        accepted = delivered / (args.cycles * 64)
        print(f"{name:<22}{cps:>12,.0f}{hops / wall:>14,.0f}{booksim:>14,.0f}{cps / booksim:>9.1f}x{accepted:>10.3f}",
              flush=True)
    print("accepted = packets delivered per node per cycle in the timed window (equals the offered rate below saturation)")


if __name__ == "__main__":
    main()
