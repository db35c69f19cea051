"""Store, or check, every counter of a fixed matrix of flit-level runs (``noc.flit``).

The matrix covers what the kernel's stages do: synthetic traffic (``noc.flit_traffic``,
both methodologies) on meshes, tori, a concentrated mesh and a fat tree, at low, middle
and saturating loads, with 1-flit, 4-flit and mixed packets, the default router and
BookSim2's semantics (iSLIP and separable allocators, its VC classes and random tie
direction, credits over the link, ``wait_for_tail_credit``), virtual cut-through, narrow
links, on/off and hotspot sources; packet lists with priorities (``run_packets``); and
all-reduce co-simulations (``nic.flit_cosim``) with both NIC designs, bulk and packet mode.

For a synthetic-traffic run the file keeps the run's statistics (every ``RunStats``
field, floats exactly), the kernel's counters, each measured packet's creation, injection
and ejection cycles, hops and size (SHA-256, and the latency histogram in full), the
flits carried per link, and a SHA-256 of every field of the network state at the end. A
packet list keeps every packet's injection and ejection cycle and the same state digests;
a co-simulation its total and per-step cycles, per-link bytes and per-transfer times.

    python bench/golden_flit_counters.py --write      # store tests/noc/data/golden_flit_counters.json
    python bench/golden_flit_counters.py              # compare the code with the stored file
    python bench/golden_flit_counters.py --only fast  # just the cases the default suite runs

``tests/noc/test_golden_flit_counters.py`` runs the same comparison (fast cases in the
default suite, the rest marked slow).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT / "tests" / "noc" / "data" / "golden_flit_counters.json"

# State fields that are scratch (rewritten before they are read) or activity bookkeeping
# whose layout may change without changing what the network does: stored, not compared.
SCRATCH_FIELDS = frozenset({
    "arr_links", "arr_n", "cr_links", "cr_n", "r_flits", "r_heads", "r_waiting", "r_wake", "va_wait", "req_in",
    "req_vc", "req_out", "req_prio", "va_pick", "req_sel"})

BOOKSIM = {"vc_allocator": "islip", "sw_allocator": "islip", "vc_class_rule": "booksim", "tie_break": "random",
           "credit_adds_link_latency": True, "vc_release": "tail_credit", "routing_delay_cycles": 1,
           "credit_delay_cycles": 1}
WINDOW = {"warmup_cycles": 300, "measure_cycles": 1500, "drain_limit_cycles": 4000}
BOOKSIM_RUN = {"methodology": "booksim", "sample_period_cycles": 500, "warmup_periods": 2, "max_samples": 6,
               "self_packets": True, "inject_during_drain": True}

# (name, kind, topology, router config, traffic / packets / all-reduce spec, fast)
TRAFFIC = [
    ("mesh4_1f_low", "mesh:4x4", {}, {"rate_packets": 0.02}, True),
    ("mesh4_4f_mid", "mesh:4x4", {"num_vcs": 4}, {"rate_packets": 0.05, "packet_flits": [4]}, True),
    ("torus4_1f_sat", "torus:4x4", {}, {"rate_packets": 0.6}, True),
    ("torus4_mixed_rr", "torus:4x4", {"num_vcs": 4, "vc_depth_flits": 4},
     {"rate_packets": 0.08, "packet_flits": [1, 5, 9], "packet_weights": [3, 1, 1]}, True),
    ("torus4_islip_delays", "torus:4x4", {"allocator": "islip", "routing_delay_cycles": 2, "st_delay_cycles": 1,
                                          "credit_delay_cycles": 2}, {"rate_packets": 0.15, "packet_flits": [2]}, True),
    ("mesh4_vct", "mesh:4x4", {"flow_control": "vct", "vc_depth_flits": 4}, {"rate_packets": 0.1,
                                                                             "packet_flits": [1, 4]}, True),
    ("mesh4_narrow", "mesh:4x4@12", {"flit_bytes": 16}, {"rate_packets": 0.05, "packet_flits": [3]}, True),
    ("torus4_booksim", "torus:4x4", BOOKSIM, {"rate_packets": 0.1, "packet_flits": [4], **BOOKSIM_RUN}, True),
    ("torus4_sep_booksim", "torus:4x4", {**BOOKSIM, "vc_allocator": "separable_input_first",
                                         "sw_allocator": "separable_input_first", "num_vcs": 4},
     {"rate_packets": 0.2, **BOOKSIM_RUN}, True),
    ("fattree_random_hot", "fattree:k4:l2", {**BOOKSIM, "num_vcs": 4},
     {"rate_packets": 0.04, "pattern": "hotspot", "hotspot_nodes": [0, 5], "hotspot_weights": [2, 1],
      **BOOKSIM_RUN}, True),
    ("mesh4c2_onoff", "mesh:4x4:c2", {"num_vcs": 4}, {"rate_packets": 0.05, "injection_process": "on_off",
                                                      "burst_alpha": 0.3, "burst_beta": 0.6}, True),
    ("torus4_arbseed_tornado", "torus:4x4", {"arbiter_seed": 7, "num_vcs": 4}, {"rate_packets": 0.3,
                                                                               "pattern": "tornado"}, True),
    ("mesh8_1f_low", "mesh:8x8", {}, {"rate_packets": 0.02}, False),
    ("mesh8_4f_mid", "mesh:8x8", {"num_vcs": 4}, {"rate_packets": 0.05, "packet_flits": [4]}, False),
    ("torus8_1f_sat", "torus:8x8", {}, {"rate_packets": 0.3}, False),
    ("torus8_booksim_low", "torus:8x8", BOOKSIM, {"rate_packets": 0.02, **BOOKSIM_RUN}, False),
    ("torus8_booksim_4f", "torus:8x8", BOOKSIM, {"rate_packets": 0.05, "packet_flits": [4], **BOOKSIM_RUN}, False),
    ("mesh8_booksim_20f", "mesh:8x8", {**BOOKSIM, "vc_class_rule": "dateline", "tie_break": "plus"},
     {"rate_packets": 0.01, "packet_flits": [20], **BOOKSIM_RUN}, False),
    ("fattree3_booksim", "fattree:k4:l3", {**BOOKSIM, "num_vcs": 4}, {"rate_packets": 0.3, **BOOKSIM_RUN}, False),
    ("mesh8_transpose_vct", "mesh:8x8", {"flow_control": "vct", "num_vcs": 4, "vc_depth_flits": 4},
     {"rate_packets": 0.06, "pattern": "transpose", "packet_flits": [4]}, False),
]
PACKETS = [
    # (name, topology, router config, (packets, horizon, max flits, priorities), fast)
    ("torus4_prio_list", "torus:4x4", {"debug": True}, (600, 800, 12, 4), True),
    ("mesh4c4_list", "mesh:4x4:c4", {"num_vcs": 4, "debug": True}, (800, 600, 9, 1), True),
    ("fattree_list", "fattree:k4:l2", {"num_vcs": 2, "tie_break": "random"}, (500, 500, 6, 3), True),
    ("torus8_prio_list", "torus:8x8", {"num_vcs": 4}, (3000, 2000, 20, 6), False),
]
ALLREDUCE = [
    # (name, topology, algorithm, NIC design, NIC options, size in bytes, fast)
    ("cosim_torus4c4_multitree", "torus:4x4:c4", "multitree", "codesigned", {}, 16 * 1024, True),
    ("cosim_torus4_ring_base", "torus:4x4", "ring", "baseline", {}, 16 * 1024, True),
    ("cosim_mesh4_ring2d_packets", "mesh:4x4", "ring2d", "codesigned", {"flow_control": "packet", "packet_bytes": 256},
     32 * 1024, True),
    ("cosim_fattree_dbtree", "fattree:k4:l2", "dbtree", "baseline", {}, 16 * 1024, True),
    ("cosim_torus8_ring", "torus:8x8", "ring", "codesigned", {}, 256 * 1024, False),
    ("cosim_torus4c4_multitree_1m", "torus:4x4:c4", "multitree", "codesigned", {}, 1024 * 1024, False),
]


def _topology(spec: str):
    """``parse_spec``; ``SPEC@W``: every link W bytes per cycle (narrower than a 16-byte flit)."""
    from noc.topology import parse_spec

    spec, _, width = spec.partition("@")
    topology = parse_spec(spec)
    return topology.with_links(bytes_per_cycle=float(width)) if width else topology


def _sha(*arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(str(a.dtype).encode() + str(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()[:20]


def _state_digests(st) -> dict:
    return {name: _sha(getattr(st, name)) for name in st._fields}


def _stats_row(stats) -> dict:
    out = {}
    for name, value in vars(stats).items():
        if isinstance(value, np.ndarray):
            out[name] = _sha(value)
        elif isinstance(value, np.generic):
            value = value.item()
            out[name] = repr(value) if isinstance(value, float) else value
        elif isinstance(value, float):
            out[name] = repr(value)  # nan and every bit of the float
        else:
            out[name] = value
    return out


def _traffic_case(spec, router: dict, traffic: dict) -> dict:
    import noc.flit_traffic as ft
    from noc.flit import FlitNetworkConfig
    topology = _topology(spec)
    cfg = FlitNetworkConfig(**router)
    tc = ft.TrafficConfig(**{**WINDOW, **traffic})
    captured = []
    original = ft._TrafficRun.__init__

    def capture(self, *args, **kwargs):  # keep the run object, to read its counters afterwards
        original(self, *args, **kwargs)
        captured.append(self)

    ft._TrafficRun.__init__ = capture
    try:
        stats = ft.run_traffic(topology, cfg, tc)
    finally:
        ft._TrafficRun.__init__ = original
    run = captured[-1]
    n = int(run.acc[ft.A_MEASURED])
    created, inj, ej = run.m_created[:n], run.m_inj[:n], run.m_ej[:n]
    ok = (ej >= 0) & (created >= 0)
    lat = (ej - created)[ok]
    return {
        "stats": _stats_row(stats),
        "acc": run.acc.tolist(),
        "counters": run.st.counters.tolist(),
        "link_flits": run.st.link_flits.tolist(),
        "measured": _sha(created, inj, ej, run.m_hops[:n], run.m_flits[:n]),
        "latency_histogram": np.bincount(lat).tolist() if lat.size else [],
        "hops_histogram": np.bincount(run.m_hops[:n][ok]).tolist() if lat.size else [],
        "state": _state_digests(run.st),
    }


def _packets_case(spec, router: dict, load) -> dict:
    from noc.flit import FlitNetworkConfig, run_packets
    topology = _topology(spec)
    n, horizon, max_flits, prios = load
    rng = np.random.default_rng([n, horizon, max_flits, prios])
    e = topology.num_endpoints
    times = np.sort(rng.integers(0, horizon, n))
    src = rng.integers(0, e, n)
    dst = (src + rng.integers(1, e, n)) % e
    flits = rng.integers(1, max_flits, n)
    prio = rng.integers(0, prios, n)
    packets = np.stack([times, src, dst, flits, prio], axis=1)
    inj, ej, st = run_packets(topology, FlitNetworkConfig(**router), packets)
    return {"injected": inj.tolist(), "ejected": ej.tolist(), "counters": st.counters.tolist(),
            "link_flits": st.link_flits.tolist(), "state": _state_digests(st)}


def _allreduce_case(spec, algorithm, design, options: dict, size) -> dict:
    from nic.allreduce import NicConfig, simulate_allreduce
    from nic.collectives import build
    from noc.flit import FlitNetworkConfig
    topology = _topology(spec)
    times: dict = {}
    res = simulate_allreduce(topology, build(topology, algorithm), NicConfig(design=design, **options),
                             FlitNetworkConfig(), size, model="flit", times_out=times)
    return {"total_cycles": repr(res.total_cycles), "step_end_cycles": [repr(x) for x in res.step_end_cycles],
            "link_utilisation": _sha(np.asarray(res.link_utilisation, np.float64)),
            "times": _sha(*(np.asarray(times[k], np.float64) for k in ("start_cycles", "sent_cycles", "arrive_cycles")))}


def cases(only: str = "all") -> dict:
    """name -> (kind, arguments, fast)."""
    out = {}
    for name, spec, router, traffic, fast in TRAFFIC:
        out[name] = ("traffic", (spec, router, traffic), fast)
    for name, spec, router, load, fast in PACKETS:
        out[name] = ("packets", (spec, router, load), fast)
    for name, spec, alg, design, options, size, fast in ALLREDUCE:
        out[name] = ("allreduce", (spec, alg, design, options, size), fast)
    if only == "fast":
        out = {k: v for k, v in out.items() if v[2]}
    return out


def run_case(case) -> dict:
    kind, args, _ = case
    return {"traffic": _traffic_case, "packets": _packets_case, "allreduce": _allreduce_case}[kind](*args)


def differences(got: dict, want: dict) -> list[str]:
    """What differs between a run and its stored figures (state scratch fields excluded)."""
    out = []
    for key, value in want.items():
        if key == "state":
            for field, digest in value.items():
                if field not in SCRATCH_FIELDS and got["state"].get(field) != digest:
                    out.append(f"state.{field}")
        elif got.get(key) != value:
            out.append(key)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help=f"store the figures in {DATA.relative_to(ROOT)}")
    ap.add_argument("--only", choices=("all", "fast"), default="all")
    args = ap.parse_args()
    todo = cases(args.only)
    got = {}
    for name, case in todo.items():
        got[name] = run_case(case)
        print(name, flush=True)
    if args.write:
        DATA.parent.mkdir(parents=True, exist_ok=True)
        DATA.write_text(json.dumps({"command": "python bench/golden_flit_counters.py --write", "cases": got},
                                   indent=1, sort_keys=True) + "\n")
        print(f"wrote {len(got)} cases to {DATA.relative_to(ROOT)}")
        return
    stored = json.loads(DATA.read_text())["cases"]
    bad = {name: differences(fig, stored[name]) for name, fig in got.items()}
    bad = {k: v for k, v in bad.items() if v}
    for name, what in bad.items():
        print(f"DIFFERS {name}: {', '.join(what)}")
    print(f"{len(got) - len(bad)} of {len(got)} cases identical")
    raise SystemExit(1 if bad else 0)


if __name__ == "__main__":
    main()
