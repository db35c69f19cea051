"""Where a flit-level run's time goes, stage by stage.

    .venv/bin/python bench/flit_stages.py [--rounds 3] [--only NAME ...]

Runs the same simulations as the library, through copies of its driver loops
(``noc.flit_traffic._advance``, ``nic.flit_cosim_stages.cosim``) that read the CPU's cycle
counter (``llvm.readcyclecounter``) around each stage of ``noc.flit.step`` and of the
driver: the synthetic source's trials (a draw per NI per cycle), link arrivals, credit
arrivals, the routers (route computation, VC and switch allocation, traversal), NI
injection, the ejection log, and in the co-simulation the NICs (schedulers, packetisers).
The loops call the library's own stage functions, so they simulate exactly what the
library does: each case's result is checked against an untimed run of the library.
Counter readings cost a few nanoseconds each; the shares are of the instrumented run.
Shares are printed per case (median over the rounds), with ns per simulated cycle.

``--stretches`` instead counts, in all-reduce co-simulations, the cycles an exact
fast-forward could skip: cycles that only stream (the same links carry one flit each as in
the cycle before, no head in route computation or VC allocation, no packet queued or
delivered), and how long their stretches are.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core.typing import signature
from numba.extending import intrinsic

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import nic.flit_cosim as fc  # noqa: E402
import nic.flit_cosim_stages as cs  # noqa: E402
import noc.flit as fl  # noqa: E402
import noc.flit_traffic as ft  # noqa: E402
from noc.flit_pipeline import FlitCompiler  # noqa: E402


@intrinsic
def _tsc(typingctx):
    """The CPU's cycle counter (``llvm.readcyclecounter``)."""
    def codegen(context, builder, sig, args):
        fn = ir.Function(builder.module, ir.FunctionType(ir.IntType(64), []), name="llvm.readcyclecounter") \
            if "llvm.readcyclecounter" not in builder.module.globals else builder.module.globals["llvm.readcyclecounter"]
        return builder.call(fn, [])
    return signature(types.int64), codegen


TRAFFIC_STAGES = ("source trials", "link arrivals", "credit arrivals", "routers", "NI injection", "ejection log + rest")
COSIM_STAGES = ("NICs", "packetisers", "link arrivals", "credit arrivals", "routers", "NI injection",
                "ejections + rest")


@njit(_nrt=False, error_model="numpy", pipeline_class=FlitCompiler)
def _timed_step(net, st, now, tm, k):
    """``noc.flit.step`` with the counter read between its stages (into tm[k:k + 4])."""
    moved_before = st.counters[fl.C_MOVED]
    slot = now % net.ring
    cslot = now % net.cring
    t0 = _tsc()
    fl._link_arrivals(net, st, now, slot)
    t1 = _tsc()
    fl._credit_arrivals(net, st, cslot)
    t2 = _tsc()
    fl._routers(net, st, slot, cslot, now)
    t3 = _tsc()
    fl._inject(net, st, now, slot)
    t4 = _tsc()
    tm[k] += t1 - t0
    tm[k + 1] += t2 - t1
    tm[k + 2] += t3 - t2
    tm[k + 3] += t4 - t3
    if net.debug:
        fl._check_invariants(net, st)
    if st.counters[fl.C_MOVED] == moved_before and st.counters[fl.C_IN_FLIGHT] > 0:
        st.counters[fl.C_IDLE] += 1
    else:
        st.counters[fl.C_IDLE] = 0
    return t4


TM = np.zeros(8, np.int64)


@njit(error_model="numpy", _nrt=False, pipeline_class=FlitCompiler)
def _timed_advance(net, st, now, cycles, rate, fixed_dst, hotspot, hot_nodes, hot_cdf, sizes, cdf, self_packets, burst,
                   on, generate, record, count_all, stop_when_drained, hops, m_created, m_inj, m_ej, m_hops, m_flits,
                   acc, rs, tm):
    """``noc.flit_traffic._advance``, timed: tm[0] trials, tm[1:5] step's stages, tm[5] the rest."""
    e = fixed_dst.shape[0]
    ft.start_trials(rs, np.int64(np.ceil(rate * 134217728.0)))
    for _ in range(cycles):
        if stop_when_drained and acc[ft.A_OUTSTANDING] == 0:
            break
        t0 = _tsc()
        if generate:
            ft._generate(net, st, now, e, rate, rs, fixed_dst, hotspot, hot_nodes, hot_cdf, sizes, cdf, self_packets,
                         burst, on, record, hops, m_created, m_hops, m_flits, acc)
        t1 = _tsc()
        tm[0] += t1 - t0
        t4 = _timed_step(net, st, now, tm, 1)
        while True:
            tag, cyc = fl.pop_ejected(st)
            if tag == -1 and cyc == -1:
                break
            if tag >= 0:
                m_ej[tag] = cyc
                m_inj[tag] = st.ej_inj[(st.ej_r[0] - 1) % st.ej_inj.shape[0]]
                acc[ft.A_OUTSTANDING] -= 1
                acc[ft.A_LAT_SUM] += cyc - m_created[tag]
                acc[ft.A_LAT_N] += 1
            elif count_all:
                acc[ft.A_LAT_SUM] += cyc - (-2 - tag)
                acc[ft.A_LAT_N] += 1
        now += 1
        tm[5] += _tsc() - t4
        tm[7] += 1
        if fl.stuck(net, st):
            return now, 1
    return now, 0


def _traffic_advance(*args):
    return _timed_advance(*args, TM)


@njit(_nrt=False)
def _timed_cosim(net, st, tr, nodes, prm, sch, nis, rx, wait, times, tm):
    """``nic.flit_cosim_stages.cosim``, timed: tm[0] NICs, tm[1] packetisers, tm[2:6] step's
    stages, tm[6] ejections and the rest."""
    n_nodes = nodes.node_eps.shape[0]
    n_t = tr.src_node.shape[0]
    now = np.int64(0)
    while now < prm.max_cycles:
        t0 = _tsc()
        for v in range(n_nodes):
            cs._summed_receives(tr, nodes, rx, times, v, now)
            if prm.codesigned:
                cs._codesigned_edge(tr, nodes, sch, nis, rx, times, v, now)
            else:
                cs._send_when_ready(tr, nodes, prm, nis, wait, times, v, now)
            nis.done_next[v] = 0
        t1 = _tsc()
        for ep in range(nodes.ep_node.shape[0]):
            if not cs._packetise(net, st, tr, nodes, prm, nis, wait, times, ep, now):
                return now, cs.OUT_OF_SLOTS
        t2 = _tsc()
        tm[0] += t1 - t0
        tm[1] += t2 - t1
        t4 = _timed_step(net, st, now, tm, 2)
        cs._ejections(st, tr, nodes, prm, rx, wait, times)
        if fl.stuck(net, st):
            return now, cs.STUCK
        now += 1
        tm[6] += _tsc() - t4
        tm[7] += 1
        if times.counts[cs.ARRIVED] == n_t:
            if not prm.codesigned or cs._schedulers_done(sch) or now > prm.max_cycles:
                break
    return now, times.counts[cs.ERRORS]


def _cosim(*args):
    return _timed_cosim(*args[:10], TM)  # stepping every cycle: the fast-forward's scratch (args[10]) unused


# --stretches: ST[0] cycles, ST[1] cycles that only stream, ST[2] stretches of such cycles,
# ST[3] cycles in stretches of at least MIN_STRETCH cycles, ST[4] the longest stretch
ST = np.zeros(5, np.int64)
MIN_STRETCH = 64


@njit(_nrt=False)
def _stretch_cosim(net, st, tr, nodes, prm, sch, nis, rx, wait, times, sm, prev, cur):
    """``nic.flit_cosim_stages.cosim``, counting the cycles a fast-forward could skip: a cycle
    *only streams* when it moves a flit on exactly the links the previous cycle did (one
    flit each), no head is in route computation or VC allocation before or after it, and no
    packet enters a source queue or leaves the network (no NIC event follows)."""
    n_nodes = nodes.node_eps.shape[0]
    n_t = tr.src_node.shape[0]
    now = np.int64(0)
    run = 0
    while now < prm.max_cycles:
        for v in range(n_nodes):
            cs._summed_receives(tr, nodes, rx, times, v, now)
            if prm.codesigned:
                cs._codesigned_edge(tr, nodes, sch, nis, rx, times, v, now)
            else:
                cs._send_when_ready(tr, nodes, prm, nis, wait, times, v, now)
            nis.done_next[v] = 0
        free_before = st.free_top[0]
        for ep in range(nodes.ep_node.shape[0]):
            if not cs._packetise(net, st, tr, nodes, prm, nis, wait, times, ep, now):
                return now, cs.OUT_OF_SLOTS
        quiet = st.free_top[0] == free_before
        heads = 0
        for r in range(st.r_heads.shape[0]):
            heads += st.r_heads[r]
        for l in range(cur.shape[0]):
            cur[l] = st.link_flits[l]
        fl.step(net, st, now)
        for r in range(st.r_heads.shape[0]):
            heads += st.r_heads[r]
        same = quiet and heads == 0 and st.ej_r[0] == st.ej_w[0]
        for l in range(cur.shape[0]):
            d = st.link_flits[l] - cur[l]
            if d != prev[l]:
                same = False
            prev[l] = d
        cs._ejections(st, tr, nodes, prm, rx, wait, times)
        if fl.stuck(net, st):
            return now, cs.STUCK
        sm[0] += 1
        if same:
            sm[1] += 1
            run += 1
        if not same or now + 1 >= prm.max_cycles:
            if run > 0:
                sm[2] += 1
                if run >= MIN_STRETCH:
                    sm[3] += run
                if run > sm[4]:
                    sm[4] = run
            run = 0
        now += 1
        if times.counts[cs.ARRIVED] == n_t:
            if not prm.codesigned or cs._schedulers_done(sch) or now > prm.max_cycles:
                break
    if run > 0:
        sm[2] += 1
        if run >= MIN_STRETCH:
            sm[3] += run
        if run > sm[4]:
            sm[4] = run
    return now, times.counts[cs.ERRORS]


def _stretches(net, st, *args):
    nl = st.link_flits.shape[0]
    return _stretch_cosim(net, st, *args[:8], ST, np.full(nl, -1, np.int64), np.zeros(nl, np.int64))


def traffic_case(spec, router, traffic):
    from noc.flit import FlitNetworkConfig
    from noc.topology import parse_spec

    def run():
        return ft.run_traffic(parse_spec(spec), FlitNetworkConfig(**router), ft.TrafficConfig(**traffic))
    return run, "_advance", ft, _traffic_advance, TRAFFIC_STAGES


def cosim_case(spec, alg, design, size):
    from nic.allreduce import NicConfig, simulate_allreduce
    from nic.collectives import build
    from noc.flit import FlitNetworkConfig
    from noc.topology import parse_spec

    def run():
        t = parse_spec(spec)
        return simulate_allreduce(t, build(t, alg), NicConfig(design=design), FlitNetworkConfig(), size,
                                  model="flit").total_cycles
    return run, "cosim", fc, _cosim, COSIM_STAGES


BOOKSIM = dict(vc_allocator="islip", sw_allocator="islip", vc_class_rule="booksim", tie_break="random",
               credit_adds_link_latency=True, vc_release="tail_credit", routing_delay_cycles=1)
BK_RUN = dict(methodology="booksim", self_packets=True, inject_during_drain=True)
CASES = [
    ("torus:8x8 1-flit 0.02 (BookSim2 semantics)", traffic_case("torus:8x8", BOOKSIM, dict(rate_packets=0.02, **BK_RUN))),
    ("torus:8x8 4-flit 0.02/4 (BookSim2 semantics)",
     traffic_case("torus:8x8", BOOKSIM, dict(rate_packets=0.005, packet_flits=[4], **BK_RUN))),
    ("mesh:8x8 1-flit 0.1 (BookSim2 semantics)",
     traffic_case("mesh:8x8", {**BOOKSIM, "vc_class_rule": "dateline", "tie_break": "plus"},
                  dict(rate_packets=0.1, **BK_RUN))),
    ("torus:8x8 1-flit 0.15 (BookSim2 semantics)", traffic_case("torus:8x8", BOOKSIM, dict(rate_packets=0.15, **BK_RUN))),
    ("all-reduce torus:4x4:c4 multitree codesigned 1 MiB", cosim_case("torus:4x4:c4", "multitree", "codesigned",
                                                                       1 << 20)),
    ("all-reduce torus:4x4:c4 ring baseline 1 MiB", cosim_case("torus:4x4:c4", "ring", "baseline", 1 << 20)),
]


STRETCH_CASES = [
    ("torus:4x4:c4 multitree codesigned 1 MiB", cosim_case("torus:4x4:c4", "multitree", "codesigned", 1 << 20)),
    ("torus:4x4:c4 ring codesigned 4 MiB", cosim_case("torus:4x4:c4", "ring", "codesigned", 4 << 20)),
    ("torus:4x4:c4 multitree baseline 1 MiB", cosim_case("torus:4x4:c4", "multitree", "baseline", 1 << 20)),
    ("torus:4x4:c4 ring2d codesigned 4 MiB", cosim_case("torus:4x4:c4", "ring2d", "codesigned", 4 << 20)),
]


def stretches() -> None:
    """How much of an all-reduce co-simulation a fast-forward could skip (_stretch_cosim)."""
    print(f"cycles that only stream (the same links each carry one flit as in the cycle before, no head in "
          f"route computation or VC allocation, no packet queued or delivered), and those in stretches of at "
          f"least {MIN_STRETCH} cycles")
    for name, (run, attr, module, _, _) in STRETCH_CASES:
        want = run()
        original = getattr(module, attr)
        setattr(module, attr, _stretches)
        ST[:] = 0
        try:
            got = run()
        finally:
            setattr(module, attr, original)
        if repr(got) != repr(want):
            raise SystemExit(f"{name}: the counting loop simulated something else: {got!r} != {want!r}")
        c, s1, n, long_, top = (int(x) for x in ST)
        print(f"  {name}: {c:,} cycles; streaming {100 * s1 / c:.1f} % in {n:,} stretches (mean "
              f"{s1 / max(n, 1):.1f}, longest {top:,}); in stretches >= {MIN_STRETCH}: {100 * long_ / c:.1f} %")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--stretches", action="store_true",
                    help="instead: the share of co-simulation cycles a fast-forward could skip")
    ap.add_argument("--only", nargs="*", default=[], help="run only the cases whose names contain one of these")
    args = ap.parse_args()
    if args.stretches:
        stretches()
        return
    print(f"{args.rounds} rounds per case; share of the run's counter cycles per stage (median), ns per simulated cycle")
    for name, (run, attr, module, timed, stages) in CASES:
        if args.only and not any(o in name for o in args.only):
            continue
        want = run()  # untimed, and compiles the library's kernels
        original = getattr(module, attr)
        setattr(module, attr, timed)
        shares, ns = [], []
        try:
            for _ in range(args.rounds):
                TM[:] = 0
                t0 = time.perf_counter()
                got = run()
                wall = time.perf_counter() - t0
                if repr(got) != repr(want):
                    raise SystemExit(f"{name}: the timed loop simulated something else: {got!r} != {want!r}")
                total = TM[:len(stages)].sum()
                shares.append(TM[:len(stages)] / total)
                ns.append(wall / TM[7] * 1e9)
        finally:
            setattr(module, attr, original)
        med = np.median(np.array(shares), axis=0)
        print(f"\n{name}: {int(TM[7]):,} cycles, {statistics.median(ns):,.0f} ns/cycle "
              f"({min(ns):,.0f}..{max(ns):,.0f}) instrumented")
        for stage, share in zip(stages, med):
            print(f"  {stage:<22}{100 * share:6.1f} %")


if __name__ == "__main__":
    main()
