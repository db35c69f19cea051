"""Exact per-run figures of the message-level model, stored so a change of its code can be
checked to the cycle against the code that made them.

Runs a fixed matrix through the public API (:func:`nic.allreduce.simulate_allreduce`,
``model="message"``) and records, per run, the total cycles, the end cycle of every step,
the largest reduction-unit busy count and a SHA-256 digest of every transfer's start,
sent, arrival and usable times (float64 bytes, schedule order):

* ``calibration``: the calibration matrix (:func:`nic.calibration.cases`, 4 VCs x 32 flits)
  at 32 KiB and 1 MiB;
* ``main``: ring, 2D ring, double binary tree and MultiTree with the co-designed and the
  baseline NIC on ``torus:4x4:c4`` at 1 MiB, 16 MiB and 64 MiB, and MultiTree 64 MiB on
  ``torus:8x8:c4`` (bench/allreduce_speed.py's runs);
* ``options``: the NIC options (per-packet co-designed, chunk and stream reduction, a
  transmit queue) on each router kind (fluid, one VC per class, 4 VCs, iSLIP);
* ``paper``: the MultiTree paper's runs (:mod:`hw_models.paper`, isca2021 presets) at the
  sizes of ``bench/data/multitree_reference.csv`` up to 1 MiB, as bench/multitree_compare.py
  sets them up, at message level (the packet-mode runs, which the paper runs on virtual
  cut-through routers, on the same routers with wormhole flow control: the message model
  represents wormhole routers only);
* ``training``: the communication costs of the training tables
  (:meth:`hw_models.training.comm.NicComm.from_config` on the isca2021 preset, ring and
  MultiTree) at a few gradient sizes.

    python bench/golden_cycles.py                  # writes tests/nic/data/golden_message_cycles.json
    python bench/golden_cycles.py --check          # compares the current code against it

``tests/nic/test_golden_cycles.py`` runs the same comparison (a subset by default, the
whole matrix with ``-m slow``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT / "tests" / "nic" / "data" / "golden_message_cycles.json"
COMMAND = "python bench/golden_cycles.py"

MAIN_ALGORITHMS = ("ring", "ring2d", "dbtree", "multitree")
MAIN_SIZES = (1 << 20, 16 << 20, 64 << 20)
PAPER_MAX_BYTES = 1 << 20
TRAINING_SIZES = (1 << 16, 1 << 20, 25 << 20)


def _nics():
    from nic.allreduce import NicConfig

    return {
        "packet": NicConfig(flow_control="packet"),
        "chunk-reduction": NicConfig(reduction="chunk", reduce_elements_per_cycle=8.0, reduce_latency_cycles=3),
        "stream-reduction": NicConfig(design="baseline", reduction="stream", reduce_elements_per_cycle=4.0),
        "tx-queue": NicConfig(tx_buffer_flits=64),
    }


def _networks():
    from noc.flit import FlitNetworkConfig

    return {
        "fluid": None,
        "default": FlitNetworkConfig(),
        "4vcs": FlitNetworkConfig(num_vcs=4, vc_depth_flits=32),
        "islip": FlitNetworkConfig(num_vcs=4, sw_allocator="islip", routing_delay_cycles=1),
    }


def runs():
    """(group, name, thunk) of every run; a thunk returns (topology, schedule, nic, network, size)."""
    from nic import calibration
    from nic.allreduce import NicConfig
    from nic.collectives import build
    from noc.flit import FlitNetworkConfig
    from noc.topology import parse_spec

    topo = {}
    sched = {}

    def setup(spec, algorithm):
        if spec not in topo:
            topo[spec] = parse_spec(spec)
        if (spec, algorithm) not in sched:
            sched[spec, algorithm] = build(topo[spec], algorithm)
        return topo[spec], sched[spec, algorithm]

    cal_net = FlitNetworkConfig(num_vcs=4, vc_depth_flits=32)
    for size in (32 << 10, 1 << 20):
        for spec, algorithm, design in calibration.cases():
            yield ("calibration", f"{spec} {algorithm} {design} {size}",
                   lambda spec=spec, algorithm=algorithm, design=design, size=size:
                   (*setup(spec, algorithm), NicConfig(design=design), cal_net, size))
    for size in MAIN_SIZES:
        for algorithm in MAIN_ALGORITHMS:
            for design in ("codesigned", "baseline"):
                yield ("main", f"torus:4x4:c4 {algorithm} {design} {size}",
                       lambda algorithm=algorithm, design=design, size=size:
                       (*setup("torus:4x4:c4", algorithm), NicConfig(design=design), FlitNetworkConfig(), size))
    yield ("main", f"torus:8x8:c4 multitree codesigned {64 << 20}",
           lambda: (*setup("torus:8x8:c4", "multitree"), NicConfig(), FlitNetworkConfig(), 64 << 20))
    for spec, algorithm in (("torus:4x4:c4", "multitree"), ("mesh:4x4", "dbtree"), ("fattree:k4:l2", "halving_doubling"),
                            ("torus:4x4", "ring2d")):
        for nic_name, nic in _nics().items():
            for net_name, net in _networks().items():
                yield ("options", f"{spec} {algorithm} {nic_name} {net_name} {1 << 20}",
                       lambda spec=spec, algorithm=algorithm, nic=nic, net=net:
                       (*setup(spec, algorithm), nic, net, 1 << 20))
    yield from _paper_runs()
    yield from _training_runs()


def _paper_runs():
    import csv

    from bench.multitree_compare import our_run_name

    with open(ROOT / "bench" / "data" / "multitree_reference.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["status"] == "ok" and int(r["size_bytes"]) <= PAPER_MAX_BYTES]
    seen = set()
    cache = {}

    def setup(topology, run, size):
        from hw_models.paper import paper_setup

        if (topology, run) not in cache:
            t, schedule, nic, router = paper_setup(topology, run)
            if router.flow_control == "vct":  # the message model represents wormhole routers only
                router = router.model_copy(update={"flow_control": "wormhole"})
            cache[topology, run] = t, schedule, nic, router
        return (*cache[topology, run], size)

    for r in rows:
        key = (r["topology"], our_run_name(r["variant"]), int(r["size_bytes"]))
        if key in seen:
            continue
        seen.add(key)
        yield "paper", " ".join(map(str, key)), lambda key=key: setup(*key)


def _training_runs():
    from hw_models.training.comm import NicComm

    cache = {}

    def setup(algorithm, size):
        if algorithm not in cache:
            cache[algorithm] = NicComm.from_config(preset="isca2021", algorithm=algorithm)
        c = cache[algorithm]
        return c.topology, c.schedule, c.nic, c.network, c.sim_bytes(size)

    for algorithm in ("ring", "multitree"):
        for size in TRAINING_SIZES:
            yield "training", f"isca2021 {algorithm} {size}", lambda algorithm=algorithm, size=size: setup(algorithm, size)


def figures(topology, schedule, nic, network, size) -> dict:
    """The exact figures of one message-level run."""
    from nic.allreduce import simulate_allreduce

    times: dict = {}
    r = simulate_allreduce(topology, schedule, nic, network, int(size), model="message", times_out=times)
    h = hashlib.sha256()
    for name in ("start_cycles", "sent_cycles", "arrive_cycles"):
        h.update(np.ascontiguousarray(times[name], np.float64).tobytes())
    return {"transfers": int(len(times["start_cycles"])), "total_cycles": r.total_cycles,
            "step_end_cycles": list(r.step_end_cycles),
            "reduce_busy_cycles_max": r.extra.get("reduce_busy_cycles_max"), "times_sha256": h.hexdigest()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare against the stored figures instead of writing them")
    ap.add_argument("--groups", default="", help="comma-separated groups (default: all)")
    a = ap.parse_args(argv)
    groups = set(filter(None, a.groups.split(",")))
    stored = json.loads(DATA.read_text())["runs"] if a.check else {}
    out = {}
    bad = 0
    t0 = time.perf_counter()
    for group, name, thunk in runs():
        if groups and group not in groups:
            continue
        key = f"{group}: {name}"
        f = figures(*thunk())
        out[key] = f
        if a.check:
            same = stored.get(key) == f
            bad += not same
            if not same:
                print(f"DIFFERS {key}: stored {stored.get(key)}, now {f}", flush=True)
        print(f"{key}: {f['total_cycles']:,.0f} cycles ({time.perf_counter() - t0:.0f} s)", flush=True)
    if a.check:
        print(f"{len(out)} runs, {bad} differ")
        return 1 if bad else 0
    DATA.parent.mkdir(parents=True, exist_ok=True)
    DATA.write_text(json.dumps({"command": COMMAND, "runs": out}, indent=1) + "\n")
    print(f"{len(out)} runs written to {DATA.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
